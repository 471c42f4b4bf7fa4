package rocksdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// writeForced writes op's entries to loc with Force and commits, or, with
// abort, closes every subtask and aborts instead. check runs while the
// write is open, before its end.
func writeForced(t *testing.T, loc string, op *snapshot.Operator, entries [][]snapshot.Entry, abort bool, check func()) {
	t.Helper()
	ctx := context.Background()
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	writeSubtasks(t, w, op, entries, func(sw snapshot.SubtaskWriter, _ int) error {
		return sw.Element("offsets", []byte("forced"))
	})
	check()
	if abort {
		if err := w.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	s := &snapshot.Snapshot{JobID: "job", CheckpointID: 8, Kind: snapshot.Savepoint, Operators: []*snapshot.Operator{op}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// readAll opens loc and returns each subtask's entries.
func readAll(t *testing.T, loc string) [][]snapshot.Entry {
	t.Helper()
	ctx := context.Background()
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	op := r.Snapshot().Operators[0]
	var out [][]snapshot.Entry
	for _, sub := range op.Subtasks {
		out = append(out, rockstest.Collect(t, r.Entries(ctx, op, sub.Index, sub.KeyGroups)))
	}
	return out
}

// filesOf lists every file below dir, relative to it.
func filesOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// referencedFiles is _metadata plus every file loc's metadata lists.
func referencedFiles(t *testing.T, loc string) []string {
	t.Helper()
	m, err := rocksdbformat.ReadMetadata(context.Background(), metaDir(storage.Local(), loc))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{rocksdbformat.MetadataName}
	for _, h := range m.Handles {
		for _, f := range h.AllFiles() {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return out
}

func sameAll(t *testing.T, what string, want, got [][]snapshot.Entry) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d subtasks, want %d", what, len(got), len(want))
	}
	for i := range want {
		rockstest.SameEntries(t, fmt.Sprintf("%s subtask %d", what, i), want[i], got[i])
	}
}

// TestForcedWriteKeepsOldUntilCommit: a forced write that is aborted
// leaves the old snapshot intact and readable (it is readable all along);
// one that commits replaces it and leaves no file the new one does not
// reference.
func TestForcedWriteKeepsOldUntilCommit(t *testing.T) {
	op := rockstest.Operator("0f", 2, 128)
	loc := filepath.Join(t.TempDir(), "sp")
	old := rockstest.Entries(t, op, 200, 1)
	writeSnapshot(t, loc, op, old)
	oldFiles := filesOf(t, loc)
	if want := referencedFiles(t, loc); !slices.Equal(oldFiles, want) {
		t.Fatalf("files %v, want those referenced %v", oldFiles, want)
	}
	next := rockstest.Entries(t, op, 150, 2)

	writeForced(t, loc, op, next, true, func() {
		sameAll(t, "old snapshot during the forced write", old, readAll(t, loc))
	})
	sameAll(t, "old snapshot after an aborted forced write", old, readAll(t, loc))
	if got := filesOf(t, loc); !slices.Equal(got, oldFiles) {
		t.Errorf("after an aborted forced write: files %v, want %v", got, oldFiles)
	}

	writeForced(t, loc, op, next, false, func() {
		sameAll(t, "old snapshot before the commit", old, readAll(t, loc))
	})
	sameAll(t, "replacing snapshot", next, readAll(t, loc))
	if got, want := filesOf(t, loc), referencedFiles(t, loc); !slices.Equal(got, want) {
		t.Errorf("after a committed forced write: files %v, want exactly those referenced %v", got, want)
	}
	for _, f := range filesOf(t, loc) {
		if slices.Contains(oldFiles, f) && f != rocksdbformat.MetadataName {
			t.Errorf("old file %s is still there", f)
		}
	}
	entries, _ := os.ReadDir(loc)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("staging left behind: %s", e.Name())
		}
	}

	// And once more over the replacement, whose directories carry a token.
	writeForced(t, loc, op, old, false, func() {})
	sameAll(t, "second replacement", old, readAll(t, loc))
	if got, want := filesOf(t, loc), referencedFiles(t, loc); !slices.Equal(got, want) {
		t.Errorf("after a second forced write: files %v, want %v", got, want)
	}
}

// TestWriterSortsKeyGroups feeds each key group's keys shuffled, with a
// list's elements apart from each other, and checks every state reads
// back in RocksDB order with lists in element order; with a tiny sort
// budget the same input goes the ordinary-write way.
func TestWriterSortsKeyGroups(t *testing.T) {
	for _, budget := range []int{sortBudget, 512} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			defer func(b int) { sortBudget = b }(sortBudget)
			sortBudget = budget
			op := rockstest.Operator("0e", 1, 128)
			var in []snapshot.Entry
			for kg := range 128 {
				for round := range 3 {
					for k := 5; k >= 0; k-- {
						key := []byte(fmt.Sprintf("k%d-%d", kg, k*7%6))
						in = append(in,
							snapshot.Entry{KeyGroup: kg, State: "events", Key: key, Namespace: []byte("w"),
								Value: []byte(fmt.Sprintf("e%d", round)), ExpiresAt: int64(round + 1)},
							snapshot.Entry{KeyGroup: kg, State: "counts", Key: key, Value: snapshot.EncodeInt64(int64(round))})
					}
				}
			}
			// What reads back: every list element, the last value per key.
			var want []snapshot.Entry
			for _, e := range in {
				if e.State == "counts" {
					if slices.ContainsFunc(in, func(x snapshot.Entry) bool {
						return x.State == "counts" && string(x.Key) == string(e.Key) && string(x.Value) > string(e.Value)
					}) {
						continue
					}
				}
				want = append(want, e)
			}
			loc := filepath.Join(t.TempDir(), "sp")
			writeSnapshot(t, loc, op, [][]snapshot.Entry{in})
			got := readAll(t, loc)[0]
			rockstest.SameEntries(t, "entries", want, got)
		})
	}
}

// TestWriterValueSizeGuard is rocksdbformat's TestValueSizeGuard for the
// writer's SST path: a merged list crossing the limit is refused.
func TestWriterValueSizeGuard(t *testing.T) {
	old := rocksdbformat.MaxValueSize
	rocksdbformat.MaxValueSize = 64
	defer func() { rocksdbformat.MaxValueSize = old }()
	ctx := context.Background()
	op := rockstest.Operator("01", 1, 128)
	w, err := testReg.Create(ctx, Format, filepath.Join(t.TempDir(), "sp"), snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort(ctx)
	sw, err := w.Subtask(ctx, op, 0, keygroup.Range{Start: 0, End: 127})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	// Each element is 8+1+20 bytes.
	el := snapshot.Entry{KeyGroup: 1, State: "events", Key: []byte("key"), Namespace: []byte("n"), Value: make([]byte, 20)}
	for i := range 2 {
		if err := sw.Entry(&el); err != nil {
			t.Fatalf("element %d: %v", i, err)
		}
	}
	err = sw.Entry(&el)
	if !errors.Is(err, snapshot.ErrTooLarge) || !strings.Contains(err.Error(), "events") || !strings.Contains(err.Error(), "6b6579") { // hex of "key"
		t.Errorf("writer list: error %v, want ErrTooLarge naming state and key", err)
	}
}
