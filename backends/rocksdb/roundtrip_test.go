package rocksdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func TestRoundTrip(t *testing.T) {
	for _, maxP := range []int{128, 4096} {
		for _, order := range []string{"sorted", "unsorted"} {
			t.Run(fmt.Sprintf("maxP=%d/%s", maxP, order), func(t *testing.T) {
				testRoundTrip(t, maxP, order == "sorted")
			})
		}
	}
}

func testRoundTrip(t *testing.T, maxP int, sorted bool) {
	ctx := context.Background()
	op := rockstest.Operator("0a0b", 2, maxP)
	entries := rockstest.Entries(t, op, 600, 1)
	input := entries
	if !sorted {
		// Same key groups in order, keys inside each in reverse: defeats
		// the SST fast path, list elements stay in list order.
		input = make([][]snapshot.Entry, len(entries))
		for i, es := range entries {
			input[i] = slices.Clone(es)
			slices.SortStableFunc(input[i], func(a, b snapshot.Entry) int {
				if a.KeyGroup != b.KeyGroup {
					return a.KeyGroup - b.KeyGroup
				}
				return slices.Compare(b.Key, a.Key)
			})
		}
	}
	loc := filepath.Join(t.TempDir(), "sp")
	writeSnapshot(t, loc, op, input)

	f, _, _, err := testReg.Detect(ctx, loc)
	if err != nil || f.Name != FormatName {
		t.Fatalf("Detect = %v, %v", f, err)
	}
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Snapshot()
	if s.Format != FormatName || len(s.Operators) != 1 || len(s.Operators[0].Subtasks) != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	rop := s.Operators[0]
	for i, sub := range rop.Subtasks {
		if sub.KeyGroups != keygroup.RangeOf(maxP, 2, i) {
			t.Errorf("subtask %d key groups %v", i, sub.KeyGroups)
		}
		if !sub.Keyed.Known || sub.Keyed.Entries != int64(len(entries[i])) || len(sub.Files) < 4 {
			t.Errorf("subtask %d figures %+v, %d files", i, sub.Keyed, len(sub.Files))
		}
		for _, fr := range sub.Files {
			if fr.Shared || fr.Size <= 0 {
				t.Errorf("savepoint file %+v: want private, sized", fr)
			}
		}
		got := rockstest.Collect(t, r.Entries(ctx, rop, i, sub.KeyGroups))
		rockstest.SameEntries(t, fmt.Sprintf("subtask %d", i), entries[i], got)
		for j := 1; j < len(got); j++ {
			if got[j].KeyGroup < got[j-1].KeyGroup {
				t.Fatalf("entries not in key-group order at %d", j)
			}
		}

		// A sub-range reads exactly its key groups.
		part := keygroup.Range{Start: sub.KeyGroups.Start + 3, End: sub.KeyGroups.Start + 9}
		var want []snapshot.Entry
		for _, e := range entries[i] {
			if part.Contains(e.KeyGroup) {
				want = append(want, e)
			}
		}
		rockstest.SameEntries(t, fmt.Sprintf("subtask %d range %v", i, part), want, rockstest.Collect(t, r.Entries(ctx, rop, i, part)))

		var els []string
		for el, err := range r.Elements(ctx, rop, i) {
			if err != nil {
				t.Fatal(err)
			}
			els = append(els, el.State+"="+string(el.Value))
		}
		if w := []string{"offsets=p" + fmt.Sprint(i) + "-0", "offsets=p" + fmt.Sprint(i) + "-1", "offsets=p" + fmt.Sprint(i) + "-2"}; !slices.Equal(els, w) {
			t.Errorf("elements %v, want %v", els, w)
		}
		raw, err := r.Raw(ctx, rop, i)
		if err != nil || !slices.Equal(raw.Keyed, []byte{byte(i)}) {
			t.Errorf("raw %v, %v", raw, err)
		}
	}
}

func TestWriterRefusesExisting(t *testing.T) {
	ctx := context.Background()
	op := rockstest.Operator("01", 1, 128)
	loc := filepath.Join(t.TempDir(), "sp")
	writeSnapshot(t, loc, op, rockstest.Entries(t, op, 10, 1))
	if _, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{}); err == nil {
		t.Fatal("Create over an existing snapshot succeeded")
	}
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort(ctx)
}

func TestWriterRejectsBadEntries(t *testing.T) {
	ctx := context.Background()
	op := rockstest.Operator("01", 2, 128)
	w, err := testReg.Create(ctx, Format, filepath.Join(t.TempDir(), "sp"), snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	sw, err := w.Subtask(ctx, op, 0, keygroup.RangeOf(128, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	for name, e := range map[string]snapshot.Entry{
		"outside range": {KeyGroup: 100, State: "counts", Key: []byte("k")},
		"unknown state": {KeyGroup: 1, State: "nope", Key: []byte("k")},
		"bad int64 ns":  {KeyGroup: 1, State: "sum", Key: []byte("k"), Namespace: []byte{1}},
		"void ns bytes": {KeyGroup: 1, State: "counts", Key: []byte("k"), Namespace: []byte{1}},
		"ttl, no TTL":   {KeyGroup: 1, State: "counts", Key: []byte("k"), ExpiresAt: 5},
		"user key":      {KeyGroup: 1, State: "counts", Key: []byte("k"), UserKey: []byte("u")},
	} {
		if err := sw.Entry(&e); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 5, State: "counts", Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if err := sw.Entry(&snapshot.Entry{KeyGroup: 4, State: "counts", Key: []byte("k")}); err == nil {
		t.Error("key group going backwards accepted")
	}
}

// TestReaderOpensEachSubtaskOnce asks for the instances of two subtasks
// from many goroutines at once: each is opened once and shared, and a
// failed open (a missing SST file) is reported to its callers and tried
// again on the next call. The instance's files are hard links.
func TestReaderOpensEachSubtaskOnce(t *testing.T) {
	ctx := context.Background()
	op := rockstest.Operator("0d0e", 2, 128)
	loc := filepath.Join(t.TempDir(), "sp")
	writeSnapshot(t, loc, op, rockstest.Entries(t, op, 300, 4))
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rr := r.(*reader)
	hs := []*rocksdbformat.Handle{}
	for i := range 2 {
		h, err := rr.handle(op, i)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}

	// Subtask 1 loses an SST file for a while.
	sst := filepath.Join(loc, hs[1].Files[slices.IndexFunc(hs[1].Files, func(f rocksdbformat.File) bool { return filepath.Ext(f.Local) == ".sst" })].Path)
	if err := os.Rename(sst, sst+".away"); err != nil {
		t.Fatal(err)
	}
	got := make([][]*rocksdb.ReadOnlyDB, 2)
	errs := make([][]error, 2)
	var wg sync.WaitGroup
	for i, h := range hs {
		got[i], errs[i] = make([]*rocksdb.ReadOnlyDB, 8), make([]error, 8)
		for j := range 8 {
			wg.Go(func() { got[i][j], errs[i][j] = rr.local(ctx, h) })
		}
	}
	wg.Wait()
	for j := range 8 {
		if errs[0][j] != nil || got[0][j] != got[0][0] {
			t.Fatalf("subtask 0, caller %d: %p, %v; caller 0 got %p", j, got[0][j], errs[0][j], got[0][0])
		}
		if !errors.Is(errs[1][j], snapshot.ErrNotFound) {
			t.Fatalf("subtask 1 without its SST file, caller %d: %v, want a missing-file error", j, errs[1][j])
		}
	}
	if err := os.Rename(sst+".away", sst); err != nil {
		t.Fatal(err)
	}
	if err := rr.openAll(ctx, hs); err != nil {
		t.Fatalf("with the file back: %v", err)
	}
	if d, err := rr.local(ctx, hs[0]); err != nil || d != got[0][0] {
		t.Fatalf("subtask 0 opened again: %p, %v (first %p)", d, err, got[0][0])
	}
	// The temporary directory is on the snapshot's file system: the
	// instance's files are the snapshot's, hard-linked.
	for _, f := range hs[0].Files {
		local, err := os.Lstat(filepath.Join(got[0][0].Path(), f.Local))
		if err != nil {
			t.Fatal(err)
		}
		orig, err := os.Stat(filepath.Join(loc, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(local, orig) {
			t.Errorf("%s in the reader's instance is not the snapshot's file (mode %v)", f.Local, local.Mode())
		}
	}
}
