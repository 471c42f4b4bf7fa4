// Package storagetest is a conformance suite for storage.Storage
// implementations: every backend must pass the same behaviour.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"path"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/storage"
)

// Run runs the suite. newStorage returns the storage under test and an
// existing, empty directory in it that the subtest may use freely; it is
// called once per subtest and should register its own cleanup.
func Run(t *testing.T, newStorage func(t *testing.T) (storage.Storage, string)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st storage.Storage, root string)
	}{
		{"CreateCommitVisible", testCreateCommit},
		{"UncommittedNotVisible", testUncommitted},
		{"AbortLeavesNothing", testAbort},
		{"EmptyFile", testEmptyFile},
		{"Overwrite", testOverwrite},
		{"RangedReads", testRangedReads},
		{"StatListSorted", testStatList},
		{"MkdirAll", testMkdirAll},
		{"Remove", testRemove},
		{"RemoveAll", testRemoveAll},
		{"Rename", testRename},
		{"NotFound", testNotFound},
		{"DirectoryAsFile", testDirectoryAsFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, root := newStorage(t)
			tc.fn(t, st, root)
		})
	}
}

var ctx = context.Background()

func write(t *testing.T, st storage.Storage, p string, data []byte) {
	t.Helper()
	if err := storage.WriteFile(ctx, st, p, data); err != nil {
		t.Fatalf("WriteFile(%s): %v", p, err)
	}
}

func read(t *testing.T, st storage.Storage, p string) []byte {
	t.Helper()
	b, err := storage.ReadAll(ctx, st, p, 1<<30)
	if err != nil {
		t.Fatalf("ReadAll(%s): %v", p, err)
	}
	return b
}

func names(t *testing.T, st storage.Storage, dir string) []string {
	t.Helper()
	infos, err := st.List(ctx, dir)
	if err != nil {
		t.Fatalf("List(%s): %v", dir, err)
	}
	out := []string{}
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("%s: got %v, want an error matching storage.ErrNotFound", what, err)
	}
}

func testCreateCommit(t *testing.T, st storage.Storage, root string) {
	p := path.Join(root, "a")
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []string{"hello", ", ", "world"} {
		if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := string(read(t, st, p)); got != "hello, world" {
		t.Fatalf("read %q after commit, want %q", got, "hello, world")
	}
	info, err := st.Stat(ctx, p)
	if err != nil || info.Size != 12 || info.IsDir || info.Name != "a" {
		t.Fatalf("Stat = %+v, %v; want a 12-byte file named a", info, err)
	}
	// No temporary left beside it.
	if got := names(t, st, root); len(got) != 1 || got[0] != "a" {
		t.Fatalf("List after commit = %q, want [a]", got)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v, want nil (no-op)", err)
	}
	if got := string(read(t, st, p)); got != "hello, world" {
		t.Fatalf("Abort after Commit changed the file to %q", got)
	}
	if err := w.Commit(); err == nil {
		t.Fatal("second Commit succeeded, want an error")
	}
}

func testUncommitted(t *testing.T, st storage.Storage, root string) {
	p := path.Join(root, "pending")
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write(bytes.Repeat([]byte("x"), 100_000)); err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, p)
	wantNotFound(t, "Stat of an uncommitted file", err)
	_, err = st.Open(ctx, p)
	wantNotFound(t, "Open of an uncommitted file", err)
	for _, n := range names(t, st, root) {
		if n == "pending" {
			t.Fatalf("List shows uncommitted file %q", n)
		}
	}
}

func testAbort(t *testing.T, st storage.Storage, root string) {
	p := path.Join(root, "aborted")
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("discard me")); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	_, err = st.Stat(ctx, p)
	wantNotFound(t, "Stat after Abort", err)
	if got := names(t, st, root); len(got) != 0 {
		t.Fatalf("List after Abort = %q, want nothing (no temporary either)", got)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second Abort: %v, want nil", err)
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded, want an error")
	}
	if _, err := st.Stat(ctx, p); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Commit after Abort made the file visible: %v", err)
	}
}

func testEmptyFile(t *testing.T, st storage.Storage, root string) {
	p := path.Join(root, "empty")
	write(t, st, p, nil)
	f, err := st.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != 0 {
		t.Fatalf("Size = %d, want 0", f.Size())
	}
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.ReadAt(make([]byte, 10), 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt(0) = %d, %v; want 0, io.EOF", n, err)
	}
}

func testOverwrite(t *testing.T, st storage.Storage, root string) {
	p := path.Join(root, "f")
	write(t, st, p, []byte("first version, longer"))
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("second")); err != nil {
		t.Fatal(err)
	}
	// Until Commit readers still see the old bytes.
	if got := string(read(t, st, p)); got != "first version, longer" {
		t.Fatalf("before Commit read %q, want the old content", got)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit over an existing file: %v", err)
	}
	if got := string(read(t, st, p)); got != "second" {
		t.Fatalf("after Commit read %q, want %q", got, "second")
	}
	if got := names(t, st, root); len(got) != 1 {
		t.Fatalf("List after overwrite = %q, want one entry", got)
	}
}

func testRangedReads(t *testing.T, st storage.Storage, root string) {
	// 2.5 MiB: past several 64 KiB packets and, on a test HDFS with 1 MiB
	// blocks, across block boundaries.
	data := make([]byte, 5<<19)
	rand.New(rand.NewSource(1)).Read(data)
	p := path.Join(root, "ranged")
	write(t, st, p, data)

	f, err := st.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(len(data))
	if f.Size() != size {
		t.Fatalf("Size = %d, want %d", f.Size(), size)
	}
	if !strings.Contains(f.Name(), "ranged") {
		t.Fatalf("Name = %q, want it to name the file", f.Name())
	}

	for _, c := range []struct {
		off int64
		n   int
	}{
		{0, 10}, {1, 100}, {65535, 2}, {65536, 70000}, {1<<20 - 5, 10},
		{1 << 20, 1 << 20}, {12345, 1<<20 + 77}, {size - 10, 10}, {0, int(size)}, {7, 0},
	} {
		buf := make([]byte, c.n)
		n, err := f.ReadAt(buf, c.off)
		if n != c.n || (err != nil && !(err == io.EOF && c.off+int64(c.n) == size)) {
			t.Fatalf("ReadAt(len %d, off %d) = %d, %v; want %d, nil", c.n, c.off, n, err, c.n)
		}
		if !bytes.Equal(buf, data[c.off:c.off+int64(c.n)]) {
			t.Fatalf("ReadAt(len %d, off %d) returned the wrong bytes", c.n, c.off)
		}
	}
	// Short reads at the end report io.EOF with what there was.
	for _, c := range []struct {
		off   int64
		wantN int
	}{{size - 5, 5}, {size, 0}, {size + 100, 0}, {size + 1<<30, 0}} {
		buf := make([]byte, 10)
		n, err := f.ReadAt(buf, c.off)
		if n != c.wantN || err != io.EOF {
			t.Fatalf("ReadAt(len 10, off %d) = %d, %v; want %d, io.EOF", c.off, n, err, c.wantN)
		}
		if n > 0 && !bytes.Equal(buf[:n], data[c.off:c.off+int64(n)]) {
			t.Fatalf("ReadAt(len 10, off %d) returned the wrong bytes", c.off)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("ReadAt at a negative offset succeeded")
	}

	// ReadAt must not move the sequential position.
	head := make([]byte, 1000)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 50), 2<<20); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(head, rest...), data) {
		t.Fatal("Read interleaved with ReadAt returned the wrong bytes")
	}
	if n, err := f.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read at end = %d, %v; want 0, io.EOF", n, err)
	}
}

func testStatList(t *testing.T, st storage.Storage, root string) {
	for _, n := range []string{"b", "a", "c.data"} {
		write(t, st, path.Join(root, n), []byte(n+"-content"))
	}
	if err := st.MkdirAll(ctx, path.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	infos, err := st.List(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Info{
		{Name: "a", Size: 9}, {Name: "b", Size: 9}, {Name: "c.data", Size: 14}, {Name: "d", IsDir: true},
	}
	if len(infos) != len(want) {
		t.Fatalf("List = %+v, want %d entries", infos, len(want))
	}
	for i, w := range want {
		g := infos[i]
		if g.Name != w.Name || g.Size != w.Size || g.IsDir != w.IsDir || g.Path != path.Join(root, w.Name) {
			t.Fatalf("List[%d] = %+v, want name %q size %d dir %v path %q", i, g, w.Name, w.Size, w.IsDir, path.Join(root, w.Name))
		}
		if g.ModTime.IsZero() {
			t.Fatalf("List[%d] has no ModTime", i)
		}
		s, err := st.Stat(ctx, g.Path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != g.Name || s.Size != g.Size || s.IsDir != g.IsDir || s.Path != g.Path {
			t.Fatalf("Stat(%s) = %+v, List said %+v", g.Path, s, g)
		}
	}
	if got := names(t, st, path.Join(root, "d")); len(got) != 0 {
		t.Fatalf("List of an empty dir = %q", got)
	}
	if _, err := st.List(ctx, path.Join(root, "a")); err == nil {
		t.Fatal("List of a file succeeded, want an error")
	}
}

func testMkdirAll(t *testing.T, st storage.Storage, root string) {
	deep := path.Join(root, "x", "y", "z")
	if err := st.MkdirAll(ctx, deep); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path.Join(root, "x"), path.Join(root, "x", "y"), deep} {
		info, err := st.Stat(ctx, p)
		if err != nil || !info.IsDir || info.Size != 0 {
			t.Fatalf("Stat(%s) = %+v, %v; want a directory", p, info, err)
		}
	}
	if err := st.MkdirAll(ctx, deep); err != nil {
		t.Fatalf("MkdirAll of an existing dir: %v", err)
	}
	write(t, st, path.Join(deep, "f"), []byte("x"))
	if err := st.MkdirAll(ctx, path.Join(deep, "f")); err == nil {
		t.Fatal("MkdirAll over a file succeeded")
	}
}

func testRemove(t *testing.T, st storage.Storage, root string) {
	f := path.Join(root, "f")
	write(t, st, f, []byte("x"))
	if err := st.Remove(ctx, f); err != nil {
		t.Fatal(err)
	}
	_, err := st.Stat(ctx, f)
	wantNotFound(t, "Stat after Remove", err)
	wantNotFound(t, "Remove of a missing file", st.Remove(ctx, f))

	d := path.Join(root, "d")
	if err := st.MkdirAll(ctx, d); err != nil {
		t.Fatal(err)
	}
	write(t, st, path.Join(d, "inner"), []byte("x"))
	if err := st.Remove(ctx, d); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	if got := string(read(t, st, path.Join(d, "inner"))); got != "x" {
		t.Fatal("failed Remove touched the directory's contents")
	}
	if err := st.Remove(ctx, path.Join(d, "inner")); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove(ctx, d); err != nil {
		t.Fatalf("Remove of an empty directory: %v", err)
	}
	if got := names(t, st, root); len(got) != 0 {
		t.Fatalf("List after removes = %q", got)
	}
}

func testRemoveAll(t *testing.T, st storage.Storage, root string) {
	tree := path.Join(root, "tree")
	if err := st.MkdirAll(ctx, path.Join(tree, "a", "b")); err != nil {
		t.Fatal(err)
	}
	write(t, st, path.Join(tree, "a", "b", "f"), []byte("x"))
	write(t, st, path.Join(tree, "g"), []byte("y"))
	if err := st.RemoveAll(ctx, tree); err != nil {
		t.Fatal(err)
	}
	_, err := st.Stat(ctx, tree)
	wantNotFound(t, "Stat after RemoveAll", err)
	if err := st.RemoveAll(ctx, tree); err != nil {
		t.Fatalf("RemoveAll of a missing path: %v, want nil", err)
	}
	f := path.Join(root, "single")
	write(t, st, f, []byte("x"))
	if err := st.RemoveAll(ctx, f); err != nil {
		t.Fatalf("RemoveAll of a file: %v", err)
	}
	if got := names(t, st, root); len(got) != 0 {
		t.Fatalf("List after RemoveAll = %q", got)
	}
}

func testRename(t *testing.T, st storage.Storage, root string) {
	a, b, c := path.Join(root, "a"), path.Join(root, "b"), path.Join(root, "c")
	write(t, st, a, []byte("A"))
	if err := st.Rename(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	_, err := st.Stat(ctx, a)
	wantNotFound(t, "Stat of the old name", err)
	if got := string(read(t, st, b)); got != "A" {
		t.Fatalf("renamed file reads %q", got)
	}

	write(t, st, c, []byte("C"))
	err = st.Rename(ctx, b, c)
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("Rename onto an existing file = %v, want storage.ErrExist", err)
	}
	if string(read(t, st, b)) != "A" || string(read(t, st, c)) != "C" {
		t.Fatal("refused Rename changed a file")
	}
	wantNotFound(t, "Rename of a missing file", st.Rename(ctx, a, path.Join(root, "z")))

	// Directories move with their contents.
	d := path.Join(root, "d")
	if err := st.MkdirAll(ctx, d); err != nil {
		t.Fatal(err)
	}
	write(t, st, path.Join(d, "inner"), []byte("I"))
	if err := st.Rename(ctx, d, path.Join(root, "e")); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, st, path.Join(root, "e", "inner"))); got != "I" {
		t.Fatalf("file in renamed dir reads %q", got)
	}
}

func testNotFound(t *testing.T, st storage.Storage, root string) {
	missing := path.Join(root, "no-such-file")
	_, err := st.Open(ctx, missing)
	wantNotFound(t, "Open", err)
	if !strings.Contains(err.Error(), "no-such-file") {
		t.Fatalf("Open error %q does not name the path", err)
	}
	_, err = st.Stat(ctx, missing)
	wantNotFound(t, "Stat", err)
	_, err = st.List(ctx, missing)
	wantNotFound(t, "List", err)
	wantNotFound(t, "Remove", st.Remove(ctx, missing))
	_, err = storage.ReadAll(ctx, st, missing, 100)
	wantNotFound(t, "ReadAll", err)
	_, err = st.Create(ctx, path.Join(root, "no-such-dir", "f"))
	wantNotFound(t, "Create in a missing directory", err)
}

func testDirectoryAsFile(t *testing.T, st storage.Storage, root string) {
	d := path.Join(root, "dir")
	if err := st.MkdirAll(ctx, d); err != nil {
		t.Fatal(err)
	}
	f, err := st.Open(ctx, d)
	if err == nil {
		f.Close()
		t.Fatal("Open of a directory succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "dir") {
		t.Fatalf("error %q does not name the directory", err)
	}
	if _, err := storage.ReadAll(ctx, st, d, 100); err == nil {
		t.Fatal("ReadAll of a directory succeeded")
	}
}
