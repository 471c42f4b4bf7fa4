package cmd

import (
	"context"
	"runtime"
	"testing"

	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
)

// Commands running at once share one raise, undone when the last ends;
// a GOMAXPROCS variable is left to rule.
func TestMoreProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	base := runtime.GOMAXPROCS(0)
	want := base + min(base, 4)
	first, second := moreProcs(), moreProcs()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("raised to %d, want %d", got, want)
	}
	first()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("%d after one of two ended, want %d still", got, want)
	}
	second()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("%d after both ended, want %d again", got, base)
	}
	t.Setenv("GOMAXPROCS", "3")
	restore := moreProcs()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Errorf("raised to %d although GOMAXPROCS is set", got)
	}
	restore()
}

// Only reads that go through RocksDB's C code get the raise: Flink's
// native RocksDB snapshots and the rocksdb format, not canonical
// savepoints (of either backend) or heap checkpoints.
func TestOpensRocksDB(t *testing.T) {
	for entry, want := range map[string]bool{
		"basic-rocksdb-native":                   true,
		"basic-rocksdb-canonical-compressed":     false,
		"basic-hashmap-canonical":                false,
		"heapkryo-hashmap-checkpoint-compressed": false,
	} {
		r, err := testReg.Open(context.Background(), flinkSnapshot(t, "1.20.5", entry), snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := opensRocksDB(r.Snapshot()); got != want {
			t.Errorf("%s: opensRocksDB %v, want %v (properties %v)", entry, got, want, r.Snapshot().Properties)
		}
		r.Close()
	}
	if !opensRocksDB(&snapshot.Snapshot{Format: rocksdb.FormatName}) {
		t.Error("the rocksdb format does not open RocksDB")
	}
}
