package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// unalignedCheckpoint is the checked-in unaligned checkpoint of the CEP
// witness job (Flink 2.3.0): records in flight in the result
// subpartitions of "emitted" and the input channels of "cep"; and the
// --path-map from the absolute path its keyed state files were written
// under, which its manifest records.
func unalignedCheckpoint(t *testing.T) (snap, pathMap string) {
	return witnessCheckpoint(t, "cep-hashmap-checkpoint-unaligned")
}

// witnessCheckpoint is a checked-in Flink 2.3.0 witness snapshot and the
// --path-map its absolute paths need.
func witnessCheckpoint(t *testing.T, name string) (snap, pathMap string) {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == name && e.Manifest.FlinkVersion == "2.3.0" {
			old, now := e.PathMap()
			return e.SnapshotDir(), old + "=" + now
		}
	}
	t.Fatalf("testdata/flink-witness/2.3.0 has no %s", name)
	return "", ""
}

// The unaligned checkpoint of the sqlevents witness job holds channel
// state whose buffers are all empty (40 channels, 0 bytes): no records in
// flight, so rescale and convert copy it, with the same state, key by key.
// (That Flink goes on from the copies as from the checkpoint is
// internal/flinkwitness's TestWitnessRestoresInFlink.)
func TestUnalignedWithEmptyChannelsIsCopied(t *testing.T) {
	s, pm := witnessCheckpoint(t, "sqlevents-hashmap-checkpoint-unaligned")
	if out := mustRun(t, "inspect", s, "--path-map", pm); !strings.Contains(out, "In flight:  40 channels, 0 B") {
		t.Fatalf("the checkpoint is not one with 40 empty channels:\n%s", out)
	}
	for _, args := range [][]string{{"rescale", "--parallelism", "3"}, {"convert", "--to", "flink"}} {
		t.Run(args[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "copy")
			mustRun(t, append(append([]string{args[0], s}, args[1:]...), "--path-map", pm, "--output", out, "-q")...)
			code, js, errOut := run(t, "diff", s, out, "--path-map", pm, "--entries", "-o", "json")
			var d diff.Result
			if err := json.Unmarshal([]byte(js), &d); code != ExitUsage || err != nil {
				t.Fatalf("diff: exit %d, %v\n%s", code, err, errOut)
			}
			if len(d.Changes) != 1 || d.Changes[0].Field != "kind" || len(d.OperatorsAdded)+len(d.OperatorsRemoved) != 0 {
				t.Errorf("the copy differs from the checkpoint in more than its kind: %+v", d)
			}
			keyed := int64(0)
			for _, op := range d.Operators {
				for _, c := range op.Changes {
					if c.Field != "parallelism" {
						t.Errorf("operator %s: %s %s -> %s", op.Label(), c.Field, c.A, c.B)
					}
				}
				if len(op.StatesAdded)+len(op.StatesRemoved)+len(op.StatesChanged)+len(op.Keys)+len(op.ElementsDiffer) != 0 || op.EntriesNotCompared != "" {
					t.Errorf("operator %s: the copy's state differs: %+v", op.Label(), op)
				}
				for _, c := range op.Counts {
					if c.A != c.B {
						t.Errorf("operator %s, state %s: %d entries, the copy %d", op.Label(), c.Name, c.A, c.B)
					}
					if c.Scope == diff.Keyed {
						keyed += c.A
					}
				}
			}
			if keyed == 0 {
				t.Error("diff compared no keyed entries")
			}
		})
	}
}

// inspect shows the records in flight of an unaligned checkpoint per
// subtask and channel, verify checks them, and every copy refuses them
// (exit 4) rather than drop them: to another format, rescaled, converted
// to a Flink savepoint, edited.
func TestGoldenUnaligned(t *testing.T) {
	s, pm := unalignedCheckpoint(t)
	out := filepath.Join(t.TempDir(), "out")
	cases := map[string][]string{
		"flink-unaligned-inspect":         {"inspect", s, "--path-map", pm},
		"flink-unaligned-inspect-json":    {"inspect", s, "--path-map", pm, "-o", "json"},
		"flink-unaligned-verify":          {"verify", s, "--path-map", pm},
		"flink-unaligned-rescale":         {"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out},
		"flink-unaligned-convert-flink":   {"convert", s, "--path-map", pm, "--to", "flink", "--output", out},
		"flink-unaligned-convert-fs":      {"convert", s, "--path-map", pm, "--to", "filesystem", "--output", out},
		"flink-unaligned-keys-delete":     {"keys", "delete", s, "--path-map", pm, "--operator", "cep", "--key", "c-1", "--output", out},
		"flink-unaligned-rescale-dry-run": {"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out, "--dry-run"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			runGoldenReplacing(t, name, strings.NewReplacer(out, "OUT").Replace, args...)
		})
	}
}
