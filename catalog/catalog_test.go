package catalog_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/catalog"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

var (
	ctx = context.Background()
	reg = formattest.Registry(memory.Register, filesystem.Register, rocksdb.Register, flink.Register)
)

// corpusRoots hold the real Flink snapshots checked in (testenv/flink/README.md).
var corpusRoots = []string{"../testdata/flink", "../testdata/flink-connectors", "../testdata/flink-kafka"}

func corpus(t *testing.T) []flinkharness.Entry {
	t.Helper()
	var out []flinkharness.Entry
	for _, root := range corpusRoots {
		es, err := flinkharness.ReadCorpus(root)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
	}
	if len(out) < 50 {
		t.Fatalf("%d corpus entries under %v: the checked-in corpus is missing", len(out), corpusRoots)
	}
	return out
}

// onDisk counts the regular files below dir and their bytes, as the
// operating system has them.
func onDisk(t *testing.T, dir string) (files int, bytes int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		in, err := d.Info()
		files++
		bytes += in.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, bytes
}

func list(t *testing.T, root string, pathMap map[string]string) *catalog.Listing {
	t.Helper()
	l, err := catalog.List(ctx, reg, root, catalog.Options{Open: snapshot.OpenOptions{PathMap: pathMap}})
	if err != nil {
		t.Fatalf("ls %s: %v", root, err)
	}
	return l
}

func wantKind(m flinkharness.Manifest) snapshot.Kind {
	if m.Kind == "checkpoint" {
		return snapshot.Checkpoint
	}
	return snapshot.Savepoint
}

// TestListsFlinkCorpus lists every checked-in real Flink snapshot from the
// directory Flink wrote it into: one snapshot where the manifest says, of
// the kind and checkpoint id the harness recorded, complete, with every
// file on disk counted, and as many operators as the full reader finds.
func TestListsFlinkCorpus(t *testing.T) {
	for _, e := range corpus(t) {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			old, now := e.PathMap()
			root := filepath.Join(e.Dir, "snapshot")
			l := list(t, root, map[string]string{old: now})
			if len(l.Snapshots) != 1 {
				t.Fatalf("%d snapshots, want 1: %+v", len(l.Snapshots), l.Snapshots)
			}
			s := l.Snapshots[0]
			if s.Name != e.Manifest.SnapshotSubpath || s.Location != e.SnapshotDir() {
				t.Errorf("snapshot %q at %q, want %q at %q", s.Name, s.Location, e.Manifest.SnapshotSubpath, e.SnapshotDir())
			}
			if s.Format != "flink" || s.Kind != wantKind(e.Manifest) || s.ID == nil || *s.ID != e.Manifest.CheckpointID {
				t.Errorf("format %q, kind %q, id %v; want flink, %q, %d", s.Format, s.Kind, s.ID, wantKind(e.Manifest), e.Manifest.CheckpointID)
			}
			if !s.Committed || !s.Complete || s.MissingFiles != 0 || len(s.Problems) != 0 {
				t.Errorf("not complete: %+v", s)
			}
			files, bytes := onDisk(t, root)
			if s.Files != files || s.Bytes != bytes || l.Files != files || l.Bytes != bytes {
				t.Errorf("%d files of %d bytes (listing: %d, %d); on disk %d files of %d bytes", s.Files, s.Bytes, l.Files, l.Bytes, files, bytes)
			}
			if s.SharedFiles != 0 || len(s.SharesWith) != 0 {
				t.Errorf("one snapshot shares files with nothing: %+v", s)
			}
			r, err := reg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: now}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if s.Operators == nil || *s.Operators != len(r.Snapshot().Operators) {
				t.Errorf("%v operators, the reader has %d", s.Operators, len(r.Snapshot().Operators))
			}
			wantJobs := 0
			if s.Kind == snapshot.Checkpoint {
				wantJobs = 1
				if j := l.Jobs[0]; j.Name != path.Dir(s.Name) || j.Checkpoints != 1 || j.Complete != 1 || j.Files != files || j.Bytes != bytes {
					t.Errorf("job %+v", j)
				}
			}
			if len(l.Jobs) != wantJobs {
				t.Errorf("%d jobs, want %d", len(l.Jobs), wantJobs)
			}
		})
	}
}

// TestMovedCheckpointNeedsPathMap: the absolute paths an incremental
// checkpoint records lead nowhere once it was moved; each shared file is
// missing, and the problem says how to map them.
func TestMovedCheckpointNeedsPathMap(t *testing.T) {
	e := corpusEntry(t, "2.3.0", "basic-rocksdb-checkpoint-incremental")
	l := list(t, filepath.Join(e.Dir, "snapshot"), nil)
	shared, err := os.ReadDir(filepath.Join(e.SnapshotDir(), "..", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	s := l.Snapshots[0]
	if !s.Committed || s.Complete || s.MissingFiles != len(shared) || len(shared) == 0 {
		t.Fatalf("committed %v, complete %v, %d files missing; want %d missing", s.Committed, s.Complete, s.MissingFiles, len(shared))
	}
	for _, p := range s.Problems {
		if !strings.Contains(p, "--path-map") || !strings.Contains(p, e.Manifest.OriginalDir) {
			t.Errorf("problem %q names neither the recorded path nor --path-map", p)
		}
	}
}

func corpusEntry(t *testing.T, version, name string) flinkharness.Entry {
	t.Helper()
	for _, e := range corpus(t) {
		if e.Manifest.FlinkVersion == version && e.Name == name {
			return e
		}
	}
	t.Fatalf("no corpus entry %s/%s", version, name)
	return flinkharness.Entry{}
}

// fixtureRoot is ../shared/fixtures/flink beside the repository, or skips.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../shared/fixtures/flink")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := os.Stat(root); err != nil || !in.IsDir() {
		t.Skipf("Flink fixtures not found at %s (they live in ../shared next to the repository); skipping", root)
	}
	return root
}

// TestListsSharedFlinkFixtures lists Flink's own migration-test snapshots
// (Flink 1.3 to 1.17): every directory holding a _metadata, each complete
// and counting exactly the files in its directory.
func TestListsSharedFlinkFixtures(t *testing.T) {
	root := fixtureRoot(t)
	var want []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "_metadata" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			want = append(want, filepath.ToSlash(rel))
		}
		return err
	})
	l, err := catalog.List(ctx, reg, root, catalog.Options{Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range l.Snapshots {
		got = append(got, s.Name)
		files, bytes := onDisk(t, s.Location)
		if !s.Complete || s.Format != "flink" || s.Files != files || s.Bytes != bytes {
			t.Errorf("%s: complete %v, format %q, %d files of %d bytes; on disk %d of %d; problems %v", s.Name, s.Complete, s.Format, s.Files, s.Bytes, files, bytes, s.Problems)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %d snapshots, %d directories hold a _metadata:\n got %v\nwant %v", len(got), len(want), got, want)
	}
}

// treeDigest hashes every path and file's bytes below dir.
func treeDigest(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		io.WriteString(h, p+"\x00")
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			h.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// sharedJob makes a checkpoint root at root whose job has two retained
// incremental checkpoints over the same shared files: the corpus's Flink
// checkpoint as chk-1 and, as Flink would record a checkpoint that
// uploaded nothing new, its copy as chk-2. It returns the job directory
// and the path map its absolute paths need.
func sharedJob(t *testing.T, root string) (job string, pathMap map[string]string) {
	t.Helper()
	e := corpusEntry(t, "2.3.0", "basic-rocksdb-checkpoint-incremental")
	formattest.CopyTree(t, filepath.Join(e.Dir, "snapshot"), root)
	job = filepath.Dir(filepath.Join(root, e.Manifest.SnapshotSubpath))
	formattest.CopyTree(t, filepath.Join(job, "chk-1"), filepath.Join(job, "chk-2"))
	old, _ := e.PathMap()
	return job, map[string]string{old: root}
}

// TestSharedFilesCountedOnce: two checkpoints that reference the same
// shared files each count them, say which checkpoint shares them, and
// their job and the listing count them once.
func TestSharedFilesCountedOnce(t *testing.T) {
	root := t.TempDir()
	job, pathMap := sharedJob(t, root)
	l := list(t, root, pathMap)
	if len(l.Snapshots) != 2 || len(l.Jobs) != 1 {
		t.Fatalf("%d snapshots, %d jobs; want 2, 1", len(l.Snapshots), len(l.Jobs))
	}
	sharedFiles, sharedBytes := onDisk(t, filepath.Join(job, "shared"))
	jobFiles, jobBytes := onDisk(t, job)
	for i, s := range l.Snapshots {
		other := l.Snapshots[1-i].Name
		ownFiles, ownBytes := onDisk(t, s.Location)
		if !s.Complete || s.SharedFiles != sharedFiles || s.SharedBytes != sharedBytes || !slices.Equal(s.SharesWith, []string{other}) {
			t.Errorf("%s: complete %v, shares %d files of %d bytes with %v; want %d, %d with %s", s.Name, s.Complete, s.SharedFiles, s.SharedBytes, s.SharesWith, sharedFiles, sharedBytes, other)
		}
		if s.Files != ownFiles+sharedFiles || s.Bytes != ownBytes+sharedBytes {
			t.Errorf("%s: %d files of %d bytes; want its own %d of %d and the shared %d of %d", s.Name, s.Files, s.Bytes, ownFiles, ownBytes, sharedFiles, sharedBytes)
		}
	}
	j := l.Jobs[0]
	if j.Name != filepath.Base(job) || j.Checkpoints != 2 || j.Complete != 2 || j.Files != jobFiles || j.Bytes != jobBytes ||
		j.SharedFiles != sharedFiles || j.SharedBytes != sharedBytes || l.Files != jobFiles || l.Bytes != jobBytes {
		t.Errorf("job %+v, listing %d files of %d bytes; on disk %d files of %d bytes, %d of %d shared", j, l.Files, l.Bytes, jobFiles, jobBytes, sharedFiles, sharedBytes)
	}
	// The job directory itself lists the same.
	lj := list(t, job, pathMap)
	if len(lj.Snapshots) != 2 || lj.Snapshots[0].Name != "chk-1" || lj.Snapshots[1].Name != "chk-2" || lj.Jobs[0].Bytes != jobBytes {
		t.Errorf("listing the job directory: %+v", lj)
	}
}

// TestIncompleteWhenFileRemoved: on a copy (the input stays as it was), a
// removed shared file and a truncated one make both checkpoints
// referencing them incomplete, naming each.
func TestIncompleteWhenFileRemoved(t *testing.T) {
	e := corpusEntry(t, "2.3.0", "basic-rocksdb-checkpoint-incremental")
	before := treeDigest(t, e.Dir)
	root := t.TempDir()
	job, pathMap := sharedJob(t, root)
	shared, err := os.ReadDir(filepath.Join(job, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shared) < 2 {
		t.Fatalf("%d shared files, the test needs 2", len(shared))
	}
	gone := filepath.Join(job, "shared", shared[0].Name())
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	l := list(t, root, pathMap)
	for _, s := range l.Snapshots {
		if !s.Committed || s.Complete || s.MissingFiles != 1 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "missing \""+gone+"\"") {
			t.Errorf("%s: committed %v, complete %v, %d missing, problems %q; want 1 missing naming %s", s.Name, s.Committed, s.Complete, s.MissingFiles, s.Problems, gone)
		}
	}
	if j := l.Jobs[0]; j.Complete != 0 || j.Checkpoints != 2 {
		t.Errorf("job %+v", j)
	}

	cut := filepath.Join(job, "shared", shared[1].Name())
	if err := os.Truncate(cut, 1); err != nil {
		t.Fatal(err)
	}
	l = list(t, root, pathMap)
	for _, s := range l.Snapshots {
		if s.MissingFiles != 2 || len(s.Problems) != 2 || !slices.ContainsFunc(s.Problems, func(p string) bool {
			return strings.Contains(p, cut) && strings.Contains(p, "is 1 bytes") && strings.Contains(p, "truncated")
		}) {
			t.Errorf("%s with a truncated file: %d missing, problems %q", s.Name, s.MissingFiles, s.Problems)
		}
	}
	if treeDigest(t, e.Dir) != before {
		t.Errorf("the corpus entry %s changed", e.Dir)
	}
}

// TestHostileMetadata: metadata no format reads, or that claims a format
// and is garbage, or that is no file, is each its snapshot's problem; the
// listing goes on, bounded, and chk-<N> and savepoint directories without
// a _metadata are listed as not committed.
func TestHostileMetadata(t *testing.T) {
	root := t.TempDir()
	job := filepath.Join(root, "job")
	write := func(rel string, data []byte) {
		p := filepath.Join(job, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i>>3)
	}
	flinkMagic := []byte{0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 3}
	write("chk-1/_metadata", garbage)
	write("chk-2/_metadata", append(flinkMagic, garbage...))
	write("chk-3/_metadata", append(flinkMagic, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	write("chk-4/_metadata/inside", nil)
	write("chk-5/state", garbage)
	write("chk-7/_metadata", []byte("STUTILFS\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff"))
	if err := syscall.Mkfifo(filepath.Join(job, "chk-6"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(job, "chk-8"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(job, "chk-8", "_metadata"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "savepoint-0a1b2c-3d4e5f6a7b8c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "huge-length.dump"), readFile(t, "../testdata/memory/huge-length.dump"), 0o644); err != nil {
		t.Fatal(err)
	}
	var l *catalog.Listing
	var err error
	formattest.Bounded(t, "listing hostile metadata", func() { l, err = catalog.List(ctx, reg, root, catalog.Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ committed, problem bool }{
		"huge-length.dump": {true, true},
		"job/chk-1":        {true, true}, "job/chk-2": {true, true}, "job/chk-3": {true, true},
		"job/chk-4": {false, true}, "job/chk-5": {false, true}, "job/chk-7": {true, true}, "job/chk-8": {true, true},
		"savepoint-0a1b2c-3d4e5f6a7b8c": {false, true},
	}
	var names []string
	for _, s := range l.Snapshots {
		names = append(names, s.Name)
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("listed %q", s.Name)
			continue
		}
		if s.Committed != w.committed || s.Complete || len(s.Problems) != 1 || s.Operators != nil {
			t.Errorf("%s: committed %v, complete %v, operators %v, problems %q", s.Name, s.Committed, s.Complete, s.Operators, s.Problems)
		}
		t.Logf("%s: %s", s.Name, s.Problems)
	}
	if len(names) != len(want) {
		t.Errorf("listed %v, want %d snapshots", names, len(want))
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLayouts: what ROOT may be, and how deep snapshots are looked for.
func TestLayouts(t *testing.T) {
	root := t.TempDir()
	example := readFile(t, "../testdata/memory/example.dump")
	for _, p := range []string{"checkpoints/job-a/chk-3.dump", "checkpoints/job-a/chk-4.dump", "checkpoints/job-b/chk-1.dump",
		"savepoints/sp.dump", "deep/a/b/c.dump"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), example, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "savepoints", "notes.txt"), []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := func(location string, depth int) []string {
		l, err := catalog.List(ctx, reg, location, catalog.Options{Depth: depth})
		if err != nil {
			t.Fatalf("ls %s: %v", location, err)
		}
		var out []string
		for _, s := range l.Snapshots {
			if !s.Complete || s.Format != "memory" || s.Bytes != int64(len(example)) {
				t.Errorf("%s: %+v", s.Name, s)
			}
			out = append(out, s.Name+"@"+s.Job)
		}
		return out
	}
	for _, c := range []struct {
		location string
		depth    int
		want     []string
	}{
		{filepath.Join(root, "checkpoints"), 0, []string{"job-a/chk-3.dump@job-a", "job-a/chk-4.dump@job-a", "job-b/chk-1.dump@job-b"}},
		{filepath.Join(root, "checkpoints", "job-a"), 0, []string{"chk-3.dump@job-a", "chk-4.dump@job-a"}},
		{filepath.Join(root, "checkpoints", "job-a", "chk-4.dump"), 0, []string{".@"}},
		{filepath.Join(root, "savepoints"), 0, []string{"sp.dump@"}},
		{root, 1, nil},
		{root, 2, []string{"savepoints/sp.dump@"}},
		{root, 3, []string{"checkpoints/job-a/chk-3.dump@checkpoints/job-a", "checkpoints/job-a/chk-4.dump@checkpoints/job-a",
			"checkpoints/job-b/chk-1.dump@checkpoints/job-b", "savepoints/sp.dump@"}},
		{root, 4, []string{"checkpoints/job-a/chk-3.dump@checkpoints/job-a", "checkpoints/job-a/chk-4.dump@checkpoints/job-a",
			"checkpoints/job-b/chk-1.dump@checkpoints/job-b", "deep/a/b/c.dump@", "savepoints/sp.dump@"}},
	} {
		if got := names(c.location, c.depth); !slices.Equal(got, c.want) {
			t.Errorf("ls %s --depth %d: %v, want %v", c.location, c.depth, got, c.want)
		}
	}
	if _, err := catalog.List(ctx, reg, filepath.Join(root, "savepoints", "notes.txt"), catalog.Options{}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("ls of a file that is no snapshot: %v, want it refused as unrecognized", err)
	}
	if _, err := catalog.List(ctx, reg, filepath.Join(root, "nope"), catalog.Options{}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("ls of a missing root: %v, want not found", err)
	}
}

// FuzzListMetadata lists a job directory whose chk-1 holds mutated
// _metadata of every format (seeded from real ones, with the files they
// reference beside them): no panic, no error (damage is the snapshot's
// problem), bounded, and never listed complete without its metadata read.
func FuzzListMetadata(f *testing.F) {
	seeds := []string{
		"../testdata/flink/2.3.0/basic-hashmap-canonical/snapshot/savepoint-537d8a-885f48eb9003/_metadata",
		"../testdata/flink/2.3.0/basic-rocksdb-checkpoint-incremental/snapshot/eea7c876a5466305dd97ff5e53bca3b5/chk-1/_metadata",
		"../testdata/flink/2.3.0/windows-rocksdb-native/snapshot/savepoint-ea8170-f865224cd195/_metadata",
		"../testdata/memory/example.dump",
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, metadata []byte) {
		root := t.TempDir()
		chk := filepath.Join(root, "job", "chk-1")
		if err := os.MkdirAll(chk, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chk, "_metadata"), metadata, 0o644); err != nil {
			t.Fatal(err)
		}
		var l *catalog.Listing
		var err error
		formattest.Bounded(t, "listing mutated metadata", func() { l, err = catalog.List(ctx, reg, root, catalog.Options{}) })
		if err != nil {
			t.Fatalf("listing failed rather than reporting the snapshot's problem: %v", err)
		}
		if len(l.Snapshots) != 1 || !l.Snapshots[0].Committed {
			t.Fatalf("listed %+v, want the one committed chk-1", l.Snapshots)
		}
		if s := l.Snapshots[0]; s.Complete != (s.Operators != nil && len(s.Problems) == 0) {
			t.Fatalf("complete %v with operators %v and problems %q", s.Complete, s.Operators, s.Problems)
		}
	})
}

// TestRemovedWhileListed: a checkpoint a job discards while ls looks at it
// (its _metadata gone before it is described, or its files gone after) is
// listed as no longer committed, not as damage; a directory removed after
// its parent was listed is passed over.
func TestRemovedWhileListed(t *testing.T) {
	root := t.TempDir()
	job := filepath.Join(root, "job")
	formattest.CopyTree(t, "../testdata/memory/example.dump", filepath.Join(job, "chk-1.dump"))
	formattest.Write(t, reg, filesystem.Format, filepath.Join(job, "chk-2"), 1, 128, 40, snapshot.WriteOptions{})
	formattest.Write(t, reg, filesystem.Format, filepath.Join(job, "chk-3"), 2, 128, 40, snapshot.WriteOptions{})
	// A format that recognizes chk-2 and chk-3 first, and, as Flink
	// discarding them would, removes chk-2 before its metadata is read and
	// chk-3's state after.
	discarding := &snapshot.Format{Name: "discarding",
		Probe: func(_ context.Context, _ storage.Storage, p string) (bool, error) {
			return strings.HasSuffix(p, "/chk-2") || strings.HasSuffix(p, "/chk-3"), nil
		},
		Describe: func(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*snapshot.Description, error) {
			if strings.HasSuffix(p, "/chk-2") {
				if err := os.RemoveAll(p); err != nil {
					return nil, err
				}
				return filesystem.Format.Describe(ctx, st, p, opts)
			}
			d, err := filesystem.Format.Describe(ctx, st, p, opts)
			if err == nil {
				err = os.RemoveAll(p)
			}
			return d, err
		},
	}
	r := formattest.Registry(func(r *snapshot.Registry) { r.Register(discarding) }, memory.Register, filesystem.Register)
	l, err := catalog.List(ctx, r, root, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Snapshots) != 3 {
		t.Fatalf("%d snapshots: %+v", len(l.Snapshots), l.Snapshots)
	}
	if s := l.Snapshots[0]; !s.Complete {
		t.Errorf("chk-1.dump: %+v", s)
	}
	for _, s := range l.Snapshots[1:] {
		if s.Committed || s.Complete || len(s.Problems) != 1 || s.Problems[0] != "removed while it was listed" {
			t.Errorf("%s: committed %v, complete %v, problems %q; want it listed as removed", s.Name, s.Committed, s.Complete, s.Problems)
		}
	}
}
