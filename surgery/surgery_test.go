package surgery_test

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/surgery"
)

const example = "../testdata/memory/example.dump"

func registry() *snapshot.Registry {
	reg := snapshot.NewRegistry(storage.NewRegistry())
	memory.Register(reg)
	return reg
}

var codecs = registry().Codecs

func open(t *testing.T, location string) snapshot.Reader {
	t.Helper()
	r, err := registry().Open(context.Background(), location, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func apply(t *testing.T, r snapshot.Reader, edits ...surgery.Edit) *surgery.Reader {
	t.Helper()
	w, err := surgery.Apply(r, codecs, edits)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// collect reads every entry and element of r, by operator label.
func collect(t *testing.T, r snapshot.Reader) map[string][]snaptest.Subtask {
	t.Helper()
	got, err := snaptest.Collect(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// entriesOf is every keyed entry of one operator, canonically ordered.
func entriesOf(subs []snaptest.Subtask) []snapshot.Entry {
	out := gather(subs, func(s snaptest.Subtask) []snapshot.Entry { return s.Entries })
	snaptest.Canonical(out)
	return out
}

func elementsOf(subs []snaptest.Subtask) []snapshot.Element {
	return gather(subs, func(s snaptest.Subtask) []snapshot.Element { return s.Elements })
}

func gather[T any](subs []snaptest.Subtask, part func(snaptest.Subtask) []T) []T {
	var out []T
	for _, s := range subs {
		out = append(out, part(s)...)
	}
	return out
}

// countState counts the entries of one state and their bytes.
func countState(es []snapshot.Entry, state string) surgery.Counts {
	var c surgery.Counts
	for _, e := range es {
		if e.State == state {
			c.Entries++
			c.Bytes += e.Size()
		}
	}
	return c
}

func TestDeleteKeysRemovesThemFromEveryState(t *testing.T) {
	src := open(t, example)
	before := collect(t, src)
	w := apply(t, src, surgery.Edit{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-10", `"word-18"`, "word-18", "no-such-word"}})
	after := collect(t, w)
	// The source's string keys are their UTF-8 bytes.
	gone := map[string]bool{"word-10": true, "word-18": true}
	var want []snapshot.Entry
	for _, e := range entriesOf(before["word-counter"]) {
		if !gone[string(e.Key)] {
			want = append(want, e)
		}
	}
	got := entriesOf(after["word-counter"])
	if ok, why := snaptest.EqualEntries(got, want); !ok {
		t.Fatalf("entries after the deletion: %s", why)
	}
	if len(got) == len(entriesOf(before["word-counter"])) {
		t.Fatal("nothing was deleted")
	}
	for label, subs := range before {
		if label == "word-counter" {
			continue
		}
		if ok, why := snaptest.EqualEntries(entriesOf(after[label]), entriesOf(subs)); !ok {
			t.Errorf("operator %s changed: %s", label, why)
		}
	}
	rep := w.Report()
	if len(rep.Deletions) != 1 {
		t.Fatalf("deletions %+v", rep.Deletions)
	}
	// "word-18" given twice, once as JSON: one key.
	if d := rep.Deletions[0]; d.Keys != 3 || d.Deleted != 2 || d.Missing != 1 || !slices.Equal(d.FirstMissing, []string{"no-such-word"}) {
		t.Errorf("deletion %+v, want 3 keys, 2 deleted, no-such-word missing", d)
	}
	if len(rep.States) != 5 {
		t.Fatalf("states %+v, want word-counter's 5 keyed states", rep.States)
	}
	for _, st := range rep.States {
		b, a := countState(entriesOf(before["word-counter"]), st.State), countState(got, st.State)
		if st.Before != b || st.After != a || st.KeysDeleted != 2 || st.Edit != "keys deleted" {
			t.Errorf("state %s: %+v, want before %+v after %+v, 2 keys deleted", st.State, st, b, a)
		}
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check without RequirePresent: %v", err)
	}
}

func TestDeleteKeysRequirePresent(t *testing.T) {
	src := open(t, example)
	w := apply(t, src, surgery.Edit{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-10", "no-such-word"}, RequirePresent: true})
	if err := w.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("Check: %v, want not found", err)
	}
	w = apply(t, src, surgery.Edit{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-10"}, RequirePresent: true})
	if err := w.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err != nil {
		t.Fatalf("Check with every key present: %v", err)
	}
}

func TestDropAndRenameStates(t *testing.T) {
	src := open(t, example)
	before := collect(t, src)
	w := apply(t, src,
		surgery.Edit{Op: surgery.DropState, Operator: "word-counter", State: "recent"},
		surgery.Edit{Op: surgery.RenameState, Operator: "word-counter", State: "count", To: "count-v2"},
		surgery.Edit{Op: surgery.RenameState, Operator: "kafka-source", State: "partition-offsets", To: "offsets"},
		surgery.Edit{Op: surgery.DropState, Operator: "kafka-source", State: "topic-watermarks"},
	)
	op, _ := w.Snapshot().Operator("word-counter")
	var names []string
	for _, ks := range op.KeyedStates {
		names = append(names, ks.Name)
	}
	if want := []string{"count-v2", "by-source", "total-length", "mean-length"}; !slices.Equal(names, want) {
		t.Fatalf("keyed states %v, want %v", names, want)
	}
	if ks, _ := op.KeyedStateByName("count-v2"); ks.CarriedName() != "count" {
		t.Errorf("renamed state carried under %q, want count", ks.CarriedName())
	}
	src0, _ := src.Snapshot().Operator("word-counter")
	if ks, _ := src0.KeyedStateByName("count"); ks == nil || ks.SourceName != "" {
		t.Error("Apply changed the source's descriptors")
	}
	after := collect(t, w)
	var want []snapshot.Entry
	for _, e := range entriesOf(before["word-counter"]) {
		switch e.State {
		case "recent":
			continue
		case "count":
			e.State = "count-v2"
		}
		want = append(want, e)
	}
	snaptest.Canonical(want)
	if ok, why := snaptest.EqualEntries(entriesOf(after["word-counter"]), want); !ok {
		t.Fatalf("entries: %s", why)
	}
	var wantEls []snapshot.Element
	for _, el := range elementsOf(before["kafka-source"]) {
		switch el.State {
		case "topic-watermarks":
			continue
		case "partition-offsets":
			el.State = "offsets"
		}
		wantEls = append(wantEls, el)
	}
	gotEls := elementsOf(after["kafka-source"])
	if !slices.EqualFunc(gotEls, wantEls, func(a, b snapshot.Element) bool {
		return a.State == b.State && a.Subtask == b.Subtask && string(a.Value) == string(b.Value)
	}) {
		t.Fatalf("elements %v, want %v", gotEls, wantEls)
	}
	kop, _ := w.Snapshot().Operator("kafka-source")
	for _, sub := range kop.Subtasks {
		if _, ok := sub.OperatorElements["topic-watermarks"]; ok || sub.Operator.Known {
			t.Errorf("subtask %d keeps figures of the dropped state: %+v %v", sub.Index, sub.Operator, sub.OperatorElements)
		}
	}
	rep := w.Report()
	byState := map[string]surgery.StateReport{}
	for _, st := range rep.States {
		byState[st.State] = st
	}
	if st := byState["recent"]; st.Edit != "dropped" || st.Before != countState(entriesOf(before["word-counter"]), "recent") || st.After != (surgery.Counts{}) {
		t.Errorf("recent: %+v", st)
	}
	if st := byState["count"]; st.Edit != "renamed" || st.To != "count-v2" || st.Before != st.After || st.Before.Entries == 0 {
		t.Errorf("count: %+v", st)
	}
	if st := byState["topic-watermarks"]; st.Edit != "dropped" || st.Scope != snapshot.ScopeOperator || st.Before.Entries == 0 || st.After.Entries != 0 {
		t.Errorf("topic-watermarks: %+v", st)
	}
}

// A copy that reads the source twice (diff, verify, a rescale feeding new
// subtasks from one old one) counts what it read once.
func TestReportCountsWhatIsReadTwiceOnce(t *testing.T) {
	src := open(t, example)
	w := apply(t, src, surgery.Edit{Op: surgery.DropState, Operator: "word-counter", State: "recent"})
	if err := w.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := w.Report()
	collect(t, w)
	if err := w.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again := w.Report(); again.States[0] != first.States[0] {
		t.Fatalf("read twice: %+v, once: %+v", again.States[0], first.States[0])
	}
	if want := countState(entriesOf(collect(t, src)["word-counter"]), "recent"); first.States[0].Before != want {
		t.Fatalf("before %+v, want %+v", first.States[0].Before, want)
	}
}

func TestRefusedEdits(t *testing.T) {
	src := open(t, example)
	cases := []struct {
		name string
		edit surgery.Edit
		want error
	}{
		{"unknown operator", surgery.Edit{Op: surgery.DropState, Operator: "nope", State: "count"}, snapshot.ErrNotFound},
		{"unknown state", surgery.Edit{Op: surgery.DropState, Operator: "word-counter", State: "nope"}, snapshot.ErrNotFound},
		{"rename onto a keyed state", surgery.Edit{Op: surgery.RenameState, Operator: "word-counter", State: "count", To: "recent"}, surgery.ErrConflict},
		{"rename onto an operator state", surgery.Edit{Op: surgery.RenameState, Operator: "kafka-source", State: "partition-offsets", To: "topic-watermarks"}, surgery.ErrConflict},
		{"rename to itself", surgery.Edit{Op: surgery.RenameState, Operator: "word-counter", State: "count", To: "count"}, surgery.ErrBadEdit},
		{"rename to nothing", surgery.Edit{Op: surgery.RenameState, Operator: "word-counter", State: "count"}, surgery.ErrBadEdit},
		{"no keys", surgery.Edit{Op: surgery.DeleteKeys, Operator: "word-counter"}, surgery.ErrBadEdit},
		{"keys of an operator without keyed state", surgery.Edit{Op: surgery.DeleteKeys, Operator: "kafka-source", Keys: []string{"x"}}, surgery.ErrBadEdit},
		// user-total is keyed by a long.
		{"key of the wrong type", surgery.Edit{Op: surgery.DeleteKeys, Operator: "rules", Keys: []string{"abc"}}, surgery.ErrBadEdit},
		{"namespace of states without one", surgery.Edit{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-10"}, Namespace: "42"}, surgery.ErrBadEdit},
		{"a value state named as timers", surgery.Edit{Op: surgery.RenameState, Operator: "word-counter", State: "count", To: "_timer_state/event_x"}, surgery.ErrBadEdit},
		{"unknown edit", surgery.Edit{Op: "frobnicate", Operator: "word-counter"}, surgery.ErrBadEdit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := surgery.Apply(src, codecs, []surgery.Edit{c.edit}); !errors.Is(err, c.want) {
				t.Fatalf("Apply: %v, want %v", err, c.want)
			}
		})
	}
	// An edit sees the names the edits before it left.
	if _, err := surgery.Apply(src, codecs, []surgery.Edit{
		{Op: surgery.DropState, Operator: "word-counter", State: "recent"},
		{Op: surgery.RenameState, Operator: "word-counter", State: "count", To: "recent"},
	}); err != nil {
		t.Fatalf("rename onto a dropped state's name: %v", err)
	}
	if _, err := surgery.Apply(src, codecs, []surgery.Edit{
		{Op: surgery.DropState, Operator: "word-counter", State: "recent"},
		{Op: surgery.DropState, Operator: "word-counter", State: "recent"},
	}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("dropping a dropped state: %v, want not found", err)
	}
}

// windows writes a memory snapshot whose keyed state "sums" has long
// namespaces (windows) and "seen" has none.
func windows(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	reg := registry()
	f, _ := reg.Writable("memory")
	path := filepath.Join(t.TempDir(), "windows.dump")
	w, err := reg.Create(ctx, f, path, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tString, tLong := snapshot.Type{Name: snapshot.TypeString}, snapshot.Type{Name: snapshot.TypeInt64}
	op := &snapshot.Operator{ID: "0123456789abcdef0123456789abcdef", UID: "windows", Parallelism: 1, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{
			{Name: "sums", Kind: snapshot.Value, KeyType: tString, NamespaceType: tLong, ValueType: tLong},
			{Name: "seen", Kind: snapshot.Value, KeyType: tString, NamespaceType: snapshot.Type{Name: snapshot.TypeVoid}, ValueType: tLong},
		}}
	sw, err := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 127})
	if err != nil {
		t.Fatal(err)
	}
	var es []snapshot.Entry
	for _, key := range []string{"a", "b"} {
		kg, err := snapshot.NewCodecs().KeyGroupOf(tString, []byte(key), 128)
		if err != nil {
			t.Fatal(err)
		}
		for _, window := range []int64{60_000, 120_000} {
			es = append(es, snapshot.Entry{KeyGroup: kg, State: "sums", Key: []byte(key), Namespace: snapshot.EncodeInt64(window), Value: snapshot.EncodeInt64(window / 1000)})
		}
		es = append(es, snapshot.Entry{KeyGroup: kg, State: "seen", Key: []byte(key), Value: snapshot.EncodeInt64(1)})
	}
	snaptest.Canonical(es)
	for _, e := range es {
		if err := sw.Entry(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{JobID: "00000000000000000000000000000001", Kind: snapshot.Savepoint, Created: time.Unix(0, 0).UTC(), Operators: []*snapshot.Operator{op}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDeleteKeysInOneNamespace(t *testing.T) {
	src := open(t, windows(t))
	w := apply(t, src, surgery.Edit{Op: surgery.DeleteKeys, Operator: "windows", Keys: []string{"a"}, Namespace: "60000"})
	var got []string
	for _, e := range entriesOf(collect(t, w)["windows"]) {
		ns := "-"
		if len(e.Namespace) == 8 {
			ns = strconv.FormatUint(binary.BigEndian.Uint64(e.Namespace), 10)
		}
		got = append(got, e.State+"/"+string(e.Key)+"/"+ns)
	}
	want := []string{"seen/a/-", "seen/b/-", "sums/a/120000", "sums/b/60000", "sums/b/120000"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v (a's window 60000 gone, a's other window and seen kept)", got, want)
	}
	rep := w.Report()
	for _, st := range rep.States {
		if st.State == "seen" {
			t.Errorf("a state without namespaces is reported as edited: %+v", st)
		}
	}
}

// keyEntries is the entries of one key of one state, as r holds them.
func keyEntries(t *testing.T, r snapshot.Reader, operator, state, key string) []snapshot.Entry {
	t.Helper()
	var out []snapshot.Entry
	for _, e := range entriesOf(collect(t, r)[operator]) {
		if e.State == state && string(e.Key) == key {
			out = append(out, e)
		}
	}
	return out
}

func TestPut(t *testing.T) {
	src := open(t, example)
	before := entriesOf(collect(t, src)["word-counter"])
	mapKey := "web"
	// word-10's by-source map holds {"web":13}; the values are longs.
	w := apply(t, src,
		surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{"word-10"}, Value: "7"},
		surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "by-source", Keys: []string{"word-10"}, MapKey: &mapKey, Value: "99", Now: 1_000},
		surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "recent", Keys: []string{"brand-new"}, Value: "[1,2,3]", Now: 1_700_000_000_000},
		surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "total-length", Keys: []string{"word-18"}, Delete: true},
	)
	after := collect(t, w)
	var want []snapshot.Entry
	for _, e := range before {
		key := string(e.Key)
		switch {
		case e.State == "count" && key == "word-10":
			e.Value = snapshot.EncodeInt64(7)
		case e.State == "by-source" && key == "word-10" && string(e.UserKey) == "web":
			// by-source has TTL 24h: the entry put expires a day after --now.
			e.Value, e.ExpiresAt = snapshot.EncodeInt64(99), 1_000+86_400_000
		case e.State == "total-length" && key == "word-18":
			continue
		}
		want = append(want, e)
	}
	// recent has TTL 1h: the elements put expire an hour after --now.
	kg, err := codecs.KeyGroupOf(snapshot.Type{Name: snapshot.TypeString}, []byte("brand-new"), 128)
	if err != nil {
		t.Fatal(err)
	}
	for v := range int64(3) {
		want = append(want, snapshot.Entry{KeyGroup: kg, State: "recent", Key: []byte("brand-new"), Namespace: []byte{}, Value: snapshot.EncodeInt64(v + 1), ExpiresAt: 1_700_000_000_000 + 3_600_000})
	}
	snaptest.Canonical(want)
	if ok, why := snaptest.EqualEntries(entriesOf(after["word-counter"]), want); !ok {
		t.Fatalf("entries after the puts: %s", why)
	}
	// The list's elements stay in the order given.
	var order []uint64
	for _, e := range keyEntries(t, w, "word-counter", "recent", "brand-new") {
		order = append(order, binary.BigEndian.Uint64(e.Value))
	}
	if !slices.Equal(order, []uint64{1, 2, 3}) {
		t.Errorf("list put as %v, want [1 2 3]", order)
	}
	rep := w.Report()
	for _, st := range rep.States {
		if st.Edit != "put" {
			t.Errorf("state %s: edit %q, want put", st.State, st.Edit)
		}
		if st.State == "total-length" && st.After.Entries != st.Before.Entries-1 {
			t.Errorf("total-length: %+v, want one entry less", st)
		}
	}
}

func TestPutRefused(t *testing.T) {
	src := open(t, example)
	mapKey := "web"
	cases := []struct {
		name string
		edit surgery.Edit
		want error
	}{
		{"unknown state", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "nope", Keys: []string{"a"}, Value: "1"}, snapshot.ErrNotFound},
		{"operator state", surgery.Edit{Op: surgery.Put, Operator: "kafka-source", State: "partition-offsets", Keys: []string{"a"}, Value: "1"}, surgery.ErrBadEdit},
		{"map key of a value state", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{"a"}, MapKey: &mapKey, Value: "1"}, surgery.ErrBadEdit},
		{"list that is no array", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "recent", Keys: []string{"a"}, Value: "1"}, surgery.ErrBadEdit},
		{"map that is no object", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "by-source", Keys: []string{"a"}, Value: "[1]"}, surgery.ErrBadEdit},
		{"key of the wrong type", surgery.Edit{Op: surgery.Put, Operator: "rules", State: "user-total", Keys: []string{"abc"}, Value: "1"}, surgery.ErrBadEdit},
		{"no value", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{"a"}}, surgery.ErrBadEdit},
		{"a value to delete", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{"a"}, Value: "1", Delete: true}, surgery.ErrBadEdit},
		{"a field given twice", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "by-source", Keys: []string{"a"}, Value: `{"web":1,"web":2}`}, surgery.ErrBadEdit},
		{"a lone surrogate in a key", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{`"user-\ud800"`}, Value: "1"}, surgery.ErrBadEdit},
		{"a key that is not UTF-8", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "count", Keys: []string{"user-\xff"}, Value: "1"}, surgery.ErrBadEdit},
		// mean-length holds msgpack, which stateutil reads but does not write.
		{"a type stateutil cannot write", surgery.Edit{Op: surgery.Put, Operator: "word-counter", State: "mean-length", Keys: []string{"a"}, Value: "1"}, snapshot.ErrUnsupportedVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := surgery.Apply(src, codecs, []surgery.Edit{c.edit}); !errors.Is(err, c.want) {
				t.Fatalf("Apply: %v, want %v", err, c.want)
			}
		})
	}
}
