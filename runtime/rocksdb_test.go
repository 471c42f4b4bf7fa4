package runtime

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// TestRunRocksDBBackendMatchesHeap drives the heap and the RocksDB keyed
// backends with the same random operations on every state kind, with and
// without TTL, and expects the same answer to every read (point reads,
// merged lists, map prefix scans) and the same final snapshot.
func TestRunRocksDBBackendMatchesHeap(t *testing.T) {
	kgs := keygroup.Range{Start: 10, End: 20}
	ttl := &TTLConfig{TTL: time.Minute}
	descs := []StateDescriptor{
		{Name: "value", Kind: snapshot.Value, ValueType: snapshot.Type{Name: snapshot.TypeBytes}},
		{Name: "value-ttl", Kind: snapshot.Value, ValueType: snapshot.Type{Name: snapshot.TypeBytes}, TTL: ttl},
		{Name: "list", Kind: snapshot.List, ValueType: snapshot.Type{Name: snapshot.TypeBytes}},
		{Name: "list-ttl", Kind: snapshot.List, ValueType: snapshot.Type{Name: snapshot.TypeBytes}, TTL: ttl},
		{Name: "map", Kind: snapshot.Map, UserKeyType: snapshot.Type{Name: snapshot.TypeString}, ValueType: snapshot.Type{Name: snapshot.TypeBytes}},
		{Name: "map-ttl", Kind: snapshot.Map, UserKeyType: snapshot.Type{Name: snapshot.TypeString}, ValueType: snapshot.Type{Name: snapshot.TypeBytes}, TTL: ttl},
		{Name: "reducing", Kind: snapshot.Reducing, ValueType: snapshot.Type{Name: snapshot.TypeBytes}},
		{Name: "aggregating", Kind: snapshot.Aggregating, ValueType: snapshot.Type{Name: snapshot.TypeBytes}, TTL: ttl},
	}
	heap := NewHeapBackend(kgs)
	rocks := newTestRocksDBBackend(t, kgs)
	ids := make([]StateID, len(descs))
	for i, d := range descs {
		hid, err := heap.Register(d)
		if err != nil {
			t.Fatal(err)
		}
		rid, err := rocks.Register(d)
		if err != nil || rid != hid {
			t.Fatalf("register %s: id %d (%v), heap's %d", d.Name, rid, err, hid)
		}
		ids[i] = hid
	}
	if err := rocks.Start(); err != nil {
		t.Fatal(err)
	}
	// Keys that share key groups, and one ("k" then "k\x00") that is a
	// prefix of another: a map's prefix scan must not mix them up.
	keys := []string{"k", "k\x00", "kk", "a", "", "long-key-long-key"}
	userKeys := []string{"", "u", "u\x00", "v", "\xff"}
	r := rand.New(rand.NewPCG(7, 8))
	cell := func(d StateDescriptor) Cell {
		c := Cell{Value: []byte(fmt.Sprintf("v%d", r.IntN(1000)))}
		if r.IntN(5) == 0 {
			c.Value = []byte{}
		}
		if d.TTL != nil {
			c.ExpiresAt = r.Int64N(2_000) - 1_000 // now = 0: about half expired
		}
		return c
	}
	found := 0 // reads that found something: the test must not pass on empty state
	for step := range 4000 {
		i := r.IntN(len(descs))
		d, id := descs[i], ids[i]
		key := keys[r.IntN(len(keys))]
		kg := kgs.Start + r.IntN(kgs.Len())
		uk := userKeys[r.IntN(len(userKeys))]
		where := fmt.Sprintf("step %d: state %s key %q kg %d", step, d.Name, key, kg)
		var got, want any
		var gerr, werr error
		switch d.Kind {
		case snapshot.Value, snapshot.Reducing, snapshot.Aggregating:
			switch r.IntN(4) {
			case 0:
				c := cell(d)
				werr, gerr = heap.Put(id, kg, key, c), rocks.Put(id, kg, key, c)
			case 1:
				werr, gerr = heap.Clear(id, kg, key), rocks.Clear(id, kg, key)
			default:
				wc, wok, err1 := heap.Get(id, kg, key)
				gc, gok, err2 := rocks.Get(id, kg, key)
				want, got, werr, gerr = fmt.Sprint(wok, normCell(wc)), fmt.Sprint(gok, normCell(gc)), err1, err2
			}
		case snapshot.List:
			switch r.IntN(5) {
			case 0, 1:
				c := cell(d)
				werr, gerr = heap.AppendList(id, kg, key, c), rocks.AppendList(id, kg, key, c)
			case 2:
				var cs []Cell
				for range r.IntN(3) {
					cs = append(cs, cell(d))
				}
				werr, gerr = heap.PutList(id, kg, key, cs), rocks.PutList(id, kg, key, cs)
			case 3:
				werr, gerr = heap.Clear(id, kg, key), rocks.Clear(id, kg, key)
			default:
				wl, err1 := heap.GetList(id, kg, key)
				gl, err2 := rocks.GetList(id, kg, key)
				want, got, werr, gerr = normCells(wl), normCells(gl), err1, err2
			}
		case snapshot.Map:
			where += fmt.Sprintf(" user key %q", uk)
			switch r.IntN(6) {
			case 0, 1:
				c := cell(d)
				werr, gerr = heap.MapPut(id, kg, key, uk, c), rocks.MapPut(id, kg, key, uk, c)
			case 2:
				werr, gerr = heap.MapRemove(id, kg, key, uk), rocks.MapRemove(id, kg, key, uk)
			case 3:
				werr, gerr = heap.Clear(id, kg, key), rocks.Clear(id, kg, key)
			case 4:
				wc, wok, err1 := heap.MapGet(id, kg, key, uk)
				gc, gok, err2 := rocks.MapGet(id, kg, key, uk)
				want, got, werr, gerr = fmt.Sprint(wok, normCell(wc)), fmt.Sprint(gok, normCell(gc)), err1, err2
			default:
				wm, err1 := heap.MapEntries(id, kg, key)
				gm, err2 := rocks.MapEntries(id, kg, key)
				want, got, werr, gerr = normMap(wm), normMap(gm), err1, err2
			}
		}
		if werr != nil || gerr != nil {
			t.Fatalf("%s: heap error %v, rocksdb error %v", where, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: rocksdb read\n%v\nheap read\n%v", where, got, want)
		}
		if w, ok := want.([]string); (ok && len(w) > 0) || (want != nil && !ok && want.(string)[:4] == "true") {
			found++
		}
	}
	t.Logf("%d reads found something", found)
	if found < 300 {
		t.Fatalf("only %d reads found anything", found)
	}
	// Every state with TTL: half the entries are expired at 0.
	for _, now := range []int64{0, -1 << 62} {
		wc, gc := &collector{}, &collector{}
		if err := heap.Snapshot(context.Background(), wc, now); err != nil {
			t.Fatal(err)
		}
		if err := rocks.Snapshot(context.Background(), gc, now); err != nil {
			t.Fatal(err)
		}
		want, got := snapshotOf(wc), snapshotOf(gc)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("snapshot at %d: rocksdb has %d entries, heap %d:\n%v\n%v", now, len(got), len(want), got, want)
		}
	}
}

// normCell prints a cell; nil and empty values are alike.
func normCell(c Cell) string { return fmt.Sprintf("%q@%d", c.Value, c.ExpiresAt) }

func normCells(cs []Cell) []string {
	var out []string
	for _, c := range cs {
		out = append(out, normCell(c))
	}
	return out
}

func normMap(ms []MapCell) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%q=%s", m.UserKey, normCell(m.Cell)))
	}
	return out
}

// snapshotOf lists a snapshot's entries by key group, state, key and user
// key, list elements in list order.
func snapshotOf(c *collector) []string {
	es := slices.Clone(c.entries)
	slices.SortStableFunc(es, func(a, b digestEntry) int {
		return cmp.Or(a.e.KeyGroup-b.e.KeyGroup, cmp.Compare(a.e.State, b.e.State), bytes.Compare(a.e.Key, b.e.Key), bytes.Compare(a.e.UserKey, b.e.UserKey))
	})
	out := make([]string, len(es))
	for i, d := range es {
		out[i] = fmt.Sprintf("%d/%s/%q/%q=%q@%d", d.e.KeyGroup, d.e.State, d.e.Key, d.e.UserKey, d.e.Value, d.e.ExpiresAt)
	}
	return out
}
