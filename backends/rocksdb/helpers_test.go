package rocksdb

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

// testOperator has all five keyed state kinds, TTL on two, fixed and
// variable namespaces, and operator state.
func testOperator(id string, p, maxP int) *snapshot.Operator {
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

// testEntries generates n keys' worth of entries for every state of op,
// grouped by subtask, each subtask's in key-group order.
func testEntries(t testing.TB, op *snapshot.Operator, n int, seed uint64) [][]snapshot.Entry {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]snapshot.Entry, op.Parallelism)
	for i := range n {
		key := []byte(fmt.Sprintf("user-%d", i))
		kg, err := testReg.Codecs.KeyGroupOf(tString, key, op.MaxParallelism)
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
			e.Value = randBytes(r, 5+j)
			e.ExpiresAt = 1_700_000_100_000
			add(e)
		}
		e = base
		e.State, e.Namespace, e.Value = "sum", snapshot.EncodeInt64(int64(i%5)), snapshot.EncodeInt64(int64(i*7))
		add(e)
		if i%2 == 0 {
			e = base
			e.State, e.Value = "agg", randBytes(r, 16)
			add(e)
		}
	}
	for _, es := range out {
		slices.SortStableFunc(es, func(a, b snapshot.Entry) int { return a.KeyGroup - b.KeyGroup })
	}
	return out
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// canonical sorts entries by key group, state, key, namespace and user
// key, keeping list elements in list order.
func canonical(es []snapshot.Entry) []snapshot.Entry {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b snapshot.Entry) int {
		return cmp.Or(a.KeyGroup-b.KeyGroup, cmp.Compare(a.State, b.State), slices.Compare(a.Key, b.Key),
			slices.Compare(a.Namespace, b.Namespace), slices.Compare(a.UserKey, b.UserKey))
	})
	return es
}

func collect(t testing.TB, seq snapshot.Entries) []snapshot.Entry {
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

func sameEntries(t testing.TB, what string, want, got []snapshot.Entry) {
	t.Helper()
	want, got = canonical(want), canonical(got)
	if len(want) != len(got) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !want[i].Equal(&got[i]) {
			t.Fatalf("%s: entry %d is\n%+v\nwant\n%+v", what, i, got[i], want[i])
		}
	}
}

// writeSnapshot writes op's entries with the format's Writer.
func writeSnapshot(t testing.TB, loc string, op *snapshot.Operator, entries [][]snapshot.Entry) {
	t.Helper()
	ctx := context.Background()
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeSubtasks(t, w, op, entries, func(sw snapshot.SubtaskWriter, i int) error {
		for j := range 3 {
			if err := sw.Element("offsets", []byte(fmt.Sprintf("p%d-%d", i, j))); err != nil {
				return err
			}
		}
		return sw.Raw(snapshot.RawState{Keyed: []byte{byte(i)}})
	})
	s := &snapshot.Snapshot{JobID: "job", CheckpointID: 7, Kind: snapshot.Savepoint, Operators: []*snapshot.Operator{op}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// writeSubtasks writes subtask i's entries, then whatever more adds to it,
// and closes it, for every subtask in entries.
func writeSubtasks(t testing.TB, w snapshot.Writer, op *snapshot.Operator, entries [][]snapshot.Entry, more func(sw snapshot.SubtaskWriter, i int) error) {
	t.Helper()
	for i, es := range entries {
		sw, err := w.Subtask(context.Background(), op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
		if err != nil {
			t.Fatal(err)
		}
		for j := range es {
			if err := sw.Entry(&es[j]); err != nil {
				t.Fatal(err)
			}
		}
		if err := more(sw, i); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
