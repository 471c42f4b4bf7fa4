package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleEditsFile holds records that edit word-counter of example: a
// value changed, a key added, a list and a map replaced (the map keeps one
// entry as it was), two keys deleted (one the state does not hold).
const exampleEditsFile = "../testdata/memory/example-edits.jsonl"

// flinkRecords edit the keyed operator of flinkBasic, and give a timer
// as dump prints it, which is skipped.
const flinkRecords = `{"operator":"keyed","state":"count","key":"user-3","value":1234}
{"operator":"keyed","state":"events","key":"user-new","value":["x","y"]}
{"operator":"keyed","state":"by-bucket","key":"user-3","value":{"b0":1,"b9":2}}
{"operator":"keyed","state":"avg","key":"user-5","delete":true}
{"schema_version":1,"operator":"keyed","state":"_timer_state/event_user-timers","kind":"timer","key":"user-9","key_group":1,"subtask":0,"value":1004000}
`

// writeRecords writes records to a file of dir.
func writeRecords(t *testing.T, dir, name, records string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGoldenLoad loads records into a snapshot of each format stateutil
// writes, and pins what it printed and what diff --entries --values says
// of SRC and the copy: the records' edit, nothing else.
func TestGoldenLoad(t *testing.T) {
	dir := t.TempDir()
	fs, rocks := filepath.Join(dir, "example-fs"), filepath.Join(dir, "example-rocksdb")
	mustRun(t, "convert", example, "--to", "filesystem", "--output", fs)
	mustRun(t, "convert", example, "--to", "rocksdb", "--output", rocks)
	records := exampleEditsFile
	flink := writeRecords(t, dir, "flink-edits.jsonl", flinkRecords)
	now := []string{"--now", "2026-01-02T04:00:00Z"}
	cases := map[string][]string{
		"load-memory":     append([]string{example, "--from", records}, now...),
		"load-filesystem": append([]string{fs, "--from", records}, now...),
		"load-rocksdb":    append([]string{rocks, "--from", records}, now...),
		"load-flink":      {flinkBasic, "--from", flink},
		"load-rescaled":   append([]string{example, "--from", records, "--format", "rocksdb", "--parallelism", "2", "--max-parallelism", "256"}, now...),
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "loaded")
			hide := strings.NewReplacer(dst, "DST", dir, "TMP").Replace
			src := args[0]
			before := hashTree(t, src)
			runGoldenReplacing(t, name, hide, append(append([]string{"load"}, args...), "--output", dst, "--verify")...)
			runGoldenReplacing(t, name+"-diff", hide, "diff", "--entries", "--values", src, dst)
			if hashTree(t, src) != before {
				t.Fatal("the load modified its source")
			}
		})
	}
	hide := strings.NewReplacer(dir, "TMP").Replace
	runGoldenReplacing(t, "load-dry-run", hide, "load", example, "--from", records, "--dry-run")
	runGoldenReplacing(t, "load-dry-run-json", hide, "load", example, "--from", records, "--dry-run", "-o", "json", "--now", "2026-01-02T04:00:00Z")
}

// What dump prints, loaded back unedited, gives a copy diff finds equal
// to the source: TTL expiries and timers included.
func TestGoldenLoadDumpRoundTrip(t *testing.T) {
	cases := map[string]struct {
		src  string
		skip string // a state whose values stateutil does not write
	}{
		"load-round-trip-memory": {example, `"state":"mean-length"`},
		"load-round-trip-flink":  {flinkBasic, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var lines []string
			for _, l := range strings.SplitAfter(mustRun(t, "dump", c.src), "\n") {
				if c.skip == "" || !strings.Contains(l, c.skip) {
					lines = append(lines, l)
				}
			}
			records := writeRecords(t, dir, "dump.jsonl", strings.Join(lines, ""))
			dst := filepath.Join(dir, "loaded")
			hide := strings.NewReplacer(dir, "TMP").Replace
			runGoldenReplacing(t, name, hide, "load", c.src, "--from", records, "--output", dst)
			runGoldenReplacing(t, name+"-diff", hide, "diff", "--entries", "--values", c.src, dst)
		})
	}
}

// Records that do not fit the snapshot are refused with their exit code,
// naming the file and the line; nothing is written, and the source is
// unchanged.
func TestGoldenLoadRefused(t *testing.T) {
	good := `{"operator":"word-counter","state":"count","key":"word-10","value":5}` + "\n"
	cases := map[string]struct {
		src, records string
	}{
		"load-unknown-operator":   {example, good + `{"operator":"nope","state":"count","key":"word-10","value":5}`},
		"load-unknown-state":      {example, good + `{"operator":"word-counter","state":"nope","key":"word-10","value":5}`},
		"load-wrong-value-type":   {example, good + `{"operator":"word-counter","state":"recent","key":"word-10","value":[1,"two"]}`},
		"load-wrong-key-type":     {flinkLongKeys, `{"operator":"keyed","state":"count","key":"abc","value":5}`},
		"load-key-group-mismatch": {example, good + "\n" + `{"operator":"word-counter","state":"count","key":"word-18","key_group":1,"value":5}`},
		"load-malformed-line":     {example, good + `{"operator":"word-counter","state":"count","key":"word-18","value":5` + "\n" + good},
		"load-duplicate-key":      {example, good + good},
		"load-not-encodable":      {example, `{"operator":"word-counter","state":"mean-length","key":"word-10","value":{"count":1,"sum":2}}`},
		"load-no-records":         {example, "\n\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			records := writeRecords(t, dir, "edits.jsonl", c.records)
			dst := filepath.Join(dir, "loaded")
			before := hashTree(t, c.src)
			runGoldenReplacing(t, name, strings.NewReplacer(dir, "TMP").Replace, "load", c.src, "--from", records, "--output", dst)
			if exists(dst) {
				t.Fatalf("a refused load wrote %s", dst)
			}
			if hashTree(t, c.src) != before {
				t.Fatal("a refused load modified its source")
			}
		})
	}
	for name, args := range map[string][]string{
		"load-from-missing": {"load", example, "--from", "../testdata/no-such-records.jsonl", "--output", "x"},
		"load-no-from":      {"load", example, "--output", "x"},
		"help-load":         {"load", "--help"},
	} {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// --from - reads the records from stdin, as from a file.
func TestLoadFromStdin(t *testing.T) {
	dir := t.TempDir()
	records := exampleEditsFile
	fromFile, fromStdin := filepath.Join(dir, "file.dump"), filepath.Join(dir, "stdin.dump")
	mustRun(t, "load", example, "--from", records, "--now", "2026-01-02T04:00:00Z", "--output", fromFile)
	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	out := mustRun(t, "load", example, "--from", "-", "--now", "2026-01-02T04:00:00Z", "--output", fromStdin)
	if !strings.Contains(out, `load "-": 6 records: 4 keys put, 2 deleted`) {
		t.Fatalf("summary:\n%s", out)
	}
	if code, out, _ := run(t, "diff", "--entries", "--values", fromFile, fromStdin); code != ExitOK {
		t.Fatalf("records from stdin and from a file differ:\n%s", out)
	}
}

// A load planned for shards carries its records in the plan: the shards
// write what one process writes.
func TestLoadInShards(t *testing.T) {
	dir := t.TempDir()
	records := exampleEditsFile
	single, sharded, plan := filepath.Join(dir, "single"), filepath.Join(dir, "sharded"), filepath.Join(dir, "plan.json")
	args := []string{"load", example, "--from", records, "--now", "2026-01-02T04:00:00Z", "--parallelism", "3", "--format", "filesystem"}
	mustRun(t, append(args, "--output", single)...)
	mustRun(t, append(args, "--output", sharded, "--plan-only", plan, "--shards", "2")...)
	mustRunQuiet(t, "shard", plan, "--shard", "1/2")
	mustRunQuiet(t, "shard", plan, "--shard", "2/2")
	mustRunQuiet(t, "commit", plan)
	if code, out, _ := run(t, "diff", "--entries", "--values", single, sharded); code != ExitOK {
		t.Fatalf("the shards wrote other state than one process:\n%s", out)
	}
}

// Every savepoint real Flink wrote into testdata/flink goes through dump
// and load unedited equal to itself, every value type of the types zoo
// included: values stateutil does not decode go back as their bytes. The
// heapkryo savepoints hold a heap state no walker can split into values;
// dump refuses them whole (exit 4) rather than print less.
func TestLoadDumpRoundTripOfEveryFlinkSavepoint(t *testing.T) {
	unreadable := map[string]bool{"heapkryo-hashmap-native": true}
	savepoints, err := filepath.Glob(filepath.Join("..", "testdata", "flink", "*", "*", "snapshot", "savepoint-*"))
	if err != nil || len(savepoints) < 20 {
		t.Fatalf("%d savepoints in testdata/flink (%v)", len(savepoints), err)
	}
	for _, src := range savepoints {
		name := strings.Join(strings.Split(src, string(filepath.Separator))[3:5], "/")
		t.Run(name, func(t *testing.T) {
			// Each reads its own savepoint and writes in its own
			// directory: side by side they use every core.
			t.Parallel()
			if unreadable[filepath.Base(filepath.Dir(filepath.Dir(src)))] {
				if code, _, stderr := run(t, "dump", src); code != 4 || !strings.Contains(stderr, "cannot be read") {
					t.Fatalf("dump of a savepoint with an unreadable state: exit %d, %s; want exit 4 naming it", code, stderr)
				}
				return
			}
			dir := t.TempDir()
			records := writeRecords(t, dir, "dump.jsonl", mustRun(t, "dump", src))
			dst := filepath.Join(dir, "loaded")
			mustRun(t, "load", src, "--from", records, "--output", dst, "--quiet")
			if code, out, stderr := run(t, "diff", "--entries", "--values", src, dst); code != 0 || !strings.Contains(out, "equal") {
				t.Fatalf("diff of the source and its dump loaded back: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}
