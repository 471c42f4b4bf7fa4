package filesystem

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// benchBytes is the keyed state the benchmarks write and read:
// STATEUTIL_BENCH_BYTES, default 64 MiB (1 GiB for the make bench run).
func benchBytes(b *testing.B) int64 {
	if s := os.Getenv("STATEUTIL_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("STATEUTIL_BENCH_BYTES=%q", s)
		}
		return n
	}
	return 64 << 20
}

var benchOp = &snapshot.Operator{
	ID: "00000000000000000000000000000001", UID: "bench", Parallelism: 1, MaxParallelism: 128,
	KeyedStates: []snapshot.KeyedState{{Name: "v", Kind: snapshot.Value, KeyType: i64Type, NamespaceType: voidType, ValueType: snapshot.Type{Name: snapshot.TypeBytes}}},
}

// writeBench writes one subtask of ~size bytes of 100-byte values, spread
// evenly over the key groups, and returns the keyed file's path.
func writeBench(b *testing.B, dir string, size int64) string {
	ctx := context.Background()
	w, err := Create(ctx, storage.Local(), dir, snapshot.WriteOptions{Force: true})
	if err != nil {
		b.Fatal(err)
	}
	return writeBenchTo(b, w, dir, size)
}

func writeBenchTo(b *testing.B, w *Writer, dir string, size int64) string {
	ctx := context.Background()
	kgs := keygroup.RangeOf(benchOp.MaxParallelism, 1, 0)
	sw, err := w.Subtask(ctx, benchOp, 0, kgs)
	if err != nil {
		b.Fatal(err)
	}
	key, value := make([]byte, 8), make([]byte, 100)
	perEntry := int64(len(key) + len(value) + 3)
	perKG := size / perEntry / int64(kgs.Len())
	e := snapshot.Entry{State: "v", Key: key, Value: value}
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		e.KeyGroup = kg
		for i := range perKG {
			binary.BigEndian.PutUint64(key, uint64(i))
			if err := sw.Entry(&e); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := sw.Close(); err != nil {
		b.Fatal(err)
	}
	s := &snapshot.Snapshot{JobID: "bench", Operators: []*snapshot.Operator{benchOp}}
	if err := w.Commit(ctx, s); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, s.Operators[0].Subtasks[0].Files[0].Path)
}

// BenchmarkWriteRead writes, reads, and (for comparison with cp) copies a
// one-subtask snapshot of STATEUTIL_BENCH_BYTES of keyed state.
func BenchmarkWriteRead(b *testing.B) {
	size := benchBytes(b)
	dir := filepath.Join(b.TempDir(), "chk-1")
	var file string
	b.Run("write", func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			file = writeBench(b, dir, size)
		}
	})
	if file == "" {
		file = writeBench(b, dir, size)
	}
	b.Run("read", func(b *testing.B) {
		b.SetBytes(size)
		ctx := context.Background()
		for range b.N {
			r, err := Open(ctx, storage.Local(), dir, snapshot.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			op := r.Snapshot().Operators[0]
			var n int64
			for e, err := range r.Entries(ctx, op, 0, op.Subtasks[0].KeyGroups) {
				if err != nil {
					b.Fatal(err)
				}
				n += e.Size()
			}
			if n == 0 {
				b.Fatal("read nothing")
			}
		}
	})
	for _, sync := range []bool{false, true} {
		b.Run("copy/sync="+strconv.FormatBool(sync), func(b *testing.B) { benchCopy(b, file, size, sync) })
	}
}

// benchCopy copies file as cp does (cp does not fsync; Commit does).
func benchCopy(b *testing.B, file string, size int64, sync bool) {
	b.SetBytes(size)
	for range b.N {
		src, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := os.Create(file + ".copy")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			b.Fatal(err)
		}
		if sync {
			dst.Sync()
		}
		src.Close()
		dst.Close()
		os.Remove(file + ".copy")
	}
}
