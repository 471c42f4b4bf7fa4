package rocksstate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// BenchmarkFirstCheckpointVsCopy measures the checkpointer side by side
// with plain copies of the same files, in one run, and reports the ratios
// as metrics (it asserts no timing). Its size is STATEUTIL_BENCH_BYTES
// (default 64 MiB; make bench uses 1 GiB) of keyed state:
// compareValueBytes random, incompressible values under int64 keys
// (rockstest.KVOperator's single value state).

const compareValueBytes = 1000

// syncAll flushes every dirty page, so a timed section does not pay for
// earlier writes (as scripts/bench.sh syncs before each timed command).
func syncAll() { syscall.Sync() }

// BenchmarkFirstCheckpointVsCopy checks the claim "checkpoint upload of a
// RocksDB subtask to local disk at 50% or more of a plain copy of the same
// files; a second checkpoint after a 1% change uploads at most 10% of the
// first one's bytes".
//
// One subtask instance holds the state, flushed and fully compacted (so no
// background compaction runs while timing). Each iteration:
//
//   - upload: Incremental.Checkpoint (flush, RocksDB checkpoint, copy with
//     CRC32C and fsync of every file, _metadata) into a fresh local root;
//   - cp: `cp -r` of a RocksDB checkpoint of the same instance (the same
//     files), then an fsync of every copied file and the directory, as the
//     upload does;
//   - gocopy: the same files copied by io.Copy with an fsync per file and
//     of the directory (copyFile), the upload's own I/O pattern without
//     its checksums and metadata (cp writes every file before the syncs,
//     the upload syncs file by file; the two patterns can differ in speed,
//     so both baselines are reported);
//
// The three rotate which runs first, iteration by iteration (with
// -benchtime 1x the upload runs first); then:
//
//   - 1% of the keys get new values and a second Checkpoint goes to the
//     same root (not timed: its bytes are the figure);
//   - untimed: the roots are removed and the instance compacted again.
//
// Every timed section starts after a sync and read files the page cache
// holds. Metrics: upload-MB/s, cp-MB/s and gocopy-MB/s (bytes written
// over time), upload/cp and upload/gocopy (speed ratios; the claim is
// >= 0.5 of a plain copy), second/first (uploaded bytes of the second
// checkpoint over the first's; the claim is <= 0.1) and first-MiB.
func BenchmarkFirstCheckpointVsCopy(b *testing.B) {
	ctx := context.Background()
	size := rockstest.BenchBytes(b)
	keys := int(size/compareValueBytes) + 1
	op := rockstest.KVOperator(1, 128)
	inc := newIncremental(b, 1)
	in, err := inc.Open(op, 0, keygroup.RangeOf(op.MaxParallelism, 1, 0))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	val := make([]byte, compareValueBytes)
	put := func(i int) {
		key := snapshot.EncodeInt64(int64(i))
		kg, _ := testReg.Codecs.KeyGroupOf(tInt64, key, op.MaxParallelism)
		rng.Read(val)
		if err := in.Put(&snapshot.Entry{KeyGroup: kg, State: "kv", Key: key, Value: val}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range keys {
		put(i)
	}
	settle := func() {
		if err := in.DB().Flush(); err != nil {
			b.Fatal(err)
		}
		in.DB().Compact()
		syncAll()
	}
	settle()
	work := b.TempDir()
	pick := rand.New(rand.NewPCG(5, 6))
	var upT, cpT, goT time.Duration
	var upBytes, cpBytes, first, second int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		root := filepath.Join(work, fmt.Sprintf("root-%d", i)) // fresh: a new registry
		src := filepath.Join(work, "rocksdb-checkpoint")
		if err := in.DB().Checkpoint(src); err != nil {
			b.Fatal(err)
		}
		dst := filepath.Join(work, "cp")
		var res1 *CheckpointResult
		upload := func() {
			syncAll()
			b.StartTimer()
			start := time.Now()
			var err error
			if res1, err = inc.Checkpoint(ctx, root, "job", 1); err != nil {
				b.Fatal(err)
			}
			upT += time.Since(start)
			b.StopTimer()
			upBytes += res1.UploadedBytes
			first += res1.UploadedBytes
		}
		plainCopy := func() {
			os.RemoveAll(dst)
			syncAll()
			b.StartTimer()
			start := time.Now()
			cpBytes += copyTree(b, src, dst)
			cpT += time.Since(start)
			b.StopTimer()
		}
		goCopy := func() {
			ents, err := os.ReadDir(src)
			if err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(dst)
			syncAll()
			b.StartTimer()
			start := time.Now()
			if err := os.Mkdir(dst, 0o755); err != nil {
				b.Fatal(err)
			}
			for _, e := range ents {
				copyFile(b, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
			}
			if err := rocksdb.SyncPath(dst); err != nil {
				b.Fatal(err)
			}
			goT += time.Since(start)
			b.StopTimer()
		}
		// Rotate the order, so no side always runs first.
		runs := []func(){upload, plainCopy, goCopy}
		for j := range runs {
			runs[(i+j)%len(runs)]()
		}

		for range keys / 100 {
			put(pick.IntN(keys))
		}
		res2, err := inc.Checkpoint(ctx, root, "job", 2)
		if err != nil {
			b.Fatal(err)
		}
		second += res2.UploadedBytes
		for _, d := range []string{root, src, dst} {
			if err := os.RemoveAll(d); err != nil {
				b.Fatal(err)
			}
		}
		if i < b.N-1 {
			settle()
		}
		b.StartTimer()
	}
	b.StopTimer()
	upMBps := float64(upBytes) / 1e6 / upT.Seconds()
	cpMBps := float64(cpBytes) / 1e6 / cpT.Seconds()
	b.ReportMetric(float64(first)/float64(b.N)/(1<<20), "first-MiB")
	b.ReportMetric(upMBps, "upload-MB/s")
	b.ReportMetric(cpMBps, "cp-MB/s")
	goMBps := float64(cpBytes) / 1e6 / goT.Seconds()
	b.ReportMetric(goMBps, "gocopy-MB/s")
	b.ReportMetric(upMBps/cpMBps, "upload/cp")
	b.ReportMetric(upMBps/goMBps, "upload/gocopy")
	b.ReportMetric(float64(second)/float64(first), "second/first")
}

// copyTree runs `cp -r src dst`, then fsyncs every file it wrote and the
// directory, and returns the bytes copied.
func copyTree(b *testing.B, src, dst string) int64 {
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp -r: %v: %s", err, out)
	}
	ents, err := os.ReadDir(dst)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dst, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if fi, err := f.Stat(); err == nil {
			n += fi.Size()
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	if err := rocksdb.SyncPath(dst); err != nil {
		b.Fatal(err)
	}
	return n
}
