package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
)

// sourceFlags are how every command that reads a snapshot is told where
// its files are: --path-map for absolute paths a Flink checkpoint records.
type sourceFlags struct {
	pathMap        []string
	skipUnreadable bool
	flinkVersion   string
}

// addFlinkVersion adds --flink-version, for commands that write snapshots.
func (s *sourceFlags) addFlinkVersion(c *cobra.Command) {
	c.Flags().StringVar(&s.flinkVersion, "flink-version", "", "X.Y: write a Flink savepoint that this Flink version restores, or refuse (exit 4) state it would not: _metadata "+flink.MetadataVersions()+
		"; from the other major version no Kryo state, and only serializers stateutil checked (see docs/flink.md: \"Writing Flink savepoints\"); default: the source's version, 3 written as 4")
}

// readerVersion is --flink-version, checked before anything is read.
func (s *sourceFlags) readerVersion() (string, error) {
	if s.flinkVersion != "" {
		if _, err := flink.MetadataVersionFor(s.flinkVersion); err != nil {
			return "", usageErrorf("--flink-version: %v", err)
		}
	}
	return s.flinkVersion, nil
}

func (s *sourceFlags) add(c *cobra.Command) {
	c.Flags().StringArrayVar(&s.pathMap, "path-map", nil, "OLD=NEW: read recorded absolute state paths starting with OLD under NEW (a Flink checkpoint moved from where it was written; file:, hdfs://, s3://, gs://, abfss://, wasbs:// or plain paths; repeatable, longest OLD wins)")
}

// addSkip adds --skip-unreadable, for commands that copy or compare state.
func (s *sourceFlags) addSkip(c *cobra.Command) {
	c.Flags().BoolVar(&s.skipUnreadable, "skip-unreadable", false, "drop state the source has but stateutil cannot read (listed on stderr) instead of refusing it (exit 4)")
}

// warnDropped lists on w the unreadable state a command left out.
func warnDropped(w io.Writer, dropped []snapshot.UnreadablePart) {
	for _, d := range dropped {
		fmt.Fprintf(w, "stateutil: warning: dropped unreadable %s\n", d)
	}
}

// pathMaps turns --path-map OLD=NEW flags into a map.
func (s *sourceFlags) pathMaps() (map[string]string, error) {
	var out map[string]string
	for _, m := range s.pathMap {
		old, nw, ok := strings.Cut(m, "=")
		if !ok || old == "" || nw == "" {
			return nil, usageErrorf("--path-map %q: want OLD=NEW", m)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[old] = nw
	}
	return out, nil
}

// request is a copy's request with what the flags say of its source: the
// path maps, the Flink version to write for, whether to drop unreadable
// state; and, where the command has them, what --drop-expired-ttl-at drops.
func (s *sourceFlags) request(src string, expiry *expiryFlags) (migrate.Request, error) {
	pathMap, err := s.pathMaps()
	if err != nil {
		return migrate.Request{}, err
	}
	readerVersion, err := s.readerVersion()
	if err != nil {
		return migrate.Request{}, err
	}
	req := migrate.Request{Source: src, PathMap: pathMap, ReaderVersion: readerVersion, SkipUnreadable: s.skipUnreadable}
	if expiry != nil {
		req.DropExpired, err = expiry.expiry()
	}
	return req, err
}

// open opens the snapshot at location as the flags ask.
func (s *sourceFlags) open(ctx context.Context, e *env, location string) (snapshot.Reader, error) {
	opts, err := s.openOptions()
	if err != nil {
		return nil, err
	}
	return e.reg.Open(ctx, location, opts)
}

// openOptions are the snapshot open options the flags ask for.
func (s *sourceFlags) openOptions() (snapshot.OpenOptions, error) {
	m, err := s.pathMaps()
	return snapshot.OpenOptions{PathMap: m}, err
}
