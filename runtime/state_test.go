package runtime

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// keyedContext is a subtask context over a fresh heap backend owning every
// key group, scoped to key "k".
func keyedContext(t *testing.T) (*Context, *ManualClock) {
	t.Helper()
	clock := NewManualClock(t0)
	c := &Context{Operator: "op", MaxParallelism: 128, clock: clock, backend: NewHeapBackend(keygroup.Range{Start: 0, End: 127})}
	c.setKey("k", keygroup.OfHash(keygroup.HashString("k"), 128))
	return c, clock
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestRunStateKeyedOnly(t *testing.T) {
	c := &Context{Operator: "source", clock: SystemClock{}}
	_, err := GetValueState(c, ValueStateDescriptor[int64]{Name: "n", Serializer: Int64Serializer{}})
	if !errors.Is(err, ErrNotKeyed) {
		t.Fatalf("value state outside a keyed operator: got %v, want ErrNotKeyed", err)
	}
	kc, _ := keyedContext(t)
	kc.clearKey()
	v := must[*ValueState[int64]](t)(GetValueState(kc, ValueStateDescriptor[int64]{Name: "n", Serializer: Int64Serializer{}}))
	if _, _, err := v.Value(); !errors.Is(err, ErrNoCurrentKey) {
		t.Fatalf("read without a current key: got %v, want ErrNoCurrentKey", err)
	}
	kc.sealed = true
	if _, err := GetListState(kc, ListStateDescriptor[int64]{Name: "late", Serializer: Int64Serializer{}}); !errors.Is(err, ErrStateDescriptor) {
		t.Fatalf("state registered after Open: got %v, want ErrStateDescriptor", err)
	}
	if _, err := GetListState(kc, ListStateDescriptor[int64]{Name: "n", Serializer: Int64Serializer{}}); !errors.Is(err, ErrStateDescriptor) {
		t.Fatalf("same name, other kind: got %v, want ErrStateDescriptor", err)
	}
}

func TestRunStateScopedToKey(t *testing.T) {
	c, _ := keyedContext(t)
	v := must[*ValueState[string]](t)(GetValueState(c, ValueStateDescriptor[string]{Name: "v", Serializer: StringSerializer{}}))
	if err := v.Update("for k"); err != nil {
		t.Fatal(err)
	}
	c.setKey("other", keygroup.OfHash(keygroup.HashString("other"), 128))
	if _, ok, _ := v.Value(); ok {
		t.Fatal("key other sees key k's value")
	}
	c.setKey("k", keygroup.OfHash(keygroup.HashString("k"), 128))
	if got, ok, _ := v.Value(); !ok || got != "for k" {
		t.Fatalf("key k: got %q %v", got, ok)
	}
}

func TestRunStateKinds(t *testing.T) {
	c, _ := keyedContext(t)
	l := must[*ListState[int64]](t)(GetListState(c, ListStateDescriptor[int64]{Name: "l", Serializer: Int64Serializer{}}))
	for _, v := range []int64{3, 1, 2} {
		if err := l.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := must[[]int64](t)(l.Get()); !slices.Equal(got, []int64{3, 1, 2}) {
		t.Fatalf("list: %v", got)
	}
	m := must[*MapState[string, int64]](t)(GetMapState(c, MapStateDescriptor[string, int64]{Name: "m", KeySerializer: StringSerializer{}, ValueSerializer: Int64Serializer{}}))
	_ = m.Put("b", 2)
	_ = m.Put("a", 1)
	_ = m.Remove("b")
	if es := must[[]MapEntry[string, int64]](t)(m.Entries()); len(es) != 1 || es[0] != (MapEntry[string, int64]{"a", 1}) {
		t.Fatalf("map: %v", es)
	}
	r := must[*ReducingState[int64]](t)(GetReducingState(c, ReducingStateDescriptor[int64]{Name: "r", Serializer: Int64Serializer{}, Reduce: func(a, b int64) int64 { return max(a, b) }}))
	for _, v := range []int64{4, 9, 2} {
		_ = r.Add(v)
	}
	if got, ok, _ := r.Get(); !ok || got != 9 {
		t.Fatalf("reducing: %d %v", got, ok)
	}
	a := must[*AggregatingState[int64, avgAcc, float64]](t)(GetAggregatingState(c, AggregatingStateDescriptor[int64, avgAcc, float64]{Name: "a", Serializer: MsgpackSerializer[avgAcc]{}, Aggregator: avg{}}))
	for _, v := range []int64{1, 2, 6} {
		_ = a.Add(v)
	}
	if got, ok, _ := a.Get(); !ok || got != 3 {
		t.Fatalf("aggregating: %v %v", got, ok)
	}
	if err := l.Clear(); err != nil {
		t.Fatal(err)
	}
	if got := must[[]int64](t)(l.Get()); got != nil {
		t.Fatalf("cleared list: %v", got)
	}
}

type avgAcc struct{ Sum, N int64 }
type avg struct{}

func (avg) Zero() avgAcc                 { return avgAcc{} }
func (avg) Add(a avgAcc, v int64) avgAcc { return avgAcc{a.Sum + v, a.N + 1} }
func (avg) Result(a avgAcc) float64      { return float64(a.Sum) / float64(a.N) }

func TestRunTTLUpdateTypes(t *testing.T) {
	for _, tc := range []struct {
		update snapshot.UpdateType
		alive  bool // after write, read at 40s, read at 80s
	}{{snapshot.OnCreateAndWrite, false}, {snapshot.OnReadAndWrite, true}} {
		c, clock := keyedContext(t)
		v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{},
			TTL: &TTLConfig{TTL: time.Minute, Update: tc.update}}))
		_ = v.Update(7)
		clock.Advance(40 * time.Second)
		if _, ok, _ := v.Value(); !ok {
			t.Fatalf("%s: expired after 40s of a 1m TTL", tc.update)
		}
		clock.Advance(40 * time.Second)
		if _, ok, _ := v.Value(); ok != tc.alive {
			t.Fatalf("%s: alive at 80s = %v, want %v", tc.update, ok, tc.alive)
		}
	}
}

func TestRunTTLVisibility(t *testing.T) {
	for _, vis := range []snapshot.Visibility{snapshot.NeverReturnExpired, snapshot.ReturnExpiredIfNotCleanedUp} {
		c, clock := keyedContext(t)
		ttl := &TTLConfig{TTL: time.Minute, Visibility: vis}
		v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{}, TTL: ttl}))
		l := must[*ListState[int64]](t)(GetListState(c, ListStateDescriptor[int64]{Name: "l", Serializer: Int64Serializer{}, TTL: ttl}))
		m := must[*MapState[string, int64]](t)(GetMapState(c, MapStateDescriptor[string, int64]{Name: "m", KeySerializer: StringSerializer{}, ValueSerializer: Int64Serializer{}, TTL: ttl}))
		_ = v.Update(1)
		_ = l.Add(1)
		_ = m.Put("x", 1)
		clock.Advance(30 * time.Second)
		_ = l.Add(2) // younger element
		clock.Advance(31 * time.Second)
		returned := vis == snapshot.ReturnExpiredIfNotCleanedUp
		if _, ok, _ := v.Value(); ok != returned {
			t.Fatalf("%s: expired value returned = %v", vis, ok)
		}
		if _, ok, _ := v.Value(); ok {
			t.Fatalf("%s: expired value still there after the read cleaned it up", vis)
		}
		want := []int64{2}
		if returned {
			want = []int64{1, 2}
		}
		if got := must[[]int64](t)(l.Get()); !slices.Equal(got, want) {
			t.Fatalf("%s: list %v, want %v", vis, got, want)
		}
		if got := must[[]int64](t)(l.Get()); !slices.Equal(got, []int64{2}) {
			t.Fatalf("%s: list after cleanup %v", vis, got)
		}
		if _, ok, _ := m.Get("x"); ok != returned {
			t.Fatalf("%s: expired map entry returned = %v", vis, ok)
		}
		if es := must[[]MapEntry[string, int64]](t)(m.Entries()); len(es) != 0 {
			t.Fatalf("%s: map after cleanup %v", vis, es)
		}
	}
}

func TestRunTTLDroppedOnSnapshot(t *testing.T) {
	c, clock := keyedContext(t)
	v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{}, TTL: &TTLConfig{TTL: time.Minute}}))
	keep := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "keep", Serializer: Int64Serializer{}}))
	_ = v.Update(1)
	_ = keep.Update(2)
	col := &collector{}
	clock.Advance(2 * time.Minute)
	if err := c.backend.Snapshot(context.Background(), col, clock.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if len(col.entries) != 1 || col.entries[0].e.State != "keep" {
		t.Fatalf("snapshot kept %d entries: %+v", len(col.entries), col.entries)
	}
	if col.entries[0].e.ExpiresAt != 0 {
		t.Fatal("entry without TTL has an expiry")
	}
}
