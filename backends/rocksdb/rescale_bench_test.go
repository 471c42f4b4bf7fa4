package rocksdb

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// benchValueBytes is the size of the benchmark's values:
// STATEUTIL_BENCH_VALUE_BYTES, default 100.
func benchValueBytes(b *testing.B) int {
	if s := os.Getenv("STATEUTIL_BENCH_VALUE_BYTES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			b.Fatalf("STATEUTIL_BENCH_VALUE_BYTES=%q: want at least 2", s)
		}
		return n
	}
	return 100
}

// benchRescaleSource writes a rocksdb snapshot of parallelism 2, max
// parallelism 128, holding about size bytes of keyed state: per key a
// value, a 3-element list with TTL and a 2-entry map, values of
// benchValueBytes (half random, half text, so they compress somewhat).
func benchRescaleSource(b *testing.B, size int64) string {
	n := benchValueBytes(b)
	ttl := &snapshot.TTL{TTLMillis: 60_000, Update: snapshot.OnCreateAndWrite, Visibility: snapshot.NeverReturnExpired}
	op := &snapshot.Operator{ID: "0b0e", UID: "bench", Parallelism: 2, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{
			{Name: "value", Kind: snapshot.Value, KeyType: tString, NamespaceType: tVoid, ValueType: tBytes},
			{Name: "list", Kind: snapshot.List, KeyType: tString, NamespaceType: tVoid, ValueType: tBytes, TTL: ttl},
			{Name: "map", Kind: snapshot.Map, KeyType: tString, NamespaceType: tVoid, UserKeyType: tString, ValueType: tBytes},
		},
		OperatorStates: []snapshot.OperatorState{{Name: "offsets", Mode: snapshot.Split, ElementType: tBytes}},
	}
	r := rand.New(rand.NewPCG(11, 12))
	value := func(i int) []byte {
		v := fmt.Appendf(rockstest.RandBytes(r, n/2), "payload-%0*d", n, i)
		return v[:n]
	}
	var all []snapshot.Entry
	var total int64
	for i := 0; total < size; i++ {
		key := fmt.Appendf(nil, "user-%08d", i)
		kg, err := testReg.Codecs.KeyGroupOf(tString, key, op.MaxParallelism)
		if err != nil {
			b.Fatal(err)
		}
		add := func(e snapshot.Entry) {
			e.KeyGroup, e.Key = kg, key
			all = append(all, e)
			total += e.Size()
		}
		add(snapshot.Entry{State: "value", Value: value(i)})
		for j := range 3 {
			add(snapshot.Entry{State: "list", Value: value(j), ExpiresAt: 1_767_000_000_000 + int64(j)})
		}
		for j := range 2 {
			add(snapshot.Entry{State: "map", UserKey: fmt.Appendf(nil, "field-%d", j), Value: value(i + j)})
		}
	}
	per := make([][]snapshot.Entry, op.Parallelism)
	for _, e := range all {
		i := keygroup.SubtaskOf(e.KeyGroup, op.MaxParallelism, op.Parallelism)
		per[i] = append(per[i], e)
	}
	for i := range per {
		per[i] = rockstest.Canonical(per[i])
	}
	loc := filepath.Join(b.TempDir(), "src")
	writePlain(b, loc, op, per)
	return loc
}

// BenchmarkRescale rescales the same rocksdb snapshot (parallelism 2) to
// 3 subtasks (scale out: every old subtask is split, the fast path copies
// raw key ranges) and to 1 (scale in: the fast path links one old
// instance whole), through the fast path and entry by entry, both in each
// iteration, and reports each time and the speed-up (entry-by-entry time
// over fast time), and the size of the fast path's snapshot over the
// entry-by-entry one's. Both include opening the source, downloading its
// files, planning and writing the result.
func BenchmarkRescale(b *testing.B) {
	size := rockstest.BenchBytes(b)
	src := benchRescaleSource(b, size)
	for _, p := range []int{3, 1} {
		b.Run(fmt.Sprintf("2to%d", p), func(b *testing.B) {
			b.SetBytes(size)
			var fast, slow time.Duration
			var fastOut, slowOut int64
			for range b.N {
				for _, entryByEntry := range []bool{false, true} {
					start := time.Now()
					dst, n := rescaleTo(b, src, p, entryByEntry)
					took := time.Since(start)
					if entryByEntry {
						slow += took
					} else {
						fast += took
						if n != p {
							b.Fatalf("fast path built %d subtasks, want %d", n, p)
						}
					}
					if entryByEntry {
						slowOut = treeSize(b, dst)
					} else {
						fastOut = treeSize(b, dst)
					}
					os.RemoveAll(dst)
				}
			}
			b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N), "fast-ns/op")
			b.ReportMetric(float64(slow.Nanoseconds())/float64(b.N), "entry-by-entry-ns/op")
			b.ReportMetric(float64(slow)/float64(fast), "speedup")
			b.ReportMetric(float64(fastOut)/float64(slowOut), "out-size-ratio")
		})
	}
}

// treeSize is the bytes of the files under dir.
func treeSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			var fi os.FileInfo
			if fi, err = e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
