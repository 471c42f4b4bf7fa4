package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/snapshot"
)

// expiryFlags are --drop-expired-ttl-at and --ttl, for commands that copy
// state.
type expiryFlags struct {
	at  string
	ttl []string
}

const expiryHelp = `--drop-expired-ttl-at TIME leaves out the TTL'd entries expired at TIME (RFC 3339, such
as 2026-12-01T12:00:00Z, or Unix milliseconds). A Flink snapshot records only each
value's last-access time, not the state's time to live: give it with --ttl STATE=DURATION
(as 24h or 90m; repeatable); Flink's rule applies: expired when last access + TTL <= TIME.
`

func (x *expiryFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&x.at, "drop-expired-ttl-at", "", "leave out TTL'd entries expired at this time (RFC 3339 or Unix milliseconds)")
	f.StringArrayVar(&x.ttl, "ttl", nil, "STATE=DURATION: the time to live of a TTL'd state whose snapshot records none (Flink), for --drop-expired-ttl-at (repeatable)")
}

// expiry is what the flags ask for; nil without --drop-expired-ttl-at.
func (x *expiryFlags) expiry() (*snapshot.Expiry, error) {
	if x.at == "" {
		if len(x.ttl) > 0 {
			return nil, usageErrorf("--ttl needs --drop-expired-ttl-at")
		}
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339Nano, x.at)
	if err != nil {
		ms, merr := strconv.ParseInt(x.at, 10, 64)
		if merr != nil {
			return nil, usageErrorf("--drop-expired-ttl-at wants RFC 3339 (2026-12-01T12:00:00Z) or Unix milliseconds, not %q", x.at)
		}
		at = time.UnixMilli(ms)
	}
	e := &snapshot.Expiry{At: at, TTL: map[string]time.Duration{}}
	for _, spec := range x.ttl {
		name, d, ok := strings.Cut(spec, "=")
		ttl, err := time.ParseDuration(d)
		if !ok || name == "" || err != nil || ttl <= 0 {
			return nil, usageErrorf("--ttl wants STATE=DURATION with a positive duration such as 24h, not %q", spec)
		}
		e.TTL[name] = ttl
	}
	return e, nil
}
