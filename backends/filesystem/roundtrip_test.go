package filesystem

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

func TestRoundTrip(t *testing.T) {
	for _, maxP := range []int{128, 4096} {
		for _, tc := range []struct {
			name      string
			threshold int64
		}{{"inline", 0}, {"files", -1}, {"mixed", 200}} {
			t.Run(tc.name+"/maxP="+strconv.Itoa(maxP), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "job", "chk-7")
				f := newFixture(maxP, 300)
				f.write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: tc.threshold})
				r, err := Open(context.Background(), storage.Local(), filepath.Dir(dir), snapshot.OpenOptions{}) // the job dir
				if err != nil {
					t.Fatal(err)
				}
				checkFixture(t, r, f)
				files, _ := filepath.Glob(filepath.Join(dir, "op*"))
				switch {
				case tc.name == "inline" && len(files) != 0:
					t.Errorf("inline snapshot has files %v", files)
				case tc.name == "files" && len(files) == 0:
					t.Errorf("non-inline snapshot has no files")
				}
				fmt, _, _, err := testReg.Detect(context.Background(), dir)
				if err != nil || fmt.Name != Name {
					t.Errorf("Detect = %v, %v", fmt, err)
				}
			})
		}
	}
}

// checkFixture compares everything r reads, and its statistics, with f.
func checkFixture(t *testing.T, r *Reader, f *fixture) {
	t.Helper()
	ctx := context.Background()
	s := r.Snapshot()
	if s.Format != Name || s.JobID != "job" || s.CheckpointID != 7 || !s.Created.Equal(f.snap.Created) || len(s.Operators) != 3 {
		t.Fatalf("snapshot = %+v", s)
	}
	for _, want := range f.snap.Operators {
		op, ok := s.Operator(want.Label())
		if !ok {
			t.Fatalf("operator %q missing", want.Label())
		}
		if len(op.KeyedStates) != len(want.KeyedStates) || len(op.OperatorStates) != len(want.OperatorStates) || len(op.Subtasks) != want.Parallelism {
			t.Fatalf("operator %q = %+v", op.Label(), op)
		}
		if want.UID == "keyed" && (op.KeyedStates[2].TTL == nil || op.KeyedStates[2].TTL.TTLMillis != 60000) {
			t.Errorf("TTL lost: %+v", op.KeyedStates[2])
		}
		for i, sub := range op.Subtasks {
			var wantEntries []snapshot.Entry
			if es := f.entries[op.ID]; es != nil {
				wantEntries = es[i]
			}
			var got []snapshot.Entry
			for e, err := range r.Entries(ctx, op, i, sub.KeyGroups) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Clone())
			}
			if !entriesEqual(got, wantEntries) {
				t.Fatalf("%s/%d: read %d entries, wrote %d (or they differ)", op.Label(), i, len(got), len(wantEntries))
			}
			checkStats(t, op, sub, wantEntries)

			var wantEls []snapshot.Element
			if els := f.elements[op.ID]; els != nil {
				for _, d := range op.OperatorStates { // descriptor order, list order within a state
					for _, el := range els[i] {
						if el.State == d.Name {
							wantEls = append(wantEls, snapshot.Element{State: el.State, Subtask: i, Value: el.Value})
						}
					}
				}
			}
			var gotEls []snapshot.Element
			for el, err := range r.Elements(ctx, op, i) {
				if err != nil {
					t.Fatal(err)
				}
				gotEls = append(gotEls, el)
			}
			if !slices.EqualFunc(gotEls, wantEls, func(a, b snapshot.Element) bool {
				return a.State == b.State && a.Subtask == b.Subtask && bytes.Equal(a.Value, b.Value)
			}) {
				t.Errorf("%s/%d: elements %v, want %v", op.Label(), i, gotEls, wantEls)
			}
			if sub.Operator.Entries != int64(len(wantEls)) || !sub.Operator.Known {
				t.Errorf("%s/%d: operator stats %+v", op.Label(), i, sub.Operator)
			}
			raw, err := r.Raw(ctx, op, i)
			if err != nil {
				t.Fatal(err)
			}
			var wantRaw snapshot.RawState
			if rs := f.raw[op.ID]; rs != nil {
				wantRaw = rs[i]
			}
			if !bytes.Equal(raw.Keyed, wantRaw.Keyed) || !bytes.Equal(raw.Operator, wantRaw.Operator) ||
				sub.RawKeyedBytes != int64(len(wantRaw.Keyed)) || sub.RawOperatorBytes != int64(len(wantRaw.Operator)) {
				t.Errorf("%s/%d: raw %q, want %q", op.Label(), i, raw, wantRaw)
			}
			// Key groups read one at a time give the same entries.
			var one []snapshot.Entry
			for kg := sub.KeyGroups.Start; kg <= sub.KeyGroups.End; kg++ {
				for e, err := range r.Entries(ctx, op, i, keygroup.Range{Start: kg, End: kg}) {
					if err != nil {
						t.Fatal(err)
					}
					if e.KeyGroup != kg {
						t.Fatalf("asked for key group %d, got %d", kg, e.KeyGroup)
					}
					one = append(one, e.Clone())
				}
			}
			if !entriesEqual(one, wantEntries) {
				t.Errorf("%s/%d: entries read key group by key group differ", op.Label(), i)
			}
		}
	}
}

func entriesEqual(a, b []snapshot.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y snapshot.Entry) bool { return x.Equal(&y) })
}

func checkStats(t *testing.T, op *snapshot.Operator, sub *snapshot.Subtask, entries []snapshot.Entry) {
	t.Helper()
	if want := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub.Index); sub.KeyGroups != want {
		t.Errorf("%s/%d: key groups %v, want %v", op.Label(), sub.Index, sub.KeyGroups, want)
	}
	var total snapshot.Stats
	perKG := map[int]snapshot.Stats{}
	for _, e := range entries {
		s := perKG[e.KeyGroup]
		s.Entries++
		s.Bytes += e.Size()
		perKG[e.KeyGroup] = s
		total.Entries++
		total.Bytes += e.Size()
	}
	if !sub.Keyed.Known || sub.Keyed.Entries != total.Entries || sub.Keyed.Bytes != total.Bytes {
		t.Errorf("%s/%d: keyed stats %+v, want %+v", op.Label(), sub.Index, sub.Keyed, total)
	}
	if len(op.KeyedStates) == 0 {
		return
	}
	if len(sub.KeyGroupStats) != sub.KeyGroups.Len() {
		t.Fatalf("%s/%d: %d key-group stats", op.Label(), sub.Index, len(sub.KeyGroupStats))
	}
	for _, kgs := range sub.KeyGroupStats {
		if w := perKG[kgs.KeyGroup]; kgs.Entries != w.Entries || kgs.Bytes != w.Bytes {
			t.Errorf("%s/%d: key group %d stats %+v, want %+v", op.Label(), sub.Index, kgs.KeyGroup, kgs, w)
		}
	}
}

func TestRefuseExistingUnlessForce(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	f := newFixture(128, 50)
	f.write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
	before, _ := filepath.Glob(filepath.Join(dir, "op*"))
	if _, err := Create(ctx, storage.Local(), dir, snapshot.WriteOptions{}); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("Create over a snapshot: %v, want ErrExist", err)
	}
	f2 := newFixture(128, 60)
	f2.write(t, storage.Local(), dir, snapshot.WriteOptions{Force: true, InlineThreshold: -1})
	after, _ := filepath.Glob(filepath.Join(dir, "op*"))
	for _, p := range before {
		if slices.Contains(after, p) {
			t.Errorf("forced rewrite left %s of the old snapshot", p)
		}
	}
	r, err := Open(ctx, storage.Local(), dir, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFixture(t, r, f2)
	// A job directory is never a place to write a snapshot.
	job := filepath.Join(t.TempDir(), "job")
	newFixture(128, 5).write(t, storage.Local(), filepath.Join(job, "chk-1"), snapshot.WriteOptions{})
	if _, err := Create(ctx, storage.Local(), job, snapshot.WriteOptions{Force: true}); err == nil {
		t.Fatal("Create in a job directory succeeded")
	}
}

func TestAbortRemovesEverything(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "sp")
	f := newFixture(128, 200)
	w, err := Create(ctx, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	op := f.snap.Operators[0]
	for i := range 2 {
		sw, err := w.Subtask(ctx, op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
		if err != nil {
			t.Fatal(err)
		}
		for j := range f.entries[op.ID][i] {
			sw.Entry(&f.entries[op.ID][i][j])
		}
		if i == 0 {
			sw.Close() // committed file
		} // subtask 1 stays open: a pending file
	}
	if err := w.Commit(ctx, f.snap); err == nil {
		t.Fatal("Commit with an open subtask succeeded")
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		left, _ := os.ReadDir(dir)
		t.Fatalf("after Abort %s holds %v", dir, left)
	}
}

func TestWriterRefusesBadEntries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(128, 0)
	w, err := Create(ctx, storage.Local(), t.TempDir()+"/sp", snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	op := f.snap.Operators[0]
	sw, _ := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 42})
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 43, State: "count"}); err == nil {
		t.Error("entry outside the range accepted")
	}
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 5, State: "nope"}); err == nil {
		t.Error("entry of an undeclared state accepted")
	}
	sw.Entry(&snapshot.Entry{KeyGroup: 5, State: "count"})
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 4, State: "count"}); err == nil {
		t.Error("entry out of key-group order accepted")
	}
	if err := sw.Element("nope", nil); err == nil {
		t.Error("element of an undeclared state accepted")
	}
	if _, err := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 42}); err == nil {
		t.Error("subtask written twice accepted")
	}
}

func TestUnwrittenSubtasksAreEmpty(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := newFixture(128, 30)
	op := f.snap.Operators[0]
	w, err := Create(ctx, storage.Local(), dir, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sw, _ := w.Subtask(ctx, op, 1, keygroup.RangeOf(128, 3, 1))
	for i := range f.entries[op.ID][1] {
		sw.Entry(&f.entries[op.ID][1][i])
	}
	sw.Close()
	s := &snapshot.Snapshot{JobID: "j", Operators: []*snapshot.Operator{op}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, storage.Local(), dir, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Snapshot().Operators[0]
	if len(got.Subtasks) != 3 || got.Subtasks[0].KeyGroups != keygroup.RangeOf(128, 3, 0) || !got.Subtasks[2].Keyed.Known {
		t.Fatalf("subtasks %+v", got.Subtasks)
	}
	for _, err := range r.Entries(ctx, got, 0, got.Subtasks[0].KeyGroups) {
		t.Fatalf("unwritten subtask yields %v", err)
	}
	n := 0
	for _, err := range r.Entries(ctx, got, 1, got.Subtasks[1].KeyGroups) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(f.entries[op.ID][1]) {
		t.Fatalf("read %d entries, wrote %d", n, len(f.entries[op.ID][1]))
	}
}
