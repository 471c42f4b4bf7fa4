package rocksstate

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// TestInstanceGet writes generated entries of every state kind and reads
// each back with the point lookups, which must agree with a scan.
func TestInstanceGet(t *testing.T) {
	for _, maxP := range []int{128, 4096} { // both key-group prefix widths
		op := rockstest.Operator("0a", 2, maxP)
		entries := rockstest.Entries(t, op, 60, 9)
		b := newIncremental(t, 1)
		for sub, es := range entries {
			in, err := b.Open(op, sub, keygroup.RangeOf(maxP, 2, sub))
			if err != nil {
				t.Fatal(err)
			}
			for i := range es {
				if err := in.Put(&es[i]); err != nil {
					t.Fatal(err)
				}
			}
			scanned := rockstest.Collect(t, in.Entries(context.Background(), in.KeyGroups()))
			rockstest.SameEntries(t, "scan", es, scanned)
			var got []snapshot.Entry
			seen := map[string]bool{}
			for _, e := range es {
				q := snapshot.Entry{KeyGroup: e.KeyGroup, State: e.State, Key: e.Key, Namespace: e.Namespace, UserKey: e.UserKey}
				id := e.State + "/" + string(e.Key) + "/" + string(e.Namespace)
				switch e.State {
				case "events":
					if seen[id] {
						continue
					}
					seen[id] = true
					l, err := in.GetList(&q)
					if err != nil || len(l) == 0 {
						t.Fatalf("GetList %s: %d elements, %v", id, len(l), err)
					}
					got = append(got, l...)
				case "attrs":
					x, ok, err := in.Get(&q)
					if err != nil || !ok {
						t.Fatalf("Get %s user key %q: %v %v", id, e.UserKey, ok, err)
					}
					got = append(got, x)
					if seen[id] {
						continue
					}
					seen[id] = true
					all := rockstest.Collect(t, in.MapEntries(&q))
					want := slices.DeleteFunc(slices.Clone(es), func(o snapshot.Entry) bool {
						return o.State != "attrs" || o.KeyGroup != e.KeyGroup || !bytes.Equal(o.Key, e.Key)
					})
					if len(all) != len(want) || !slices.IsSortedFunc(all, func(a, b snapshot.Entry) int { return bytes.Compare(a.UserKey, b.UserKey) }) {
						t.Fatalf("MapEntries %s: %d entries, want %d in user-key order", id, len(all), len(want))
					}
					rockstest.SameEntries(t, "MapEntries "+id, want, all)
				default:
					x, ok, err := in.Get(&q)
					if err != nil || !ok {
						t.Fatalf("Get %s: %v %v", id, ok, err)
					}
					got = append(got, x)
				}
			}
			rockstest.SameEntries(t, "point lookups", es, got)
		}
	}
}

func TestInstanceGetMissesAndErrors(t *testing.T) {
	op := rockstest.Operator("0b", 1, 128)
	b := newIncremental(t, 1)
	in, err := b.Open(op, 0, keygroup.Range{Start: 0, End: 63})
	if err != nil {
		t.Fatal(err)
	}
	e := snapshot.Entry{KeyGroup: 3, State: "attrs", Key: []byte("k"), UserKey: []byte("a"), Value: []byte("1"), ExpiresAt: 99}
	if err := in.Put(&e); err != nil {
		t.Fatal(err)
	}
	// A key that extends "k" must not see k's map entries, nor k its.
	e2 := snapshot.Entry{KeyGroup: 3, State: "attrs", Key: []byte("k\x01a"), UserKey: []byte("b"), Value: []byte("2"), ExpiresAt: 99}
	if err := in.Put(&e2); err != nil {
		t.Fatal(err)
	}
	if all := rockstest.Collect(t, in.MapEntries(&snapshot.Entry{KeyGroup: 3, State: "attrs", Key: []byte("k")})); len(all) != 1 || string(all[0].UserKey) != "a" {
		t.Fatalf("MapEntries of k: %+v", all)
	}
	for _, q := range []snapshot.Entry{
		{KeyGroup: 3, State: "attrs", Key: []byte("k"), UserKey: []byte("b")},     // other user key
		{KeyGroup: 3, State: "attrs", Key: []byte("k"), UserKey: nil},             // the empty user key
		{KeyGroup: 4, State: "attrs", Key: []byte("k"), UserKey: []byte("a")},     // other key group
		{KeyGroup: 3, State: "counts", Key: []byte("k")},                          // other state
		{KeyGroup: 3, State: "attrs", Key: []byte("k\x01"), UserKey: []byte("a")}, // other key
	} {
		if x, ok, err := in.Get(&q); ok || err != nil {
			t.Errorf("Get %+v: %+v %v %v, want a miss", q, x, ok, err)
		}
	}
	if l, err := in.GetList(&snapshot.Entry{KeyGroup: 3, State: "events", Key: []byte("k"), Namespace: []byte("w")}); l != nil || err != nil {
		t.Errorf("GetList of nothing: %v %v", l, err)
	}
	for _, tc := range []struct {
		q   snapshot.Entry
		msg string
	}{
		{snapshot.Entry{KeyGroup: 3, State: "events", Key: []byte("k")}, "read lists with GetList"},
		{snapshot.Entry{KeyGroup: 3, State: "nosuch", Key: []byte("k")}, "no keyed state"},
		{snapshot.Entry{KeyGroup: 64, State: "counts", Key: []byte("k")}, "outside subtask"},
		{snapshot.Entry{KeyGroup: 3, State: "sum", Key: []byte("k"), Namespace: []byte("short")}, "8 bytes wide"},
		{snapshot.Entry{KeyGroup: 3, State: "counts", Key: []byte("k"), UserKey: []byte("u")}, "has a user key"},
	} {
		if _, _, err := in.Get(&tc.q); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Get %+v: %v, want an error mentioning %q", tc.q, err, tc.msg)
		}
	}
	if _, err := in.GetList(&snapshot.Entry{KeyGroup: 3, State: "counts", Key: []byte("k")}); err == nil {
		t.Error("GetList of a value state succeeded")
	}
	for _, err := range in.MapEntries(&snapshot.Entry{KeyGroup: 3, State: "counts", Key: []byte("k")}) {
		if err == nil {
			t.Error("MapEntries of a value state yielded an entry")
		}
	}
	// The loop body may write: removing every entry while iterating.
	q := snapshot.Entry{KeyGroup: 3, State: "attrs", Key: []byte("k")}
	for x, err := range in.MapEntries(&q) {
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Delete(&x); err != nil {
			t.Fatal(err)
		}
	}
	if all := rockstest.Collect(t, in.MapEntries(&q)); len(all) != 0 {
		t.Fatalf("after removing: %+v", all)
	}
	in.Close()
	if _, _, err := in.Get(&q); !errors.Is(err, rocksdbformat.ErrClosed) {
		t.Errorf("Get on a closed instance: %v", err)
	}
}

// TestIncrementalSharedFigures checks the shared-file figures a
// checkpoint reports: all of the first's SSTs are uploaded, the second
// reuses them, and uploaded plus reused is everything.
func TestIncrementalSharedFigures(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	op := rockstest.KVOperator(1, 128)
	b := newIncremental(t, 2)
	r := rand.New(rand.NewPCG(3, 4))
	fillKV(t, b, op, 0, 2000, 64, r)
	c1, err := b.Checkpoint(ctx, root, "job", 1)
	if err != nil {
		t.Fatal(err)
	}
	fillKV(t, b, op, 0, 20, 64, r)
	c2, err := b.Checkpoint(ctx, root, "job", 2)
	if err != nil {
		t.Fatal(err)
	}
	if c1.SharedFiles == 0 || c1.ReusedFiles != 0 || c1.ReusedBytes != 0 || c1.SharedBytes > c1.Bytes {
		t.Errorf("first checkpoint %+v", c1)
	}
	if c2.ReusedFiles != c1.SharedFiles || c2.ReusedBytes != c1.SharedBytes || c2.SharedFiles <= c2.ReusedFiles {
		t.Errorf("second checkpoint %+v reuses not exactly the first one's %d SSTs (%d bytes)", c2, c1.SharedFiles, c1.SharedBytes)
	}
	for _, c := range []*CheckpointResult{c1, c2} {
		if c.UploadedBytes+c.ReusedBytes != c.Bytes || c.UploadedFiles+c.ReusedFiles != c.Files {
			t.Errorf("%s: uploaded + reused is not everything: %+v", c.Location, c)
		}
	}
}
