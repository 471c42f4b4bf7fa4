package filesystem

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// fixture is a snapshot built in the test together with every entry,
// element and raw blob it should hold.
type fixture struct {
	snap     *snapshot.Snapshot
	entries  map[string][][]snapshot.Entry // op id -> subtask -> entries in write order
	elements map[string][][]snapshot.Element
	raw      map[string][]snapshot.RawState
}

var (
	strType  = snapshot.Type{Name: snapshot.TypeString}
	voidType = snapshot.Type{Name: snapshot.TypeVoid}
	i64Type  = snapshot.Type{Name: snapshot.TypeInt64}
)

// newFixture builds three operators: one with all five keyed state kinds
// (one with TTL), a source with operator state in all three modes, and a
// third with keyed, operator and raw state. keys scales the keyed state.
func newFixture(maxP, keys int) *fixture {
	f := &fixture{entries: map[string][][]snapshot.Entry{}, elements: map[string][][]snapshot.Element{}, raw: map[string][]snapshot.RawState{}}
	keyed := &snapshot.Operator{
		ID: "0000000000000000000000000000000a", UID: "keyed", Name: "Keyed", Parallelism: 3, MaxParallelism: maxP,
		KeyedStates: []snapshot.KeyedState{
			{Name: "count", Kind: snapshot.Value, KeyType: strType, NamespaceType: voidType, ValueType: i64Type},
			{Name: "events", Kind: snapshot.List, KeyType: strType, NamespaceType: voidType, ValueType: strType},
			{Name: "seen", Kind: snapshot.Map, KeyType: strType, NamespaceType: i64Type, UserKeyType: strType, ValueType: i64Type,
				TTL: &snapshot.TTL{TTLMillis: 60000, Update: snapshot.OnCreateAndWrite, Visibility: snapshot.NeverReturnExpired}},
			{Name: "sum", Kind: snapshot.Reducing, KeyType: strType, NamespaceType: voidType, ValueType: i64Type},
			{Name: "avg", Kind: snapshot.Aggregating, KeyType: strType, NamespaceType: voidType, ValueType: snapshot.Type{Name: snapshot.TypeBytes}},
		},
	}
	source := &snapshot.Operator{
		ID: "0000000000000000000000000000000b", UID: "source", Name: "Source", Parallelism: 2, MaxParallelism: maxP,
		OperatorStates: []snapshot.OperatorState{
			{Name: "offsets", Mode: snapshot.Split, ElementType: strType},
			{Name: "topics", Mode: snapshot.Union, ElementType: strType},
			{Name: "rules", Mode: snapshot.Broadcast, ElementType: strType},
		},
	}
	mixed := &snapshot.Operator{
		ID: "0000000000000000000000000000000c", Name: "Mixed", Parallelism: 2, MaxParallelism: maxP,
		KeyedStates:    []snapshot.KeyedState{{Name: "v", Kind: snapshot.Value, KeyType: i64Type, NamespaceType: voidType, ValueType: strType}},
		OperatorStates: []snapshot.OperatorState{{Name: "buf", Mode: snapshot.Split, ElementType: strType}},
	}
	f.snap = &snapshot.Snapshot{JobID: "job", CheckpointID: 7, Kind: snapshot.Checkpoint,
		Created: time.UnixMilli(1700000000000).UTC(), Operators: []*snapshot.Operator{keyed, source, mixed}}

	f.entries[keyed.ID] = make([][]snapshot.Entry, keyed.Parallelism)
	for k := range keys {
		key := fmt.Appendf(nil, "user-%d", k)
		kg, _ := testReg.Codecs.KeyGroupOf(strType, key, maxP)
		sub := keygroup.SubtaskOf(kg, maxP, keyed.Parallelism)
		es := []snapshot.Entry{
			{KeyGroup: kg, State: "count", Key: key, Value: snapshot.EncodeInt64(int64(k))},
			{KeyGroup: kg, State: "sum", Key: key, Value: snapshot.EncodeInt64(int64(k * 3))},
		}
		for j := range k % 3 {
			es = append(es, snapshot.Entry{KeyGroup: kg, State: "events", Key: key, Value: fmt.Appendf(nil, "ev%d", j)})
		}
		for j := range k % 4 {
			es = append(es, snapshot.Entry{KeyGroup: kg, State: "seen", Key: key, Namespace: snapshot.EncodeInt64(int64(j)),
				UserKey: fmt.Appendf(nil, "u%d", j), Value: snapshot.EncodeInt64(1), ExpiresAt: 1700000060000 + int64(j)})
		}
		if k%5 == 0 {
			es = append(es, snapshot.Entry{KeyGroup: kg, State: "avg", Key: key, Value: []byte{}})
		}
		f.entries[keyed.ID][sub] = append(f.entries[keyed.ID][sub], es...)
	}
	f.entries[mixed.ID] = make([][]snapshot.Entry, mixed.Parallelism)
	for k := range keys / 2 {
		key := snapshot.EncodeInt64(int64(k))
		kg, _ := testReg.Codecs.KeyGroupOf(i64Type, key, maxP)
		sub := keygroup.SubtaskOf(kg, maxP, mixed.Parallelism)
		f.entries[mixed.ID][sub] = append(f.entries[mixed.ID][sub], snapshot.Entry{KeyGroup: kg, State: "v", Key: key, Value: []byte("x")})
	}
	for _, es := range f.entries {
		for _, sub := range es {
			slices.SortStableFunc(sub, func(a, b snapshot.Entry) int { return cmp.Compare(a.KeyGroup, b.KeyGroup) })
		}
	}

	f.elements[source.ID] = [][]snapshot.Element{
		{{State: "rules", Value: []byte("r=1")}, {State: "offsets", Value: []byte("p0:100")}, {State: "topics", Value: []byte("in")},
			{State: "offsets", Value: []byte("p1:7")}, {State: "rules", Value: []byte{}}},
		{{State: "offsets", Value: []byte("p2:42")}, {State: "topics", Value: []byte("in")}, {State: "rules", Value: []byte("r=1")}},
	}
	f.elements[mixed.ID] = [][]snapshot.Element{{{State: "buf", Value: []byte("pending")}}, nil}
	f.raw[mixed.ID] = []snapshot.RawState{{Keyed: []byte("raw-keyed-0"), Operator: []byte("raw-op-0")}, {Operator: []byte("raw-op-1")}}
	return f
}

// write stores the fixture at dir of st.
func (f *fixture) write(t testing.TB, st storage.Storage, dir string, opts snapshot.WriteOptions) {
	t.Helper()
	ctx := context.Background()
	w, err := Create(ctx, st, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range f.snap.Operators {
		for i := range op.Parallelism {
			sw, err := w.Subtask(ctx, op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
			if err != nil {
				t.Fatal(err)
			}
			if es := f.entries[op.ID]; es != nil {
				for j := range es[i] {
					if err := sw.Entry(&es[i][j]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if els := f.elements[op.ID]; els != nil {
				for _, el := range els[i] {
					if err := sw.Element(el.State, el.Value); err != nil {
						t.Fatal(err)
					}
				}
			}
			if raw := f.raw[op.ID]; raw != nil {
				if err := sw.Raw(raw[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := sw.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Commit(ctx, f.snap); err != nil {
		t.Fatal(err)
	}
}

// readEverything reads every entry, element and raw blob of r and returns
// the first error.
func readEverything(r *Reader) error {
	ctx := context.Background()
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, err := range r.Entries(ctx, op, sub.Index, keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return err
				}
			}
			if _, err := r.Raw(ctx, op, sub.Index); err != nil {
				return err
			}
		}
	}
	return nil
}
