package runtime

import (
	"context"
	"errors"
	"github.com/stateutil/stateutil/runtime/runtimetest"
	"slices"
	"testing"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// keyedContext is a subtask context over a fresh heap backend owning every
// key group, scoped to key "k".
func keyedContext(t *testing.T) (*Context, *runtimetest.ManualClock) {
	t.Helper()
	clock := runtimetest.NewManualClock(t0)
	c := &Context{Operator: "op", MaxParallelism: 128, clock: clock, backend: NewHeapBackend(keygroup.Range{Start: 0, End: 127})}
	c.setKey("k", keygroup.OfHash(keygroup.HashString("k"), 128))
	return c, clock
}

// forBackends runs fn with a subtask context scoped to key "k" over a
// fresh heap backend and a fresh RocksDB backend, each owning every key
// group. start must be called once every state is registered (the
// RocksDB backend opens its instance then, as a running job's does).
func forBackends(t *testing.T, fn func(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func())) {
	t.Run("heap", func(t *testing.T) {
		c, clock := keyedContext(t)
		fn(t, c, clock, func() {})
	})
	t.Run("rocksdb", func(t *testing.T) {
		c, clock := keyedContext(t)
		c.backend = newTestRocksDBBackend(t, keygroup.Range{Start: 0, End: 127})
		fn(t, c, clock, func() {
			t.Helper()
			if err := c.backend.Start(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// newTestRocksDBBackend is a RocksDB keyed backend of subtask 0 of an
// operator with max parallelism 128, owning kgs, in a session of its own.
func newTestRocksDBBackend(t testing.TB, kgs keygroup.Range) *RocksDBBackend {
	t.Helper()
	s, err := RocksDBStateBackend{LocalDir: t.TempDir()}.session(1, testReg.Storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	op := &snapshot.Operator{ID: "0123456789abcdef0123456789abcdef", UID: "op", Parallelism: 1, MaxParallelism: 128}
	be, err := s.NewKeyedBackend(SubtaskInfo{Operator: op, KeyGroups: kgs})
	if err != nil {
		t.Fatal(err)
	}
	return be.(*RocksDBBackend)
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

func TestRunStateScopedToKey(t *testing.T) { forBackends(t, testStateScopedToKey) }

func testStateScopedToKey(t *testing.T, c *Context, _ *runtimetest.ManualClock, start func()) {
	v := must[*ValueState[string]](t)(GetValueState(c, ValueStateDescriptor[string]{Name: "v", Serializer: StringSerializer{}}))
	start()
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

func TestRunStateKinds(t *testing.T) { forBackends(t, testStateKinds) }

func testStateKinds(t *testing.T, c *Context, _ *runtimetest.ManualClock, start func()) {
	l := must[*ListState[int64]](t)(GetListState(c, ListStateDescriptor[int64]{Name: "l", Serializer: Int64Serializer{}}))
	m := must[*MapState[string, int64]](t)(GetMapState(c, MapStateDescriptor[string, int64]{Name: "m", KeySerializer: StringSerializer{}, ValueSerializer: Int64Serializer{}}))
	r := must[*ReducingState[int64]](t)(GetReducingState(c, ReducingStateDescriptor[int64]{Name: "r", Serializer: Int64Serializer{}, Reduce: func(a, b int64) int64 { return max(a, b) }}))
	a := must[*AggregatingState[int64, avgAcc, float64]](t)(GetAggregatingState(c, AggregatingStateDescriptor[int64, avgAcc, float64]{Name: "a", Serializer: MsgpackSerializer[avgAcc]{}, Aggregator: avg{}}))
	start()
	for _, v := range []int64{3, 1, 2} {
		if err := l.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := must[[]int64](t)(l.Get()); !slices.Equal(got, []int64{3, 1, 2}) {
		t.Fatalf("list: %v", got)
	}
	_ = m.Put("b", 2)
	_ = m.Put("a", 1)
	_ = m.Put("", 0) // the empty user key is a user key
	_ = m.Remove("b")
	if es := must[[]MapEntry[string, int64]](t)(m.Entries()); len(es) != 2 || es[0] != (MapEntry[string, int64]{"", 0}) || es[1] != (MapEntry[string, int64]{"a", 1}) {
		t.Fatalf("map: %v", es)
	}
	if got, ok, _ := m.Get(""); !ok || got != 0 {
		t.Fatalf("map user key \"\": %d %v", got, ok)
	}
	if _, ok, _ := m.Get("b"); ok {
		t.Fatal("removed map user key b is still there")
	}
	for _, v := range []int64{4, 9, 2} {
		_ = r.Add(v)
	}
	if got, ok, _ := r.Get(); !ok || got != 9 {
		t.Fatalf("reducing: %d %v", got, ok)
	}
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
	if err := m.Clear(); err != nil {
		t.Fatal(err)
	}
	if es := must[[]MapEntry[string, int64]](t)(m.Entries()); len(es) != 0 {
		t.Fatalf("cleared map: %v", es)
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
		forBackends(t, func(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func()) {
			testTTLUpdateType(t, c, clock, start, tc.update, tc.alive)
		})
	}
}

func testTTLUpdateType(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func(), update snapshot.UpdateType, alive bool) {
	v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{},
		TTL: &TTLConfig{TTL: time.Minute, Update: update}}))
	start()
	_ = v.Update(7)
	clock.Advance(40 * time.Second)
	if _, ok, _ := v.Value(); !ok {
		t.Fatalf("%s: expired after 40s of a 1m TTL", update)
	}
	clock.Advance(40 * time.Second)
	if _, ok, _ := v.Value(); ok != alive {
		t.Fatalf("%s: alive at 80s = %v, want %v", update, ok, alive)
	}
}

func TestRunTTLVisibility(t *testing.T) {
	for _, vis := range []snapshot.Visibility{snapshot.NeverReturnExpired, snapshot.ReturnExpiredIfNotCleanedUp} {
		forBackends(t, func(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func()) {
			testTTLVisibility(t, c, clock, start, vis)
		})
	}
}

func testTTLVisibility(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func(), vis snapshot.Visibility) {
	ttl := &TTLConfig{TTL: time.Minute, Visibility: vis}
	v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{}, TTL: ttl}))
	l := must[*ListState[int64]](t)(GetListState(c, ListStateDescriptor[int64]{Name: "l", Serializer: Int64Serializer{}, TTL: ttl}))
	m := must[*MapState[string, int64]](t)(GetMapState(c, MapStateDescriptor[string, int64]{Name: "m", KeySerializer: StringSerializer{}, ValueSerializer: Int64Serializer{}, TTL: ttl}))
	start()
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

func TestRunTTLDroppedOnSnapshot(t *testing.T) { forBackends(t, testTTLDroppedOnSnapshot) }

func testTTLDroppedOnSnapshot(t *testing.T, c *Context, clock *runtimetest.ManualClock, start func()) {
	v := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "v", Serializer: Int64Serializer{}, TTL: &TTLConfig{TTL: time.Minute}}))
	keep := must[*ValueState[int64]](t)(GetValueState(c, ValueStateDescriptor[int64]{Name: "keep", Serializer: Int64Serializer{}}))
	start()
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
