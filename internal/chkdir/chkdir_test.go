package chkdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// mkfiles creates each path (relative to root; a trailing / makes a directory).
func mkfiles(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseCheckpointDirName(t *testing.T) {
	for name, want := range map[string]int64{"chk-0": 0, "chk-7": 7, "chk-123": 123} {
		if id, ok := ParseCheckpointDirName(name); !ok || id != want {
			t.Errorf("%s -> %d, %v", name, id, ok)
		}
		if CheckpointDirName(want) != name {
			t.Errorf("CheckpointDirName(%d) = %s", want, CheckpointDirName(want))
		}
	}
	for _, name := range []string{"chk-", "chk--1", "chk-+1", "chk-01", "chk-1x", "CHK-1", "chk-99999999999999999999", "savepoint-1"} {
		if _, ok := ParseCheckpointDirName(name); ok {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	job := t.TempDir()
	mkfiles(t, job, "chk-1/_metadata", "chk-2/state", "chk-10/_metadata", "chk-9/_metadata", "chk-11/",
		"chk-01/_metadata", "chk-x/_metadata", "shared/a.sst", "taskowned/", "chk-12/_metadata/")
	cps, err := List(ctx, storage.Local(), job)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, c := range cps {
		ids = append(ids, c.ID)
		if c.Path != filepath.Join(job, CheckpointDirName(c.ID)) {
			t.Errorf("path %s", c.Path)
		}
	}
	if want := []int64{1, 9, 10}; !slicesEqual(ids, want) {
		t.Fatalf("complete checkpoints %v, want %v", ids, want)
	}
	empty := t.TempDir()
	mkfiles(t, empty, "chk-3/state")
	if cps, err := List(ctx, storage.Local(), empty); err != nil || len(cps) != 0 {
		t.Fatalf("List of a job without complete checkpoints: %v, %v", cps, err)
	}
	if _, err := List(ctx, storage.Local(), filepath.Join(job, "nope")); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("List of a missing dir: %v", err)
	}
}

// TestScan: every checkpoint of a job directory, committed or not, and
// the one-file chk-<N>.dump ones, by id; no other entry.
func TestScan(t *testing.T) {
	job := t.TempDir()
	mkfiles(t, job, "chk-1/_metadata", "chk-2/state", "chk-3.dump", "chk-10/_metadata", "chk-4.dump/", "chk-5.dump.tmp",
		"chk-01/_metadata", "chk-6/_metadata/", "shared/a.sst", "savepoint-1/_metadata")
	if err := syscall.Mkfifo(filepath.Join(job, "chk-7.dump"), 0o644); err != nil {
		t.Fatal(err)
	}
	cps, err := Scan(context.Background(), storage.Local(), job)
	if err != nil {
		t.Fatal(err)
	}
	type cp struct {
		id             int64
		name           string
		file, complete bool
	}
	var got []cp
	for _, c := range cps {
		got = append(got, cp{c.ID, filepath.Base(c.Path), c.File, c.Complete})
	}
	want := []cp{{1, "chk-1", false, true}, {2, "chk-2", false, false}, {3, "chk-3.dump", true, true}, {6, "chk-6", false, false}, {10, "chk-10", false, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("Scan: %+v, want %+v", got, want)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	job := filepath.Join(root, "job")
	mkfiles(t, root, "job/chk-3/_metadata", "job/chk-4/_metadata", "job/chk-5/partial", "sp/_metadata", "empty/", "file")
	for _, tc := range []struct {
		loc, path, jobDir string
	}{
		{job, filepath.Join(job, "chk-4"), job},
		{"file://" + job, filepath.Join(job, "chk-4"), job},
		{filepath.Join(job, "chk-3"), filepath.Join(job, "chk-3"), job},
		{filepath.Join(job, "chk-3", "_metadata"), filepath.Join(job, "chk-3"), job},
		{filepath.Join(root, "sp"), filepath.Join(root, "sp"), ""},
		{filepath.Join(root, "sp") + "/", filepath.Join(root, "sp"), ""},
	} {
		st, p, err := storage.NewRegistry().Resolve(ctx, tc.loc)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ResolveIn(ctx, st, p)
		if err != nil {
			t.Errorf("%s: %v", tc.loc, err)
			continue
		}
		if d.Path != tc.path || d.JobDir != tc.jobDir || d.Metadata() != filepath.Join(tc.path, MetadataFile) {
			t.Errorf("%s -> %+v, want %s in %q", tc.loc, d, tc.path, tc.jobDir)
		}
	}
	for _, loc := range []string{filepath.Join(job, "chk-5"), filepath.Join(root, "empty"), filepath.Join(root, "file"), filepath.Join(root, "missing")} {
		if d, err := ResolveIn(ctx, storage.Local(), loc); !errors.Is(err, snapshot.ErrNotFound) {
			t.Errorf("%s -> %+v, %v; want ErrNotFound", loc, d, err)
		}
	}
}

func TestRefPath(t *testing.T) {
	root := t.TempDir()
	job := filepath.Join(root, "job")
	chk := filepath.Join(job, "chk-1")
	mkfiles(t, root, "job/chk-1/_metadata", "job/chk-1/a", "job/chk-1/sub/b", "job/shared/s1", "job/taskowned/t1",
		"job/chk-0/other", "outside", "sp/_metadata", "sp/shared/x")
	os.Symlink(filepath.Join(root, "outside"), filepath.Join(chk, "link-out"))
	os.Symlink(filepath.Join(job, "chk-0"), filepath.Join(chk, "dir-out"))
	os.Symlink("a", filepath.Join(chk, "link-in"))
	os.Symlink(filepath.Join(root, "outside"), filepath.Join(job, "shared", "s-out"))
	d := At(storage.Local(), chk)
	sp := At(storage.Local(), filepath.Join(root, "sp"))
	for _, tc := range []struct {
		d        Dir
		ref, out string
	}{
		{d, "a", filepath.Join(chk, "a")},
		{d, "sub/b", filepath.Join(chk, "sub/b")},
		{d, "link-in", filepath.Join(chk, "link-in")},
		{d, "not-yet", filepath.Join(chk, "not-yet")},
		{d, "shared/s1", filepath.Join(job, "shared/s1")},
		{d, "taskowned/t1", filepath.Join(job, "taskowned/t1")},
		{sp, "shared/x", filepath.Join(root, "sp/shared/x")},
	} {
		p, err := tc.d.RefPath(tc.ref)
		if err != nil || p != tc.out {
			t.Errorf("RefPath(%q) = %q, %v; want %q", tc.ref, p, err, tc.out)
		}
	}
	for _, ref := range []string{"", ".", "..", "../x", "../chk-0/other", "/etc/passwd", "a/../a", "a//b", "a/", "./a", `a\..\..\x`,
		"shared/../chk-0/other", "shared/../../outside", "link-out", "dir-out/other", "shared/s-out"} {
		_, err := d.RefPath(ref)
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("RefPath(%q): %v, want ErrCorrupt", ref, err)
			continue
		}
		if !strings.Contains(err.Error(), MetadataFile) || !strings.Contains(err.Error(), `"`+strings.ReplaceAll(ref, `\`, `\\`)+`"`) {
			t.Errorf("RefPath(%q): %q does not name _metadata and the reference", ref, err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(chk, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RefPath("fifo"); !errors.Is(err, storage.ErrNotRegular) || !strings.Contains(err.Error(), filepath.Join(chk, "fifo")) {
		t.Errorf("RefPath(fifo): %v, want ErrNotRegular naming the FIFO", err)
	}
	if _, err := d.Open(context.Background(), "missing"); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("Open(missing): %v", err)
	}
	f, err := d.Open(context.Background(), "shared/s1")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestCommitMetadata(t *testing.T) {
	ctx := context.Background()
	d := At(storage.Local(), filepath.Join(t.TempDir(), "job", "chk-2"))
	if d.JobDir == "" {
		t.Fatal("chk-2 not taken as a checkpoint")
	}
	os.MkdirAll(d.Path, 0o755)
	if ok, _ := d.HasMetadata(ctx); ok {
		t.Fatal("metadata before commit")
	}
	if cps, _ := List(ctx, storage.Local(), d.JobDir); len(cps) != 0 {
		t.Fatal("checkpoint complete before commit")
	}
	if err := d.CommitMetadata(ctx, []byte("m")); err != nil {
		t.Fatal(err)
	}
	cps, _ := List(ctx, storage.Local(), d.JobDir)
	if len(cps) != 1 || cps[0].ID != 2 {
		t.Fatalf("after commit: %+v", cps)
	}
	left, _ := os.ReadDir(d.Path)
	if len(left) != 1 {
		t.Fatalf("commit left %v", left)
	}
}
