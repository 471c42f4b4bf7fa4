package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
)

// What writers record at once, from many goroutines, reads back whole,
// each thing once, in segments that each hold at most segmentEntries.
func TestJournalRecordsEverythingOnce(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "dst")
	j, err := startJournal(ctx, storage.Local(), dst)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				// Each goroutine records its own files and one all share.
				made := []storage.Made{{Kind: storage.MadeFile, Path: fmt.Sprintf("%s/g%d-%d", dst, g, i)}, {Kind: storage.MadeDir, Path: dst}}
				if err := j.record(ctx, made...); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var big []storage.Made
	for i := range segmentEntries + 5 {
		big = append(big, storage.Made{Kind: madeOld, Path: fmt.Sprintf("%s/old-%d", dst, i)})
	}
	if err := j.record(ctx, big...); err != nil {
		t.Fatal(err)
	}
	l, err := readJournal(ctx, storage.Local(), dst)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[storage.Made]int{}
	for _, m := range l.made {
		seen[m]++
	}
	if len(seen) != 8*50+1+segmentEntries+5 || len(l.made) != len(seen) {
		t.Fatalf("read back %d things, %d distinct; want %d", len(l.made), len(seen), 8*50+1+segmentEntries+5)
	}
	segments, _ := os.ReadDir(journalDir(dst))
	for _, s := range segments {
		b, _ := os.ReadFile(filepath.Join(journalDir(dst), s.Name()))
		if n := strings.Count(string(b), "\n") - 1; n > segmentEntries {
			t.Errorf("segment %s holds %d entries", s.Name(), n)
		}
	}
	if err := l.drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journalDir(dst)); !os.IsNotExist(err) {
		t.Fatalf("the journal stayed: %v", err)
	}
}

// A journal no writer of stateutil would write (hand-edited, damaged, of
// another version) is refused, naming its file, and nothing is removed.
func TestHostileJournalsAreRefused(t *testing.T) {
	ctx := context.Background()
	head := `{"stateutil_journal":1,"writer":"pid 1 on h"}` + "\n"
	for name, c := range map[string]struct {
		segment string
		want    error
	}{
		"a path out of the directory": {head + `{"made":"file","path":"../etc/passwd"}`, snapshot.ErrCorrupt},
		"an absolute path":            {head + `{"made":"file","path":"/etc/passwd"}`, snapshot.ErrCorrupt},
		"a path not clean":            {head + `{"made":"file","path":"dst/./x"}`, snapshot.ErrCorrupt},
		"a temporary without prefix":  {head + `{"made":"temp","path":"precious"}`, snapshot.ErrCorrupt},
		"an aside without prefix":     {head + `{"made":"aside","path":"precious"}`, snapshot.ErrCorrupt},
		"an unknown kind":             {head + `{"made":"tree","path":"dst/x"}`, snapshot.ErrCorrupt},
		"an unknown field":            {head + `{"made":"file","path":"dst/x","all":true}`, snapshot.ErrCorrupt},
		"no header":                   {`{"made":"file","path":"dst/x"}`, snapshot.ErrCorrupt},
		"another version":             {`{"stateutil_journal":2}` + "\n" + `{"made":"file","path":"dst/x"}`, snapshot.ErrUnsupportedVersion},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "dst")
			for _, f := range []string{"precious/keep", "dst/x", "dst/_metadata"} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), []byte("keep me"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(journalDir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(journalDir(dst), "000001"), []byte(c.segment), 0o644); err != nil {
				t.Fatal(err)
			}
			before, _ := snaptest.HashTree(dir)
			_, err := Create(ctx, testReg, memory.Format, dst, snapshot.WriteOptions{Force: true})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "000001") {
				t.Errorf("Create: %v, want %v naming the segment", err, c.want)
			}
			after, _ := snaptest.HashTree(dir)
			if d := snaptest.TreeDiff(before, after); d != "" {
				t.Errorf("changed: %s", d)
			}
		})
	}
}

// A forced write killed between moving the old snapshot aside and moving
// the new one in leaves no snapshot at DST, or, on an object store, whose
// move is a copy file by file, part of the new one: the next write
// refuses without --force, as the old snapshot counts as at DST,
// changing nothing; with --force it removes the part, moves the old one
// back and replaces it.
func TestKilledSwapIsUndone(t *testing.T) {
	for _, half := range []bool{false, true} {
		t.Run(map[bool]string{false: "nothing moved in", true: "half moved in"}[half], func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			src := "../testdata/memory/example.dump"
			dst := filepath.Join(dir, "dst")
			if _, err := Run(ctx, testReg, Request{Source: src, Destination: dst, Format: "filesystem"}); err != nil {
				t.Fatal(err)
			}
			// What swap leaves when killed after its first rename.
			j, err := startJournal(ctx, storage.Local(), dst)
			if err != nil {
				t.Fatal(err)
			}
			staged, aside := sibling(dst, "replace"), sibling(dst, "old")
			if err := j.record(ctx, storage.Made{Kind: storage.MadeTemp, Path: staged}, storage.Made{Kind: madeMoving, Path: staged}, storage.Made{Kind: madeAside, Path: aside}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(ctx, testReg, Request{Source: src, Destination: staged, Format: "rocksdb"}); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dst, aside); err != nil {
				t.Fatal(err)
			}
			if half {
				files, err := relFiles(ctx, storage.Local(), staged)
				if err != nil {
					t.Fatal(err)
				}
				for rel := range files {
					if rel == "_metadata" {
						continue
					}
					b, _ := os.ReadFile(filepath.Join(staged, rel))
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			before, _ := snaptest.HashTree(dir)
			_, err = Run(ctx, testReg, Request{Source: src, Destination: dst, Format: "memory"})
			if !errors.Is(err, storage.ErrExist) || !strings.Contains(err.Error(), "moved aside") {
				t.Fatalf("a write without --force: %v, want it refused as a snapshot there, moved aside", err)
			}
			if after, _ := snaptest.HashTree(dir); snaptest.TreeDiff(before, after) != "" {
				t.Fatalf("the refused write changed %s", snaptest.TreeDiff(before, after))
			}
			if _, err := Run(ctx, testReg, Request{Source: src, Destination: dst, Format: "memory", Force: true, Verify: true}); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || entries[0].Name() != "dst" {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Fatalf("left beside DST: %v", names)
			}
		})
	}
}

// A forced write that replaced a snapshot in place and was killed after
// its commit, before it removed the old snapshot's files: the next
// writer removes those (the journal lists them as the old snapshot's)
// and keeps the new snapshot's and a file nobody listed.
func TestSettleRemovesTheReplacedSnapshotsFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// State too large to be inlined in _metadata: the files are apart.
	src := filepath.Join(dir, "src.dump")
	w, err := testReg.Create(ctx, memory.Format, src, snapshot.WriteOptions{StateSizeCap: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generate.Default()
	cfg.Keys, cfg.ValueBytes = 3000, 64
	if _, err := generate.Write(ctx, w, cfg); err != nil {
		t.Fatal(err)
	}
	a, b, dst := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "dst")
	for _, p := range []string{a, b} {
		if _, err := Run(ctx, testReg, Request{Source: src, Destination: p, Format: "filesystem"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := startJournal(ctx, storage.Local(), dst)
	if err != nil {
		t.Fatal(err)
	}
	oldFiles, _ := os.ReadDir(a)
	newFiles, _ := os.ReadDir(b)
	if len(oldFiles) < 2 {
		t.Fatalf("%s holds only %d files", a, len(oldFiles))
	}
	for _, set := range []struct {
		from  string
		files []os.DirEntry
		kind  storage.MadeKind
	}{{a, oldFiles, madeOld}, {b, newFiles, storage.MadeFile}} {
		for _, f := range set.files {
			if err := j.record(ctx, storage.Made{Kind: set.kind, Path: filepath.Join(dst, f.Name())}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(set.from, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, f.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dst, "NOTES.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := readJournal(ctx, storage.Local(), dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.settle(ctx, testReg); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadDir(dst)
	want := map[string]bool{"NOTES.txt": true}
	for _, f := range newFiles {
		want[f.Name()] = true
	}
	for _, f := range got {
		if !want[f.Name()] {
			t.Errorf("%s stayed", f.Name())
		}
		delete(want, f.Name())
	}
	if len(want) > 0 {
		t.Errorf("gone: %v", want)
	}
	if err := os.Remove(filepath.Join(dst, "NOTES.txt")); err != nil {
		t.Fatal(err)
	}
	r, err := testReg.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
