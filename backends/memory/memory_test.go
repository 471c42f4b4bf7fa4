package memory

import (
	"context"
	"errors"
	"github.com/stateutil/stateutil/storage"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
)

// collectingWriter records what a generator writes, as the reference a
// round trip is compared with.
type collectingWriter struct {
	entries  map[string][]snapshot.Entry   // by operator/subtask
	elements map[string][]snapshot.Element // by operator/subtask
}

type collectingSubtask struct {
	w   *collectingWriter
	key string
	idx int
}

func subKey(op *snapshot.Operator, idx int) string { return op.Label() + "/" + string(rune('0'+idx)) }

func (c *collectingWriter) Subtask(_ context.Context, op *snapshot.Operator, idx int, _ keygroup.Range) (snapshot.SubtaskWriter, error) {
	return &collectingSubtask{w: c, key: subKey(op, idx), idx: idx}, nil
}
func (c *collectingWriter) Commit(context.Context, *snapshot.Snapshot) error { return nil }
func (c *collectingWriter) Abort(context.Context) error                      { return nil }
func (s *collectingSubtask) Entry(e *snapshot.Entry) error {
	s.w.entries[s.key] = append(s.w.entries[s.key], e.Clone())
	return nil
}
func (s *collectingSubtask) Element(state string, v []byte) error {
	s.w.elements[s.key] = append(s.w.elements[s.key], snapshot.Element{State: state, Subtask: s.idx, Value: append([]byte(nil), v...)})
	return nil
}
func (s *collectingSubtask) Raw(snapshot.RawState) error { return nil }
func (s *collectingSubtask) Close() error                { return nil }

func TestRoundTripIsEntryIdentical(t *testing.T) {
	for _, maxP := range []int{128, 4096} {
		cfg := generate.Default()
		cfg.MaxParallelism, cfg.Keys = maxP, 200
		ctx := context.Background()
		want := &collectingWriter{entries: map[string][]snapshot.Entry{}, elements: map[string][]snapshot.Element{}}
		if _, err := generate.Write(ctx, want, cfg); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "s.dump")
		w, err := testReg.Create(ctx, Format, path, snapshot.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := generate.Write(ctx, w, cfg); err != nil {
			t.Fatal(err)
		}
		r, err := testReg.Open(ctx, path, snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := r.Snapshot()
		if s.Format != Name || len(s.Operators) != 4 {
			t.Fatalf("format %q with %d operators", s.Format, len(s.Operators))
		}
		total := 0
		for _, op := range s.Operators {
			for _, sub := range op.Subtasks {
				if wantRange := keygroup.RangeOf(maxP, op.Parallelism, sub.Index); sub.KeyGroups != wantRange {
					t.Errorf("%s/%d range %v, Flink's formula gives %v", op.Label(), sub.Index, sub.KeyGroups, wantRange)
				}
				var got []snapshot.Entry
				for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, e.Clone())
				}
				exp := want.entries[subKey(op, sub.Index)]
				if len(got) != len(exp) {
					t.Fatalf("%s/%d: %d entries, want %d", op.Label(), sub.Index, len(got), len(exp))
				}
				for i := range got {
					if !got[i].Equal(&exp[i]) {
						t.Fatalf("%s/%d entry %d: %+v, want %+v", op.Label(), sub.Index, i, got[i], exp[i])
					}
				}
				total += len(got)
				var els []snapshot.Element
				for el, err := range r.Elements(ctx, op, sub.Index) {
					if err != nil {
						t.Fatal(err)
					}
					els = append(els, el)
				}
				if len(els) != len(want.elements[subKey(op, sub.Index)]) {
					t.Fatalf("%s/%d: %d elements, want %d", op.Label(), sub.Index, len(els), len(want.elements[subKey(op, sub.Index)]))
				}
				if sub.Keyed.Entries != int64(len(got)) {
					t.Errorf("%s/%d: metadata says %d entries, read %d", op.Label(), sub.Index, sub.Keyed.Entries, len(got))
				}
			}
		}
		if total == 0 {
			t.Fatal("no entries read")
		}
	}
}

func TestEntriesReadsOnlyTheAskedKeyGroups(t *testing.T) {
	ctx := context.Background()
	r, err := Open(ctx, storage.Local(), "../../testdata/memory/example.dump", snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := r.Snapshot().Operator("word-counter")
	sub := op.Subtasks[1]
	one := keygroup.Range{Start: sub.KeyGroupStats[0].KeyGroup, End: sub.KeyGroupStats[0].KeyGroup}
	n := 0
	for e, err := range r.Entries(ctx, op, 1, one) {
		if err != nil {
			t.Fatal(err)
		}
		if e.KeyGroup != one.Start {
			t.Fatalf("asked for key group %d, got %d", one.Start, e.KeyGroup)
		}
		n++
	}
	if int64(n) != sub.KeyGroupStats[0].Entries {
		t.Fatalf("%d entries in key group %d, metadata says %d", n, one.Start, sub.KeyGroupStats[0].Entries)
	}
}

func TestStateSizeCapNamesOperatorSubtaskAndSize(t *testing.T) {
	ctx := context.Background()
	w, err := testReg.Create(ctx, Format, filepath.Join(t.TempDir(), "s.dump"), snapshot.WriteOptions{StateSizeCap: 1000})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generate.Default()
	cfg.ValueBytes = 100
	_, err = generate.Write(ctx, w, cfg)
	if !errors.Is(err, snapshot.ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	for _, s := range []string{`"word-counter"`, "subtask 0", "1000 bytes"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %s", err, s)
		}
	}
}

func TestDefaultCapIsFiveMiB(t *testing.T) {
	ctx := context.Background()
	w, _ := testReg.Create(ctx, Format, filepath.Join(t.TempDir(), "s.dump"), snapshot.WriteOptions{})
	op := &snapshot.Operator{UID: "big", Parallelism: 1, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{{Name: "v", Kind: snapshot.Value}}}
	sw, _ := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 127})
	value := make([]byte, 1<<20)
	var err error
	for i := 0; i < 6 && err == nil; i++ {
		err = sw.Entry(&snapshot.Entry{KeyGroup: 0, State: "v", Key: []byte{byte(i)}, Value: value})
	}
	if !errors.Is(err, snapshot.ErrTooLarge) || !strings.Contains(err.Error(), "5242880") {
		t.Fatalf("the sixth MiB must exceed the 5 MiB default cap, got %v", err)
	}
}

func TestCreateRefusesExistingUnlessForced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.dump")
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testReg.Create(context.Background(), Format, path, snapshot.WriteOptions{}); err == nil {
		t.Fatal("an existing file must not be replaced without Force")
	}
	if _, err := testReg.Create(context.Background(), Format, path, snapshot.WriteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
}

func TestEntriesOutOfKeyGroupOrderAreRefused(t *testing.T) {
	ctx := context.Background()
	w, _ := testReg.Create(ctx, Format, filepath.Join(t.TempDir(), "s.dump"), snapshot.WriteOptions{})
	op := &snapshot.Operator{UID: "o", Parallelism: 1, MaxParallelism: 128, KeyedStates: []snapshot.KeyedState{{Name: "v"}}}
	sw, _ := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 127})
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 5, State: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 4, State: "v"}); err == nil {
		t.Fatal("key group 4 after 5 must be refused")
	}
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 5, State: "nope"}); err == nil {
		t.Fatal("an undeclared state must be refused")
	}
}
