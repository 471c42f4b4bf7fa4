// Package rockstest is keyed state for the tests of the rocksdb format and
// of the runtime's RocksDB checkpointer: operators, generated entries, and
// comparisons of entries.
package rockstest

import (
	"bufio"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

var (
	tString = snapshot.Type{Name: snapshot.TypeString}
	tInt64  = snapshot.Type{Name: snapshot.TypeInt64}
	tVoid   = snapshot.Type{Name: snapshot.TypeVoid}
	tBytes  = snapshot.Type{Name: snapshot.TypeBytes}
)

// codecs hashes keys to key groups as Flink does.
var codecs = snapshot.NewCodecs()

// Operator has all five keyed state kinds, TTL on two, fixed and
// variable namespaces, and operator state.
func Operator(id string, p, maxP int) *snapshot.Operator {
	ttl := &snapshot.TTL{TTLMillis: 60_000, Update: snapshot.OnCreateAndWrite, Visibility: snapshot.NeverReturnExpired}
	return &snapshot.Operator{
		ID: id, UID: "uid-" + id, Name: "op " + id, Parallelism: p, MaxParallelism: maxP,
		KeyedStates: []snapshot.KeyedState{
			{Name: "counts", Kind: snapshot.Value, KeyType: tString, NamespaceType: tVoid, ValueType: tInt64},
			{Name: "events", Kind: snapshot.List, KeyType: tString, NamespaceType: tString, ValueType: tBytes, TTL: ttl},
			{Name: "attrs", Kind: snapshot.Map, KeyType: tString, NamespaceType: tVoid, UserKeyType: tString, ValueType: tBytes, TTL: ttl},
			{Name: "sum", Kind: snapshot.Reducing, KeyType: tString, NamespaceType: tInt64, ValueType: tInt64},
			{Name: "agg", Kind: snapshot.Aggregating, KeyType: tString, NamespaceType: tVoid, ValueType: tBytes},
		},
		OperatorStates: []snapshot.OperatorState{{Name: "offsets", Mode: snapshot.Split, ElementType: tBytes}},
	}
}

// Entries generates n keys' worth of entries for every state of op,
// grouped by subtask, each subtask's in key-group order.
func Entries(t testing.TB, op *snapshot.Operator, n int, seed uint64) [][]snapshot.Entry {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]snapshot.Entry, op.Parallelism)
	for i := range n {
		key := []byte(fmt.Sprintf("user-%d", i))
		kg, err := codecs.KeyGroupOf(tString, key, op.MaxParallelism)
		if err != nil {
			t.Fatal(err)
		}
		sub := keygroup.SubtaskOf(kg, op.MaxParallelism, op.Parallelism)
		base := snapshot.Entry{KeyGroup: kg, Key: key}
		add := func(e snapshot.Entry) { out[sub] = append(out[sub], e) }
		e := base
		e.State, e.Value = "counts", snapshot.EncodeInt64(int64(i))
		add(e)
		for j := range 1 + i%3 {
			e := base
			e.State, e.Namespace = "events", []byte(fmt.Sprintf("win-%d", i%4))
			e.Value = []byte(fmt.Sprintf("ev,%d,%d", i, j)) // a ',' inside a value
			e.ExpiresAt = 1_700_000_000_000 + int64(j)
			add(e)
		}
		for j := range i % 3 {
			e := base
			e.State, e.UserKey = "attrs", []byte(fmt.Sprintf("attr-%d", j))
			e.Value = RandBytes(r, 5+j)
			e.ExpiresAt = 1_700_000_100_000
			add(e)
		}
		e = base
		e.State, e.Namespace, e.Value = "sum", snapshot.EncodeInt64(int64(i%5)), snapshot.EncodeInt64(int64(i*7))
		add(e)
		if i%2 == 0 {
			e = base
			e.State, e.Value = "agg", RandBytes(r, 16)
			add(e)
		}
	}
	for _, es := range out {
		slices.SortStableFunc(es, func(a, b snapshot.Entry) int { return a.KeyGroup - b.KeyGroup })
	}
	return out
}

// RandBytes is n bytes of r.
func RandBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Canonical sorts entries by key group, state, key, namespace and user
// key, keeping list elements in list order.
func Canonical(es []snapshot.Entry) []snapshot.Entry {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b snapshot.Entry) int {
		return cmp.Or(a.KeyGroup-b.KeyGroup, cmp.Compare(a.State, b.State), slices.Compare(a.Key, b.Key),
			slices.Compare(a.Namespace, b.Namespace), slices.Compare(a.UserKey, b.UserKey))
	})
	return es
}

// Collect reads seq, cloning each entry, and fails t at an error.
func Collect(t testing.TB, seq snapshot.Entries) []snapshot.Entry {
	t.Helper()
	var out []snapshot.Entry
	for e, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Clone())
	}
	return out
}

// SameEntries fails t unless want and got hold the same entries, in any
// order but with list elements in list order (see Canonical).
func SameEntries(t testing.TB, what string, want, got []snapshot.Entry) {
	t.Helper()
	want, got = Canonical(want), Canonical(got)
	if len(want) != len(got) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !want[i].Equal(&got[i]) {
			t.Fatalf("%s: entry %d is\n%+v\nwant\n%+v", what, i, got[i], want[i])
		}
	}
}

// vmRSS is the process's resident set in KiB, from /proc/self/status.
func vmRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Skip("VmRSS not reported")
	return 0
}

// RSSAcross runs cycle warmup times (allocator arenas and caches settle),
// then loops times more, and returns VmRSS in KiB before and after those.
func RSSAcross(t *testing.T, warmup, loops int, cycle func(i int)) (before, after int64) {
	measure := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		return vmRSS(t)
	}
	for i := range warmup {
		cycle(i)
	}
	before = measure()
	for i := range loops {
		cycle(i)
	}
	return before, measure()
}

// KVOperator is a single value state with int64 keys.
func KVOperator(p, maxP int) *snapshot.Operator {
	return &snapshot.Operator{ID: "0c0d", Parallelism: p, MaxParallelism: maxP,
		KeyedStates: []snapshot.KeyedState{{Name: "kv", Kind: snapshot.Value, KeyType: tInt64, NamespaceType: tVoid, ValueType: tBytes}}}
}

// PutKV puts keys [from, to) of KVOperator state op, with random values
// of size bytes from r, each through put with the subtask its key group
// belongs to.
func PutKV(t testing.TB, op *snapshot.Operator, from, to, size int, r *rand.Rand, put func(sub int, e *snapshot.Entry) error) {
	t.Helper()
	for i := from; i < to; i++ {
		key := snapshot.EncodeInt64(int64(i))
		kg, err := codecs.KeyGroupOf(tInt64, key, op.MaxParallelism)
		if err != nil {
			t.Fatal(err)
		}
		e := snapshot.Entry{KeyGroup: kg, State: "kv", Key: key, Value: RandBytes(r, size)}
		if err := put(keygroup.SubtaskOf(kg, op.MaxParallelism, op.Parallelism), &e); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchBytes is the keyed state the size-dependent benchmarks work on:
// STATEUTIL_BENCH_BYTES, default 64 MiB.
func BenchBytes(b *testing.B) int64 {
	if s := os.Getenv("STATEUTIL_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("STATEUTIL_BENCH_BYTES=%q: want a positive number of bytes", s)
		}
		return n
	}
	return 64 << 20
}

// Tool is the path of one of RocksDB's own tools (ldb, sst_dump), the
// witnesses of the tests that compare with RocksDB; deps.sh installs them.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found (install rocksdb-tools): the RocksDB witness test needs it", name)
	}
	return p
}

// Run runs a tool and returns its output, failing the test if it fails.
func Run(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}
