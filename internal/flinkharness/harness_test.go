package flinkharness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBasicSnapshotRestore is real Flink as the witness of the harness itself:
// a canonical savepoint of the basic job, restored by Flink at another
// parallelism and with the other backend, must give back exactly the state the
// job dumped while Flink took it; and Flink must refuse it at another max
// parallelism, with its own message.
func TestBasicSnapshotRestore(t *testing.T) {
	Require(t)
	v := Versions()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := t.TempDir()

	snap, dump, err := Snapshot(ctx, v, SnapshotOptions{
		Job: "basic", Backend: "rocksdb", Kind: "canonical", Records: 200, Dir: filepath.Join(dir, "out"),
	})
	if err != nil {
		t.Fatal(err)
	}
	written, err := ReadDump(dump)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, l := range written {
		kinds[l.Kind]++
	}
	for _, k := range []string{"value", "list", "map", "reducing", "aggregating", "timer", "split", "union", "broadcast"} {
		if kinds[k] == 0 {
			t.Errorf("the job's dump has no %s line (kinds: %v)", k, kinds)
		}
	}

	restored, err := RestoreDump(ctx, v, RestoreOptions{
		Job: "basic", Snapshot: snap, Backend: "hashmap", Parallelism: 3, Records: 200,
		Dump: filepath.Join(dir, "restore.jsonl"),
	})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadDump(restored)
	if err != nil {
		t.Fatal(err)
	}
	if d := EqualDumps(written, back); d != "" {
		t.Fatalf("Flink %s restored other state than the job dumped:\n%s", v, d)
	}

	_, err = RestoreDump(ctx, v, RestoreOptions{
		Job: "basic", Snapshot: snap, Backend: "hashmap", MaxParallelism: 256, Records: 200,
		Dump: filepath.Join(dir, "refused.jsonl"),
	})
	var he *Error
	if !errors.As(err, &he) {
		t.Fatalf("restore at max parallelism 256 of a 128 savepoint: want a harness error, got %v", err)
	}
	if !strings.Contains(strings.ToLower(he.Message), "max parallelism") {
		t.Fatalf("Flink's refusal does not name the max parallelism: %q", he.Message)
	}
}

// TestInFlightBytes reads the records in flight of checked-in witness
// snapshots with Flink's channel state reader: the unaligned checkpoint of
// cep holds some (its buffers are inside its _metadata, so fewer bytes
// than that); that of sqlevents lists 40 channels whose buffers are all
// empty; an aligned savepoint holds none.
func TestInFlightBytes(t *testing.T) {
	Require(t)
	entries, err := ReadCorpus(filepath.Join(RepoRoot(), "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	checked := 0
	for _, e := range entries {
		if e.Manifest.FlinkVersion != "2.3.0" {
			continue
		}
		if e.Manifest.Unaligned != strings.HasSuffix(e.Name, "-unaligned") {
			t.Errorf("%s: manifest says unaligned %v", e.Name, e.Manifest.Unaligned)
		}
		switch e.Name {
		case "cep-hashmap-checkpoint-unaligned", "sqlevents-hashmap-checkpoint-unaligned", "cep-hashmap-canonical":
		default:
			continue
		}
		checked++
		n, err := InFlightBytes(ctx, e.Manifest.FlinkVersion, e.SnapshotDir())
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		md, err := os.Stat(filepath.Join(e.SnapshotDir(), "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		if full := e.Name == "cep-hashmap-checkpoint-unaligned"; full != (n > 0) || n >= md.Size() {
			t.Errorf("%s: %d bytes in flight (its _metadata has %d)", e.Name, n, md.Size())
		}
	}
	if checked != 3 {
		t.Fatalf("checked %d of the 3 snapshots", checked)
	}
}
