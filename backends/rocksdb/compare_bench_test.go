package rocksdb

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// The benchmark in this file measures stateutil side by side with a plain
// tool doing the same work on the same bytes, in one run, and reports the
// ratio as a metric (it asserts no timing); runtime/rocksstate has the
// checkpoint upload's. Its size is STATEUTIL_BENCH_BYTES (default 64 MiB;
// make bench uses 1 GiB) of keyed state: compareValueBytes random,
// incompressible values under int64 keys (rockstest.KVOperator's single
// value state).

const compareValueBytes = 1000

// compareKeys is how many compareValueBytes values make size bytes.
func compareKeys(size int64) int { return int(size/compareValueBytes) + 1 }

// writeCompareSavepoint writes a one-subtask savepoint of op (a KVOperator)
// holding keys random values, in key-group order, without holding them in
// memory.
func writeCompareSavepoint(b *testing.B, loc string, op *snapshot.Operator, keys int) {
	ctx := context.Background()
	byKG := make([][]int64, op.MaxParallelism)
	for i := range keys {
		key := snapshot.EncodeInt64(int64(i))
		kg, _ := testReg.Codecs.KeyGroupOf(tInt64, key, op.MaxParallelism)
		byKG[kg] = append(byKG[kg], int64(i))
	}
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	sw, err := w.Subtask(ctx, op, 0, keygroup.RangeOf(op.MaxParallelism, 1, 0))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{4, 5, 6})
	val := make([]byte, compareValueBytes)
	for kg, ids := range byKG {
		for _, id := range ids {
			rng.Read(val)
			e := snapshot.Entry{KeyGroup: kg, State: "kv", Key: snapshot.EncodeInt64(id), Value: val}
			if err := sw.Entry(&e); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := sw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(ctx, &snapshot.Snapshot{JobID: "job", Kind: snapshot.Savepoint, Operators: []*snapshot.Operator{op}}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScanVsLdb checks the claim "entry scan for inspect --key-groups
// at 50% or more of ldb scan's speed on the same DB".
//
// A savepoint (max parallelism 4096, one subtask) is opened with the
// Reader, which checks the subtask's files and links them into its
// temporary directory; that first open is not timed (inspect pays it
// once, ldb has nothing like it). Each iteration then times:
//
//   - stateutil: every entry of the subtask through Reader.Entries, what
//     inspect --key-groups does when the figures are not recorded (keys
//     decoded, values sliced, block checksums verified);
//   - ldb: `ldb --db=DIR --secondary_path=TMP --column_family=CF scan` for
//     each keyed state's column family, on the very directory the reader
//     opened, output to /dev/null. Raw output (no --hex): ldb prints every
//     key and value once, the least work that still reads them all, so the
//     comparison does not flatter stateutil with hex encoding. The
//     secondary instance opens the directory without writing into it (a
//     plain ldb open would write a new MANIFEST, OPTIONS and LOG there).
//     Its time includes ldb's process start and database open.
//
// ldb's entry count is checked once, untimed, with --no_value --key_hex.
// Metrics: stateutil-entries/s, ldb-entries/s and stateutil/ldb (the
// claim is >= 0.5).
func BenchmarkScanVsLdb(b *testing.B) {
	ldb, err := exec.LookPath("ldb")
	if err != nil {
		b.Skip("ldb (rocksdb-tools) is not installed")
	}
	ctx := context.Background()
	size := rockstest.BenchBytes(b)
	keys := compareKeys(size)
	op := rockstest.KVOperator(1, 4096)
	op.ID = "0b"
	loc := filepath.Join(b.TempDir(), "sp")
	writeCompareSavepoint(b, loc, op, keys)
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	rop := r.Snapshot().Operators[0]
	all := keygroup.Range{Start: 0, End: rop.MaxParallelism - 1}
	for _, err := range r.Entries(ctx, rop, 0, keygroup.Range{Start: 0, End: 0}) {
		if err != nil {
			b.Fatal(err)
		}
	}
	rd, ok := r.(*reader)
	if !ok || rd.tmp == nil {
		b.Fatal("the reader opened no local directory")
	}
	dir := filepath.Join(rd.tmp.Path, rocksdbformat.SubtaskDirName(rop.ID, 0))
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		b.Fatal(err)
	}
	secondary := b.TempDir()
	ldbScan := func(cf string, extra ...string) *exec.Cmd {
		args := append([]string{"--db=" + dir, "--secondary_path=" + secondary, "--column_family=" + cf, "scan"}, extra...)
		return exec.Command(ldb, args...)
	}
	count := func() int64 {
		var n int64
		for _, err := range r.Entries(ctx, rop, 0, all) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		return n
	}
	entries := count()
	if entries != int64(keys) {
		b.Fatalf("reader scanned %d entries, want %d", entries, keys)
	}
	var ldbEntries int64
	for _, ks := range rop.KeyedStates {
		out, err := ldbScan(ks.Name, "--no_value", "--key_hex").Output()
		if err != nil {
			b.Fatalf("ldb scan: %v", err)
		}
		for _, c := range out {
			if c == '\n' {
				ldbEntries++
			}
		}
	}
	if ldbEntries != entries {
		b.Fatalf("ldb scanned %d keys, the reader %d entries", ldbEntries, entries)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	var ourT, ldbT time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if n := count(); n != entries {
			b.Fatalf("scanned %d entries, then %d", entries, n)
		}
		ourT += time.Since(start)

		start = time.Now()
		for _, ks := range rop.KeyedStates {
			cmd := ldbScan(ks.Name)
			cmd.Stdout = devNull
			cmd.Stderr = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatalf("ldb scan: %v", err)
			}
		}
		ldbT += time.Since(start)
	}
	b.StopTimer()
	ours := float64(entries) * float64(b.N) / ourT.Seconds()
	theirs := float64(entries) * float64(b.N) / ldbT.Seconds()
	b.ReportMetric(float64(entries), "entries")
	b.ReportMetric(ours, "stateutil-entries/s")
	b.ReportMetric(theirs, "ldb-entries/s")
	b.ReportMetric(ours/theirs, "stateutil/ldb")
}
