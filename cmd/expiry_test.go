package cmd

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// dumpKeys is `stateutil dump SNAP` as (state, key, value, expiry) lines,
// without what depends on the clock (ttl.now, ttl.expired).
func dumpKeys(t *testing.T, snap string, args ...string) []string {
	t.Helper()
	out := mustRun(t, append([]string{"dump", snap}, args...)...)
	var lines []string
	for l := range strings.Lines(out) {
		var d struct {
			Operator, State string
			Key, Value      json.RawMessage
			TTL             *struct {
				ExpiresAt string `json:"expires_at"`
			}
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("dump line %q: %v", l, err)
		}
		exp := ""
		if d.TTL != nil {
			exp = d.TTL.ExpiresAt
		}
		lines = append(lines, strings.Join([]string{d.Operator, d.State, string(d.Key), string(d.Value), exp}, " "))
	}
	slices.Sort(lines)
	return lines
}

// The generated snapshot's "recent" list expires about an hour after
// 2026-01-02T03:04:05Z, its "by-source" map about a day after: a cut in
// between leaves out all of the one and none of the other.
func TestDropExpiredTTL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.dump")
	mustRun(t, "generate", "--format", "memory", "--output", src)
	all := dumpKeys(t, src)
	var live []string
	for _, l := range all {
		if !strings.HasPrefix(l, "word-counter recent ") {
			live = append(live, l)
		}
	}
	if len(live) == len(all) || !slices.ContainsFunc(live, func(l string) bool { return strings.HasPrefix(l, "word-counter by-source ") }) {
		t.Fatalf("the generated snapshot has no entries of both TTL'd states:\n%s", strings.Join(all, "\n"))
	}
	for _, c := range []struct {
		at   string
		want []string
	}{
		{"2026-01-02T12:00:00Z", live},
		{"1767355200000", live}, // the same time in Unix milliseconds
		{"2026-01-01T00:00:00Z", all},
	} {
		dst := filepath.Join(dir, "at-"+c.at)
		mustRun(t, "convert", src, "--to", "filesystem", "--output", dst, "--drop-expired-ttl-at", c.at, "--verify")
		if got := dumpKeys(t, dst); !slices.Equal(got, c.want) {
			t.Errorf("at %s: kept\n%s\nwant\n%s", c.at, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	// The generated states record their TTL: --ttl is refused for them.
	code, _, errOut := run(t, "convert", src, "--to", "filesystem", "--output", filepath.Join(dir, "x"),
		"--drop-expired-ttl-at", "2026-01-02T12:00:00Z", "--ttl", "recent=1h")
	if code != ExitUsage || !strings.Contains(errOut, `"recent" records its TTL`) {
		t.Errorf("--ttl for a state that records its TTL: exit %d, %s", code, errOut)
	}
}

// A Flink snapshot records last-access times only: the TTL is given, and
// Flink's rule (expired when last access + TTL <= TIME) decides. The
// harness's own dump of the job is the witness of how many keys each state
// holds.
func TestDropExpiredTTLFlink(t *testing.T) {
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name != "basic-hashmap-canonical" {
			continue
		}
		t.Run(e.Manifest.FlinkVersion, func(t *testing.T) {
			keys := map[string]int{}
			for _, l := range dumpOf(t, e.File("dump.jsonl")) {
				if l.Operator == "keyed" {
					keys[l.State]++
				}
			}
			if keys["last"] == 0 || keys["count"] == 0 {
				t.Fatalf("the job's dump has no keys of the TTL'd state last, or of count: %v", keys)
			}
			dir := t.TempDir()
			for _, c := range []struct {
				at   string
				last int
			}{{"2100-01-01T00:00:00Z", 0}, {"0", keys["last"]}} {
				dst := filepath.Join(dir, "at-"+c.at)
				mustRun(t, "convert", e.SnapshotDir(), "--to", "flink", "--output", dst, "--drop-expired-ttl-at", c.at, "--ttl", "last=24h", "--verify")
				if got := len(dumpKeys(t, dst, "--operator", "keyed", "--state", "last")); got != c.last {
					t.Errorf("at %s: %d keys of last kept, want %d", c.at, got, c.last)
				}
				if got := len(dumpKeys(t, dst, "--operator", "keyed", "--state", "count")); got != keys["count"] {
					t.Errorf("at %s: %d keys of count kept, want all %d", c.at, got, keys["count"])
				}
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--drop-expired-ttl-at", "2100-01-01T00:00:00Z"}, `keyed state "last" has TTL, but the snapshot records only last-access times: give its time to live (--ttl last=DURATION)`},
				{[]string{"--drop-expired-ttl-at", "2100-01-01T00:00:00Z", "--ttl", "last=24h", "--ttl", "count=1h"}, `--ttl count: the snapshot has no TTL'd state "count" without a recorded TTL`},
				{[]string{"--ttl", "last=24h"}, "--ttl needs --drop-expired-ttl-at"},
				{[]string{"--drop-expired-ttl-at", "tomorrow"}, `--drop-expired-ttl-at wants RFC 3339 (2026-12-01T12:00:00Z) or Unix milliseconds, not "tomorrow"`},
				{[]string{"--drop-expired-ttl-at", "0", "--ttl", "last=-1h"}, `--ttl wants STATE=DURATION with a positive duration such as 24h, not "last=-1h"`},
			} {
				dst := filepath.Join(dir, "refused")
				code, _, errOut := run(t, append([]string{"convert", e.SnapshotDir(), "--to", "flink", "--output", dst}, c.args...)...)
				if code != ExitUsage || !strings.Contains(errOut, c.want) {
					t.Errorf("%v: exit %d, %q; want exit %d, %q", c.args, code, errOut, ExitUsage, c.want)
				}
			}
		})
	}
}
