package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// The commit's summary, as a table and as JSON, gives what the shards
// wrote: for a max-parallelism change, the source's keyed entries, where
// the plan has only estimates.
func TestCommitReportsWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mustRun(t, "generate", "--format", "filesystem", "--output", src, "--keys", "1500", "--parallelism", "2")
	r, err := testReg.Open(context.Background(), src, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			want += sub.Keyed.Entries
		}
	}
	r.Close()
	for _, c := range []struct{ name, flag string }{{"table", "table"}, {"json", "json"}} {
		t.Run(c.name, func(t *testing.T) {
			plan := filepath.Join(dir, c.name+"-plan.json")
			out := mustRun(t, "rescale", src, "--parallelism", "3", "--max-parallelism", "256", "--output", filepath.Join(dir, c.name), "--plan-only", plan, "--shards", "2", "-o", "json")
			var sp struct {
				Plan struct {
					Operators []struct {
						KeyedEntries int64 `json:"keyed_entries"`
					} `json:"operators"`
				} `json:"plan"`
			}
			if err := json.Unmarshal([]byte(out), &sp); err != nil {
				t.Fatal(err)
			}
			var planned int64
			for _, op := range sp.Plan.Operators {
				planned += op.KeyedEntries
			}
			if planned == want {
				t.Fatalf("the plan's estimate is exact (%d): the test shows nothing", want)
			}
			runShard(t, plan, "1/2")
			runShard(t, plan, "2/2")
			got := mustRun(t, "commit", plan, "-o", c.flag)
			if c.flag == "table" {
				if !strings.Contains(got, fmt.Sprintf(" %d keyed entries", want)) {
					t.Fatalf("commit says %q; the source holds %d keyed entries (the plan estimated %d)", got, want, planned)
				}
				return
			}
			var res struct {
				Totals struct {
					Entries int64 `json:"keyed_entries"`
				} `json:"totals"`
			}
			if err := json.Unmarshal([]byte(got), &res); err != nil {
				t.Fatal(err)
			}
			if res.Totals.Entries != want {
				t.Fatalf("commit -o json says %d keyed entries; the source holds %d (the plan estimated %d)", res.Totals.Entries, want, planned)
			}
		})
	}
}
