package rocksstate

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
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
