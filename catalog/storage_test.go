package catalog_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/catalog"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// TestListsOnHDFS, TestListsOnS3, TestListsOnGCS and TestListsOnAzure list
// the checked-in Flink corpus and one tree of every kind on local disk and,
// copied, on the storage, and find the same (see corpusOnStorage and
// listsOnStorage).
func TestListsOnHDFS(t *testing.T) { listsOn(t, formattest.HDFSDir(t)) }

func TestListsOnS3(t *testing.T) { listsOn(t, formattest.S3Dir(t)) }

func TestListsOnGCS(t *testing.T) { listsOn(t, formattest.GCSDir(t)) }

func TestListsOnAzure(t *testing.T) { listsOn(t, formattest.AzureDir(t)) }

// listsOn runs both listings under the storage directory remote.
func listsOn(t *testing.T, remote string) {
	t.Run("corpus", func(t *testing.T) { corpusOnStorage(t, remote+"/corpus") })
	t.Run("tree", func(t *testing.T) { listsOnStorage(t, remote+"/tree") })
}

// corpusOnStorage copies every checked-in Flink snapshot to the storage and
// lists each there as it lists on local disk (its recorded absolute paths
// mapped to the copy), complete.
func corpusOnStorage(t *testing.T, remote string) {
	entries := corpus(t)
	for i, e := range entries {
		upload(t, filepath.Join(e.Dir, "snapshot"), fmt.Sprintf("%s/%d", remote, i))
	}
	for i, e := range entries {
		old, local := e.PathMap()
		at := fmt.Sprintf("%s/%d", remote, i)
		want := list(t, local, map[string]string{old: local})
		got := list(t, at, map[string]string{old: at})
		if len(got.Snapshots) != 1 || len(want.Snapshots) != 1 {
			t.Errorf("%s: %d snapshots on the storage, %d locally, want 1", e.Dir, len(got.Snapshots), len(want.Snapshots))
			continue
		}
		g, w := got.Snapshots[0], want.Snapshots[0]
		if !g.Complete || g.Location != at+"/"+e.Manifest.SnapshotSubpath {
			t.Errorf("%s at %s: complete %v, problems %q", e.Dir, g.Location, g.Complete, g.Problems)
		}
		g.Location, g.Modified, w.Location = "", w.Modified, ""
		if gs, ws := summary(t, g), summary(t, w); gs != ws {
			t.Errorf("%s differs:\n  %s: %s\n  local: %s", e.Dir, at, gs, ws)
		}
	}
}

func listsOnStorage(t *testing.T, remote string) {
	local := t.TempDir()
	job, flinkMap := sharedJob(t, filepath.Join(local, "checkpoints"))
	var old string
	for old = range flinkMap {
	}
	sp := corpusEntry(t, "2.3.0", "basic-hashmap-canonical")
	formattest.CopyTree(t, sp.SnapshotDir(), filepath.Join(local, "savepoints", filepath.Base(sp.SnapshotDir())))
	formattest.Write(t, reg, filesystem.Format, filepath.Join(local, "checkpoints", "own-job", "chk-3"), 1, 128, 40, snapshot.WriteOptions{})
	formattest.Write(t, reg, rocksdb.Format, filepath.Join(local, "savepoints", "own-rocksdb"), 2, 128, 40, snapshot.WriteOptions{})
	if err := os.WriteFile(filepath.Join(local, "savepoints", "example.dump"), readFile(t, "../testdata/memory/example.dump"), 0o644); err != nil {
		t.Fatal(err)
	}
	upload(t, local, remote)

	ls := func(root, checkpoints string) *catalog.Listing {
		l, err := catalog.List(ctx, reg, root, catalog.Options{Depth: 3, Open: snapshot.OpenOptions{PathMap: map[string]string{old: checkpoints}}})
		if err != nil {
			t.Fatalf("ls %s: %v", root, err)
		}
		return l
	}
	want := ls(local, filepath.Join(local, "checkpoints"))
	got := ls(remote, remote+"/checkpoints")
	if len(want.Snapshots) != 6 || len(want.Jobs) != 2 {
		t.Fatalf("the local tree lists %d snapshots in %d jobs, want 6 in 2: %+v", len(want.Snapshots), len(want.Jobs), want)
	}
	if len(got.Snapshots) != len(want.Snapshots) || len(got.Jobs) != len(want.Jobs) || got.Files != want.Files || got.Bytes != want.Bytes {
		t.Fatalf("%s lists %d snapshots, %d jobs, %d files of %d bytes; the local copy %d, %d, %d of %d",
			remote, len(got.Snapshots), len(got.Jobs), got.Files, got.Bytes, len(want.Snapshots), len(want.Jobs), want.Files, want.Bytes)
	}
	for i, w := range want.Snapshots {
		g := got.Snapshots[i]
		if !w.Complete {
			t.Errorf("local %s incomplete: %q", w.Name, w.Problems)
		}
		if g.Location != remote+"/"+w.Name {
			t.Errorf("%s at %s", w.Name, g.Location)
		}
		g.Location, g.Modified, w.Location = "", w.Modified, ""
		if gs, ws := summary(t, g), summary(t, w); gs != ws {
			t.Errorf("%s differs:\n  %s: %s\n  local: %s", w.Name, remote, gs, ws)
		}
	}
	for i, w := range want.Jobs {
		g := got.Jobs[i]
		if g.Location != remote+"/"+w.Name {
			t.Errorf("job %s at %s", w.Name, g.Location)
		}
		g.Location, w.Location = "", ""
		if g != w {
			t.Errorf("job %s: %+v on %s, %+v locally", w.Name, g, remote, w)
		}
	}

	st, p, err := reg.Storage.Resolve(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := os.ReadDir(filepath.Join(job, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(local, filepath.Join(job, "shared", shared[0].Name()))
	gone := path.Join(p, filepath.ToSlash(rel))
	if err := st.Remove(ctx, gone); err != nil {
		t.Fatal(err)
	}
	got = ls(remote, remote+"/checkpoints")
	jobName, _ := filepath.Rel(local, job)
	incomplete := 0
	for _, s := range got.Snapshots {
		if s.Complete {
			continue
		}
		incomplete++
		if s.Job != filepath.ToSlash(jobName) || s.MissingFiles != 1 || !strings.Contains(strings.Join(s.Problems, "\n"), st.URI(gone)) {
			t.Errorf("%s: job %q, %d missing, problems %q; want the file %s missing", s.Name, s.Job, s.MissingFiles, s.Problems, st.URI(gone))
		}
	}
	if incomplete != 2 {
		t.Errorf("%d snapshots incomplete after %s was removed, want its 2 checkpoints", incomplete, st.URI(gone))
	}
}

// summary is what a listed snapshot says, for comparing two listings.
func summary(t *testing.T, s catalog.Snapshot) string {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// upload copies the local tree dir to the location remote.
func upload(t *testing.T, dir, remote string) {
	t.Helper()
	st, root, err := reg.Storage.Resolve(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		to := path.Join(root, filepath.ToSlash(rel))
		if d.IsDir() {
			return st.MkdirAll(ctx, to)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return storage.WriteFile(ctx, st, to, data)
	})
	if err != nil {
		t.Fatal(err)
	}
}
