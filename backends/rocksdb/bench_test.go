package rocksdb

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

const benchKeys = 20_000

// benchIncremental is a checkpointer holding benchKeys 200-byte values,
// already checkpointed once.
func benchIncremental(b *testing.B) (*Incremental, *snapshot.Operator, string) {
	op := rockstest.KVOperator(1, 128)
	inc := newIncremental(b, 1)
	fillKV(b, inc, op, 0, benchKeys, 200, rand.New(rand.NewPCG(7, 8)))
	root := b.TempDir()
	if _, err := inc.Checkpoint(context.Background(), root, "job", 1); err != nil {
		b.Fatal(err)
	}
	return inc, op, root
}

// BenchmarkCheckpointIncremental changes 1% of the keys and checkpoints:
// only new SSTs and the small private files are uploaded.
func BenchmarkCheckpointIncremental(b *testing.B) {
	inc, op, root := benchIncremental(b)
	r := rand.New(rand.NewPCG(9, 10))
	var uploaded, total int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		fillKV(b, inc, op, 0, benchKeys/100, 200, r)
		b.StartTimer()
		res, err := inc.Checkpoint(context.Background(), root, "job", int64(i+2))
		if err != nil {
			b.Fatal(err)
		}
		uploaded += res.UploadedBytes
		total += res.Bytes
	}
	b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
	b.ReportMetric(float64(total)/float64(b.N), "state-B/op")
}

// BenchmarkCheckpointPlainCopy copies every file of the same instance's
// RocksDB checkpoint, what a non-incremental snapshot (or cp) does.
func BenchmarkCheckpointPlainCopy(b *testing.B) {
	inc, _, _ := benchIncremental(b)
	in := inc.Instances()[0]
	cp := filepath.Join(b.TempDir(), "cp")
	if err := in.DB().Checkpoint(cp); err != nil {
		b.Fatal(err)
	}
	ents, _ := os.ReadDir(cp)
	var size int64
	for _, e := range ents {
		fi, _ := e.Info()
		size += fi.Size()
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		dst := filepath.Join(b.TempDir(), "copy")
		os.MkdirAll(dst, 0o755)
		for _, e := range ents {
			copyFile(b, filepath.Join(cp, e.Name()), filepath.Join(dst, e.Name()))
		}
	}
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
	out.Close()
}

// benchReader is a savepoint with maxP 4096, already downloaded.
func benchReader(b *testing.B) (snapshot.Reader, *snapshot.Operator) {
	ctx := context.Background()
	op := rockstest.Operator("0b", 1, 4096)
	loc := filepath.Join(b.TempDir(), "sp")
	writeSnapshot(b, loc, op, rockstest.Entries(b, op, benchKeys, 3))
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	rop := r.Snapshot().Operators[0]
	for range r.Entries(ctx, rop, 0, keygroup.Range{Start: 0, End: 0}) {
	}
	return r, rop
}

func benchScan(b *testing.B, kgs keygroup.Range) {
	r, op := benchReader(b)
	ctx := context.Background()
	b.ResetTimer()
	var n, bytes int64
	for range b.N {
		for e, err := range r.Entries(ctx, op, 0, kgs) {
			if err != nil {
				b.Fatal(err)
			}
			n++
			bytes += e.Size()
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "entries/op")
	b.SetBytes(bytes / int64(b.N))
}

// BenchmarkKeyGroupScan reads 64 of 4096 key groups.
func BenchmarkKeyGroupScan(b *testing.B) { benchScan(b, keygroup.Range{Start: 1000, End: 1063}) }

// BenchmarkFullScan reads every key group, for comparison.
func BenchmarkFullScan(b *testing.B) { benchScan(b, keygroup.Range{Start: 0, End: 4095}) }
