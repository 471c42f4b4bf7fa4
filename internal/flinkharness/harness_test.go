package flinkharness

import (
	"context"
	"errors"
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
