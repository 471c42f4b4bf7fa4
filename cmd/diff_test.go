package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
)

func TestGoldenDiff(t *testing.T) {
	cases := map[string][]string{
		"diff-equal":        {"diff", example, example, "--entries"},
		"diff-maxp":         {"diff", example, "../testdata/memory/maxp4096.dump"},
		"diff-values":       {"diff", example, "../testdata/memory/maxp4096.dump", "--entries", "--values", "--max-keys", "5"},
		"diff-values-alone": {"diff", example, example, "--values"},
		"diff-maxp-entries": {"diff", example, "../testdata/memory/maxp4096.dump", "--entries", "--max-keys", "5", "-o", "json"},
		"diff-missing":      {"diff", example, "../testdata/memory/missing.dump"},
		"diff-one-arg":      {"diff", example},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

func generateTo(t *testing.T, loc string, edit func(*generate.Config)) {
	t.Helper()
	w, err := testReg.Create(context.Background(), memory.Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generate.Default()
	edit(&cfg)
	if _, err := generate.Write(context.Background(), w, cfg); err != nil {
		t.Fatal(err)
	}
}

// Snapshots that differ in values and keys exit 1 and list the keys; a
// rescaled copy compares equal by content.
func TestDiffEntries(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.dump"), filepath.Join(dir, "b.dump")
	generateTo(t, a, func(*generate.Config) {})
	generateTo(t, b, func(c *generate.Config) { c.Seed, c.Keys = 2, 41 })
	code, out, errOut := run(t, "diff", a, b, "--entries", "-o", "json")
	if code != ExitUsage || errOut != "stateutil: snapshots differ\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var res diff.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	changes := map[string]int{}
	for _, op := range res.Operators {
		for _, k := range op.Keys {
			changes[k.Change]++
			if k.Change == diff.KeyAdded && k.Key != "word-40" && k.Key != float64(40) {
				t.Errorf("key %v reported added; only key 40 is new", k.Key)
			}
		}
	}
	if changes[diff.KeyAdded] == 0 || changes[diff.KeyChanged] == 0 || changes[diff.KeyRemoved] != 0 {
		t.Fatalf("changes %v", changes)
	}
	if !strings.Contains(out, `"field": "job_id"`) {
		t.Error("job id change not reported")
	}
	code, out, _ = run(t, "diff", a, b)
	if code != ExitUsage || !strings.Contains(out, "count") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	r := filepath.Join(dir, "r.dump")
	mustRun(t, "rescale", a, "--parallelism", "5", "--output", r)
	code, out, _ = run(t, "diff", a, r, "--entries")
	if code != ExitUsage || !strings.Contains(out, "parallelism: 3 -> 5") || strings.Contains(out, "KEY GROUP") {
		t.Fatalf("a rescaled copy differs in parallelism only; exit %d\n%s", code, out)
	}
}
