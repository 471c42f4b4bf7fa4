package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The help of shard and commit; usage errors of shard, commit and the --plan-only and --yarn flags, and
// a bad plan file: each one line, with its exit code, before anything is
// written.
func TestGoldenShardErrors(t *testing.T) {
	cases := map[string][]string{
		"shard-help":                 {"shard", "--help"},
		"commit-help":                {"commit", "--help"},
		"shard-no-args":              {"shard"},
		"shard-no-shard":             {"shard", "plan.json"},
		"shard-bad-shard":            {"shard", "plan.json", "--shard", "3/2"},
		"shard-plan-missing":         {"shard", "../testdata/no-such-plan.json", "--shard", "1/2"},
		"shard-not-a-plan":           {"shard", example, "--shard", "1/2"},
		"commit-no-args":             {"commit"},
		"commit-plan-missing":        {"commit", "../testdata/no-such-plan.json"},
		"commit-not-a-plan":          {"commit", example},
		"rescale-shards-alone":       {"rescale", example, "--parallelism", "3", "--output", "out", "--shards", "2"},
		"rescale-plan-only-yarn":     {"rescale", example, "--parallelism", "3", "--output", "out", "--plan-only", "p.json", "--yarn", "http://127.0.0.1:1"},
		"rescale-yarn-no-shards":     {"rescale", example, "--parallelism", "3", "--output", "out", "--yarn", "http://127.0.0.1:1"},
		"rescale-yarn-dry-run":       {"rescale", example, "--parallelism", "3", "--output", "out", "--yarn", "http://127.0.0.1:1", "--shards", "2", "--dry-run"},
		"convert-yarn-bad-shard-env": {"convert", example, "--to", "filesystem", "--output", "out", "--yarn", "http://127.0.0.1:1", "--shards", "2", "--yarn-shard-env", "NOEQUALS"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// What writes or reads a real plan: --plan-only's table, a shard run with
// the wrong N, a commit before any shard ran, --yarn with a destination
// the containers cannot reach. Temporary paths and the plan's random id
// show as TMP and PLANID.
func TestGoldenShardPlan(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	out := filepath.Join(dir, "out")
	planID := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	r := func(s string) string { return planID.ReplaceAllString(strings.ReplaceAll(s, dir, "TMP"), "PLANID") }
	runGoldenReplacing(t, "rescale-plan-only", r,
		"rescale", example, "--parallelism", "3", "--output", out, "--plan-only", plan, "--shards", "2")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("--plan-only wrote %s: %v", out, err)
	}
	runGoldenReplacing(t, "shard-wrong-n", r, "shard", plan, "--shard", "1/3")
	runGoldenReplacing(t, "commit-no-shard-ran", r, "commit", plan)
	runGoldenReplacing(t, "convert-yarn-local-output", r,
		"convert", example, "--to", "filesystem", "--output", out, "--yarn", "http://127.0.0.1:1", "--shards", "2")
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("after the refusals %s holds %v (%v), want the plan alone", dir, entries, err)
	}
}
