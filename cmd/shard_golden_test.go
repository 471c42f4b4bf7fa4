package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// The help of shard, commit and abort; usage errors of shard, commit, abort and the --plan-only and --yarn flags, and
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
		"abort-help":                 {"abort", "--help"},
		"abort-no-args":              {"abort"},
		"abort-plan-missing":         {"abort", "../testdata/no-such-plan.json"},
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
	written, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	// A plan file is written exclusively: another plan to the same file
	// is refused, and leaves no staging area of its own.
	runGoldenReplacing(t, "rescale-plan-only-exists", r,
		"rescale", example, "--parallelism", "3", "--output", out, "--plan-only", plan, "--shards", "2")
	if again, err := os.ReadFile(plan); err != nil || !bytes.Equal(again, written) {
		t.Fatalf("a refused --plan-only changed %s: %v", plan, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 || entries[0].Name() != ".stateutil-shards-"+planIDOf(t, plan)+"-out" || entries[1].Name() != "plan.json" {
		t.Fatalf("after the refusals %s holds %v (%v), want the plan and its staging area alone", dir, entries, err)
	}
	// Aborted, the plan's staging area is gone and its shards refused.
	runGoldenReplacing(t, "abort", r, "abort", plan)
	runGoldenReplacing(t, "abort-again", r, "abort", plan)
	runGoldenReplacing(t, "shard-after-abort", r, "shard", plan, "--shard", "1/2")
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("after abort %s holds %v (%v), want the plan alone", dir, entries, err)
	}
}

func planIDOf(t *testing.T, plan string) string {
	t.Helper()
	data, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var sp struct{ ID string }
	if err := json.Unmarshal(data, &sp); err != nil {
		t.Fatal(err)
	}
	return sp.ID
}

// --plan-only never writes over the source, a file inside it, or what is
// not a regular file, even with --force; --shards is between 1 and the new
// subtasks written.
func TestGoldenPlanOnlyRefusals(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.dump")
	orig, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	fsSnap := filepath.Join(dir, "victimdir")
	if code := Run(context.Background(), []string{"convert", victim, "--to", "filesystem", "--output", fsSnap}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("convert: exit %d", code)
	}
	meta := filepath.Join(fsSnap, "_metadata")
	metaBytes, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// A file that is no plan, outside the source.
	other := filepath.Join(dir, "metadata-copy")
	if err := os.WriteFile(other, metaBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	r := strings.NewReplacer(dir, "TMP").Replace
	runGoldenReplacing(t, "plan-only-over-source", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", victim, "--force")
	runGoldenReplacing(t, "plan-only-over-destination", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", out)
	runGoldenReplacing(t, "plan-only-inside-source", r,
		"convert", fsSnap, "--to", "memory", "--output", out, "--plan-only", meta, "--force")
	runGoldenReplacing(t, "plan-only-fifo", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", fifo, "--force")
	runGoldenReplacing(t, "plan-only-not-a-plan", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", other, "--force")
	runGoldenReplacing(t, "plan-only-directory", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", fsSnap, "--force")
	runGoldenReplacing(t, "rescale-shards-zero", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", filepath.Join(dir, "p.json"), "--shards", "0")
	runGoldenReplacing(t, "rescale-shards-too-many", r,
		"rescale", victim, "--parallelism", "2", "--output", out, "--plan-only", filepath.Join(dir, "p.json"), "--shards", "100000")
	if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, orig) {
		t.Errorf("the source %s changed: %v", victim, err)
	}
	for _, f := range []string{meta, other} {
		if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, metaBytes) {
			t.Errorf("%s changed: %v", f, err)
		}
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO %s is no longer one: %v", fifo, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 4 {
		t.Errorf("after the refusals %s holds %v (%v), want the source, the snapshot, the copy of its metadata and the FIFO alone", dir, entries, err)
	}
}

// --force replaces an earlier plan file, and nothing else: not a file a
// Flink checkpoint reads from outside its directory (its shared state).
func TestPlanOnlyForceReplacesPlansOnly(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	mustRun(t, "rescale", example, "--parallelism", "3", "--output", filepath.Join(dir, "out"), "--plan-only", plan)
	first := planIDOf(t, plan)
	mustRun(t, "rescale", example, "--parallelism", "2", "--output", filepath.Join(dir, "out"), "--plan-only", plan, "--force")
	if planIDOf(t, plan) == first {
		t.Fatalf("--force kept the earlier plan %s", first)
	}

	job := filepath.Join(dir, "job")
	fixture := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-rocksdb-checkpoint-incremental", "snapshot", "d814f7a91bbd89985e0d9f59d3e2f161")
	if err := os.CopyFS(job, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	shared, err := filepath.Glob(filepath.Join(job, "shared", "*"))
	if err != nil || len(shared) == 0 {
		t.Fatalf("no shared state in %s: %v", job, err)
	}
	before, err := os.ReadFile(shared[0])
	if err != nil {
		t.Fatal(err)
	}
	pathMap := "file:" + flinkWrittenDir(t, "1.20.5", "basic-rocksdb-checkpoint-incremental") + "/d814f7a91bbd89985e0d9f59d3e2f161=" + job
	mustRun(t, "inspect", filepath.Join(job, "chk-1"), "--path-map", pathMap)
	code, _, errOut := run(t, "convert", filepath.Join(job, "chk-1"), "--path-map", pathMap, "--to", "flink", "--output", filepath.Join(dir, "sp"),
		"--plan-only", shared[0], "--force")
	if code != ExitUsage || !strings.Contains(errOut, "is not a plan file") {
		t.Fatalf("--plan-only over the checkpoint's shared state: exit %d: %s", code, errOut)
	}
	if after, err := os.ReadFile(shared[0]); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("%s changed: %v", shared[0], err)
	}
}
