package runtime_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
	"github.com/stateutil/stateutil/snapshot"
)

// BenchmarkRunWordCount measures records/s through wordcount, with
// checkpoints every 10000 records to the backend's format.
func BenchmarkRunWordCount(b *testing.B) {
	for _, bc := range []struct {
		name    string
		format  string
		records int64
	}{{"heap", "memory", 200_000}, {"rocksdb", "rocksdb", 20_000}} {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/p=%d", bc.name, p), func(b *testing.B) {
				var records int64
				for b.Loop() {
					job, _ := jobs.WordCount(jobs.Config{Records: bc.records, Seed: 1})
					var backend runtime.StateBackend = runtime.HeapStateBackend{}
					if bc.name == "rocksdb" {
						backend = runtime.RocksDBStateBackend{LocalDir: b.TempDir()}
					}
					res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: p, Backend: backend, Format: bc.format,
						CheckpointDir: b.TempDir(), CheckpointEvery: 10_000})
					if err != nil {
						b.Fatal(err)
					}
					records += res.Records
				}
				b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkRunCheckpoint measures one heap subtask's checkpoint (snapshot
// and commit) against its state size, for the memory and filesystem formats.
func BenchmarkRunCheckpoint(b *testing.B) {
	for _, format := range []string{"memory", "filesystem"} {
		for _, keys := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/keys=%d", format, keys), func(b *testing.B) {
				kgs := keygroup.Range{Start: 0, End: 127}
				be := runtime.NewHeapBackend(kgs)
				d := runtime.StateDescriptor{Name: "count", Kind: snapshot.Value, ValueType: snapshot.Type{Name: snapshot.TypeInt64}}
				id, err := be.Register(d)
				if err != nil {
					b.Fatal(err)
				}
				for k := range keys {
					key := fmt.Sprintf("key-%d", k)
					_ = be.Put(id, keygroup.OfHash(keygroup.HashString(key), 128), key, runtime.Cell{Value: snapshot.EncodeInt64(int64(k))})
				}
				f, _ := testReg.Lookup(format)
				op := &snapshot.Operator{ID: "00112233445566778899aabbccddeeff", UID: "counter", Parallelism: 1, MaxParallelism: 128, KeyedStates: []snapshot.KeyedState{d.KeyedState()}}
				dir := b.TempDir()
				n := 0
				for b.Loop() {
					n++
					loc := filepath.Join(dir, fmt.Sprintf("chk-%d", n))
					if format == "memory" {
						loc += ".dump"
					}
					w, err := testReg.Create(context.Background(), f, loc, snapshot.WriteOptions{StateSizeCap: 1 << 30})
					if err != nil {
						b.Fatal(err)
					}
					sw, err := w.Subtask(context.Background(), op, 0, kgs)
					if err != nil {
						b.Fatal(err)
					}
					if err := be.Snapshot(context.Background(), sw, 0); err != nil {
						b.Fatal(err)
					}
					if err := sw.Close(); err != nil {
						b.Fatal(err)
					}
					if err := w.Commit(context.Background(), &snapshot.Snapshot{JobID: "bench", CheckpointID: int64(n), Kind: snapshot.Checkpoint, Operators: []*snapshot.Operator{op}}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(keys), "keys")
			})
		}
	}
}
