package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flinkBasic is a savepoint real Flink 2.3.0 wrote: keyed state of every
// kind with timers, operator list, union and broadcast state.
const flinkBasic = "../testdata/flink/2.3.0/basic-hashmap-canonical/snapshot/savepoint-537d8a-885f48eb9003"

// flinkLongKeys is a Flink savepoint whose keys are longs.
const flinkLongKeys = "../testdata/flink/2.3.0/longkeys-hashmap-canonical/snapshot/savepoint-1d440d-056c70901456"

// TestGoldenSurgery writes each edit and pins what it printed and what
// diff --entries --values says of SRC and the copy: the edit, nothing else.
func TestGoldenSurgery(t *testing.T) {
	cases := map[string][]string{
		"state-drop-keyed":        {"state", "drop", example, "--operator", "word-counter", "--state", "recent"},
		"state-drop-operator":     {"state", "drop", example, "--operator", "kafka-source", "--state", "topic-watermarks"},
		"state-rename-keyed":      {"state", "rename", example, "--operator", "word-counter", "--state", "count", "--to", "count-v2"},
		"state-rename-operator":   {"state", "rename", example, "--operator", "kafka-source", "--state", "partition-offsets", "--to", "offsets", "--format", "filesystem"},
		"keys-delete":             {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--key", `"word-18"`, "--key", "no-such-word"},
		"keys-delete-rescaled":    {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--parallelism", "2", "--max-parallelism", "256", "--format", "rocksdb"},
		"state-drop-flink-timers": {"state", "drop", flinkBasic, "--operator", "keyed", "--state", "_timer_state/event_user-timers"},
		"state-rename-flink":      {"state", "rename", flinkBasic, "--operator", "keyed", "--state", "by-bucket", "--to", "per-bucket"},
		"keys-delete-flink":       {"keys", "delete", flinkBasic, "--operator", "keyed", "--key", "user-0", "--key", "user-7"},
		"put-flink-value":         {"put", flinkBasic, "--operator", "keyed", "--state", "count", "--key", "user-3", "--value", "1234"},
		"put-flink-list":          {"put", flinkBasic, "--operator", "keyed", "--state", "events", "--key", "user-new", "--value", `["x","y"]`},
		"put-flink-map-delete":    {"put", flinkBasic, "--operator", "keyed", "--state", "by-bucket", "--key", "user-3", "--map-key", "b1", "--delete"},
		"put-ttl":                 {"put", example, "--operator", "word-counter", "--state", "recent", "--key", "word-10", "--value", "[5]", "--now", "2026-01-02T04:00:00Z"},
		"keys-delete-flink-long":  {"keys", "delete", flinkLongKeys, "--operator", "keyed", "--key", "-1", "--key", "42", "--key", "123456789"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "edited")
			hide := strings.NewReplacer(dst, "DST").Replace
			src := args[2]
			if args[0] == "put" {
				src = args[1]
			}
			before := hashTree(t, src)
			runGoldenReplacing(t, name, hide, append(args, "--output", dst, "--verify")...)
			runGoldenReplacing(t, name+"-diff", hide, "diff", "--entries", "--values", src, dst)
			if hashTree(t, src) != before {
				t.Fatal("the edit modified its source")
			}
		})
	}
}

func TestGoldenSurgeryDryRun(t *testing.T) {
	cases := map[string][]string{
		"state-drop-dry-run":       {"state", "drop", example, "--operator", "word-counter", "--state", "by-source", "--dry-run"},
		"state-rename-dry-run":     {"state", "rename", example, "--operator", "kafka-source", "--state", "partition-offsets", "--to", "offsets", "--dry-run"},
		"keys-delete-dry-run":      {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--dry-run"},
		"keys-delete-dry-run-json": {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--key", "nope", "--dry-run", "-o", "json"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// Edits that do not fit the snapshot are refused with their exit code,
// and nothing is written.
func TestGoldenSurgeryRefused(t *testing.T) {
	cases := map[string][]string{
		"state-no-subcommand":            {"state"},
		"state-drop-unknown-operator":    {"state", "drop", example, "--operator", "nope", "--state", "count"},
		"state-drop-unknown-state":       {"state", "drop", example, "--operator", "word-counter", "--state", "nope"},
		"state-drop-no-state":            {"state", "drop", example, "--operator", "word-counter"},
		"state-drop-no-output":           {"state", "drop", example, "--operator", "word-counter", "--state", "count"},
		"state-rename-conflict":          {"state", "rename", example, "--operator", "word-counter", "--state", "count", "--to", "recent"},
		"state-rename-same":              {"state", "rename", example, "--operator", "word-counter", "--state", "count", "--to", "count"},
		"state-rename-no-to":             {"state", "rename", example, "--operator", "word-counter", "--state", "count"},
		"keys-no-subcommand":             {"keys"},
		"keys-delete-no-keys":            {"keys", "delete", example, "--operator", "word-counter"},
		"keys-delete-key-and-file":       {"keys", "delete", example, "--operator", "word-counter", "--key", "a", "--keys-from", "x"},
		"keys-delete-wrong-type":         {"keys", "delete", flinkLongKeys, "--operator", "keyed", "--key", "abc"},
		"keys-delete-no-keyed-state":     {"keys", "delete", example, "--operator", "kafka-source", "--key", "a"},
		"keys-delete-namespace":          {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--namespace", "7"},
		"keys-delete-require-present":    {"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--key", "nope", "--require-present"},
		"keys-delete-keys-from-missing":  {"keys", "delete", example, "--operator", "word-counter", "--keys-from", "../testdata/no-such-keys.txt"},
		"keys-delete-require-plan-only":  {"keys", "delete", example, "--operator", "word-counter", "--key", "a", "--require-present", "--plan-only", "p.json"},
		"state-drop-bad-parallelism":     {"state", "drop", example, "--operator", "word-counter", "--state", "count", "--parallelism", "0"},
		"keys-delete-unknown-operator":   {"keys", "delete", example, "--operator", "nope", "--key", "a"},
		"state-rename-timers-domain":     {"state", "rename", flinkBasic, "--operator", "keyed", "--state", "_timer_state/event_user-timers", "--to", "_timer_state/processing_user-timers-2"},
		"put-wrong-type":                 {"put", flinkBasic, "--operator", "keyed", "--state", "count", "--key", "user-3", "--value", `"ten"`},
		"put-list-not-array":             {"put", flinkBasic, "--operator", "keyed", "--state", "events", "--key", "user-3", "--value", "1"},
		"put-no-value":                   {"put", flinkBasic, "--operator", "keyed", "--state", "count", "--key", "user-3"},
		"put-unknown-state":              {"put", flinkBasic, "--operator", "keyed", "--state", "nope", "--key", "user-3", "--value", "1"},
		"put-timers":                     {"put", flinkBasic, "--operator", "keyed", "--state", "_timer_state/event_user-timers", "--key", "user-3", "--value", "1"},
		"help-put":                       {"put", "--help"},
		"help-state-drop":                {"state", "drop", "--help"},
		"help-state-rename":              {"state", "rename", "--help"},
		"help-keys-delete":               {"keys", "delete", "--help"},
		"state-rename-operator-conflict": {"state", "rename", example, "--operator", "kafka-source", "--state", "partition-offsets", "--to", "topic-watermarks"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "edited")
			if len(args) > 2 && !strings.HasSuffix(name, "-no-output") && !strings.HasPrefix(name, "help-") {
				args = append(args, "--output", dst)
			}
			runGoldenReplacing(t, name, strings.NewReplacer(dst, "DST").Replace, args...)
			if exists(dst) {
				t.Fatalf("a refused edit wrote %s", dst)
			}
		})
	}
}

func TestKeysDeleteFromFile(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.txt")
	// As dump prints them, with a blank line and a key given twice.
	if err := os.WriteFile(keys, []byte("\"word-10\"\n\n\"word-18\"\nword-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, fromFlags := filepath.Join(dir, "file.dump"), filepath.Join(dir, "flags.dump")
	out := mustRun(t, "keys", "delete", example, "--operator", "word-counter", "--keys-from", keys, "--output", fromFile)
	if !strings.Contains(out, "2 keys given, 2 deleted, 0 in no state") {
		t.Fatalf("summary:\n%s", out)
	}
	mustRun(t, "keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--key", "word-18", "--output", fromFlags)
	if code, out, _ := run(t, "diff", "--entries", "--values", fromFile, fromFlags); code != ExitOK {
		t.Fatalf("keys from a file and from flags differ:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("word-10\n\xff\xfe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "keys", "delete", example, "--operator", "word-counter", "--keys-from", bad, "--output", filepath.Join(dir, "x"))
	if code != ExitUsage || !strings.Contains(errOut, "at offset 8") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
