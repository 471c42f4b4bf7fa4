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
	return corpusCheckpoint(t, "flink-witness", "2.3.0", name)
}

// corpusCheckpoint is witnessCheckpoint of the checked-in corpus
// testdata/CORPUS and a Flink version.
func corpusCheckpoint(t *testing.T, corpus, version, name string) (snap, pathMap string) {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", corpus))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == name && e.Manifest.FlinkVersion == version {
			old, now := e.PathMap()
			return e.SnapshotDir(), old + "=" + now
		}
	}
	t.Fatalf("testdata/%s/%s has no %s", corpus, version, name)
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
// subtask and channel, and verify checks them. convert --to flink carries
// them into the savepoint, whose inspect shows the same channels and
// whose verify finds them sound, of Flink 2.3's checkpoints of the cep,
// zoo and sqlbatch jobs (records in flight) and of sqlevents (empty
// channels), of
// Flink 1.20's of cep, and of Flink 2.3's of cep whose channel state is in
// a file (testdata/flink-inflight): into files of the savepoint; so do
// edits of operators that hold none, and a rescale that keeps every
// operator's parallelism. Every other copy refuses them (exit 4), saying
// why: rescaled, even only an operator whose channels hold none, to
// another format, for the other Flink major, edits of an operator that
// holds them, an operator removed. The steps run in order: an inspect reads
// what the convert before it wrote.
func TestGoldenUnaligned(t *testing.T) {
	s, pm := unalignedCheckpoint(t)
	zoo, zooPM := witnessCheckpoint(t, "zoo-hashmap-checkpoint-unaligned")
	events, eventsPM := witnessCheckpoint(t, "sqlevents-hashmap-checkpoint-unaligned")
	batch, batchPM := witnessCheckpoint(t, "sqlbatch-hashmap-checkpoint-unaligned")
	files, filesPM := corpusCheckpoint(t, "flink-inflight", "2.3.0", "cep-hashmap-checkpoint-unaligned")
	zooDir := filepath.Join("..", "testdata", "flink-witness", "2.3.0", "zoo-hashmap-checkpoint-unaligned")
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	steps := []struct {
		name string
		args []string
	}{
		{"flink-unaligned-inspect", []string{"inspect", s, "--path-map", pm}},
		{"flink-unaligned-inspect-json", []string{"inspect", s, "--path-map", pm, "-o", "json"}},
		{"flink-unaligned-verify", []string{"verify", s, "--path-map", pm}},
		{"flink-unaligned-convert-flink", []string{"convert", s, "--path-map", pm, "--to", "flink", "--output", out("cep")}},
		{"flink-unaligned-converted-inspect", []string{"inspect", out("cep")}},
		{"flink-unaligned-converted-verify", []string{"verify", out("cep")}},
		{"flink-unaligned-convert-flink-json", []string{"convert", s, "--path-map", pm, "--to", "flink", "--verify", "-o", "json", "--output", out("cep-json")}},
		{"flink-unaligned-convert-zoo", []string{"convert", zoo, "--path-map", zooPM, "--kryo-classes", filepath.Join(zooDir, "kryo-classes.txt"),
			"--proto-descriptors", filepath.Join(zooDir, "descriptors.pb"), "--to", "flink", "--verify", "--output", out("zoo")}},
		{"flink-unaligned-converted-zoo-inspect", []string{"inspect", out("zoo")}},
		{"flink-unaligned-convert-sqlevents", []string{"convert", events, "--path-map", eventsPM, "--to", "flink", "--verify", "--output", out("sqlevents")}},
		{"flink-unaligned-converted-sqlevents-inspect", []string{"inspect", out("sqlevents")}},
		{"flink-unaligned-convert-sqlbatch", []string{"convert", batch, "--path-map", batchPM, "--to", "flink", "--verify", "--output", out("sqlbatch")}},
		{"flink-unaligned-converted-sqlbatch-inspect", []string{"inspect", out("sqlbatch")}},
		{"flink-unaligned-convert-120", []string{"convert", flinkUnaligned120, "--to", "flink", "--verify", "--output", out("cep-1.20")}},
		{"flink-unaligned-converted-120-inspect", []string{"inspect", out("cep-1.20")}},
		{"flink-unaligned-files-inspect", []string{"inspect", files, "--path-map", filesPM}},
		{"flink-unaligned-files-convert", []string{"convert", files, "--path-map", filesPM, "--to", "flink", "--verify", "--output", out("files")}},
		{"flink-unaligned-files-converted-inspect", []string{"inspect", out("files")}},
		{"flink-unaligned-files-converted-verify", []string{"verify", out("files")}},
		{"flink-unaligned-state-drop-elsewhere", []string{"state", "drop", s, "--path-map", pm, "--operator", "source", "--state", "SourceReaderState", "--output", out("dropped")}},
		{"flink-unaligned-rescale", []string{"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out("x")}},
		{"flink-unaligned-rescale-dry-run", []string{"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out("x"), "--dry-run"}},
		{"flink-unaligned-rescale-same", []string{"rescale", s, "--path-map", pm, "--parallelism", "2", "--verify", "--output", out("same")}},
		{"flink-unaligned-rescaled-same-inspect", []string{"inspect", out("same")}},
		{"flink-unaligned-rescale-operator", []string{"rescale", s, "--path-map", pm, "--operator", "out-cep=3", "--output", out("x")}},
		{"flink-unaligned-convert-fs", []string{"convert", s, "--path-map", pm, "--to", "filesystem", "--output", out("x")}},
		{"flink-unaligned-convert-1.20", []string{"convert", s, "--path-map", pm, "--to", "flink", "--flink-version", "1.20", "--output", out("x")}},
		{"flink-unaligned-keys-delete", []string{"keys", "delete", s, "--path-map", pm, "--operator", "cep", "--key", "c-1", "--output", out("x")}},
		{"flink-unaligned-operator-remove", []string{"operator", "remove", s, "--path-map", pm, "--operator", "out-cep", "--output", out("x")}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			runGoldenReplacing(t, st.name, strings.NewReplacer(dir, "OUT").Replace, st.args...)
		})
	}
}
