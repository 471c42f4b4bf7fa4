package rocksdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

const benchKeys = 20_000

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
