package rocksstate

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// fillKV writes keys [from, to) with random values of size bytes.
func fillKV(t testing.TB, b *Incremental, op *snapshot.Operator, from, to, size int, r *rand.Rand) {
	t.Helper()
	rockstest.PutKV(t, op, from, to, size, r, func(sub int, e *snapshot.Entry) error {
		in, err := b.Open(op, sub, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub))
		if err != nil {
			return err
		}
		return in.Put(e)
	})
}

func newIncremental(t testing.TB, retain int) *Incremental {
	b, err := NewIncremental(IncrementalOptions{LocalDir: t.TempDir(), Retain: retain, Storage: testReg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func allEntries(t testing.TB, b *Incremental) []snapshot.Entry {
	var out []snapshot.Entry
	for _, in := range b.Instances() {
		out = append(out, rockstest.Collect(t, in.Entries(context.Background(), in.KeyGroups()))...)
	}
	return out
}

func TestIncrementalUploadsOnlyNewFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	op := rockstest.KVOperator(2, 128)
	b := newIncremental(t, 2)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 40_000
	fillKV(t, b, op, 0, n, 200, r)
	c1, err := b.Checkpoint(ctx, root, "job", 1)
	if err != nil {
		t.Fatal(err)
	}
	fillKV(t, b, op, 0, n/100, 200, r) // change 1%
	c2, err := b.Checkpoint(ctx, root, "job", 2)
	if err != nil {
		t.Fatal(err)
	}
	frac := float64(c2.UploadedBytes) / float64(c2.Bytes)
	t.Logf("checkpoint 1: %d files, %d bytes uploaded; checkpoint 2 after 1%% change: %d of %d bytes uploaded (%.2f%%), %d files reused",
		c1.Files, c1.UploadedBytes, c2.UploadedBytes, c2.Bytes, 100*frac, c2.ReusedFiles)
	if c1.UploadedBytes != c1.Bytes {
		t.Errorf("first checkpoint uploaded %d of %d bytes", c1.UploadedBytes, c1.Bytes)
	}
	if frac > 0.05 || c2.ReusedFiles == 0 {
		t.Errorf("incremental checkpoint uploaded %.2f%% (%d reused files), want under 5%%", 100*frac, c2.ReusedFiles)
	}

	// Restore checkpoint 2 into a new checkpointer: identical entries, and
	// its next checkpoint references the restored SSTs.
	want := allEntries(t, b)
	b2 := newIncremental(t, 2)
	// A job directory restores its latest complete checkpoint, chk-2.
	s, err := b2.Restore(ctx, filepath.Join(root, "job"))
	if err != nil || s.CheckpointID != 2 {
		t.Fatalf("restore of the job directory: %v (want chk-2)", err)
	}
	rockstest.SameEntries(t, "restored", want, allEntries(t, b2))
	c3, err := b2.Checkpoint(ctx, root, "job", 3)
	if err != nil {
		t.Fatal(err)
	}
	if c3.UploadedBytes*10 > c3.Bytes {
		t.Errorf("checkpoint after restore uploaded %d of %d bytes", c3.UploadedBytes, c3.Bytes)
	}
	if !slices.Equal(c3.Discarded, []int64{1}) {
		t.Errorf("discarded %v, want [1]", c3.Discarded)
	}
}

// sharedOnDisk lists the files in the job's shared directory.
func sharedOnDisk(t *testing.T, jobDir string) []string {
	ents, err := os.ReadDir(filepath.Join(jobDir, chkdir.SharedDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.Join(jobDir, chkdir.SharedDir, e.Name()))
	}
	return out
}

// referenced reads chk-N/_metadata and returns its shared files.
func referenced(t *testing.T, jobDir string, id int64) []string {
	d := chkdir.At(storage.Local(), filepath.Join(jobDir, chkdir.CheckpointDirName(id)))
	m, err := rocksdbformat.ReadMetadata(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.SharedPaths(d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func union(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range union(a) {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestRegistryDeletesExactlyUnneeded(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	jobDir := filepath.Join(root, "job")
	op := rockstest.KVOperator(1, 128)
	b := newIncremental(t, 2)
	r := rand.New(rand.NewPCG(3, 4))
	fillKV(t, b, op, 0, 5000, 100, r)
	refs := map[int64][]string{}
	for id := int64(1); id <= 5; id++ {
		fillKV(t, b, op, int(id)*100, int(id)*100+50, 100, r)
		if id == 3 {
			b.Instances()[0].DB().Compact() // rewrite every SST
		}
		res, err := b.Checkpoint(ctx, root, "job", id)
		if err != nil {
			t.Fatal(err)
		}
		refs[id] = referenced(t, jobDir, id)
		var wantDeleted []string
		var retained [][]string
		for k := max(1, id-1); k <= id; k++ {
			retained = append(retained, refs[k])
		}
		if id > 2 {
			wantDeleted = minus(refs[id-2], union(retained...))
			if _, err := os.Stat(filepath.Join(jobDir, chkdir.CheckpointDirName(id-2))); !os.IsNotExist(err) {
				t.Errorf("chk-%d still exists: %v", id-2, err)
			}
		}
		if got := union(res.Deleted); !slices.Equal(got, wantDeleted) {
			t.Errorf("checkpoint %d deleted %v, want %v", id, got, wantDeleted)
		}
		if got, want := sharedOnDisk(t, jobDir), union(retained...); !slices.Equal(got, want) {
			t.Errorf("checkpoint %d: shared dir %v, want exactly %v", id, got, want)
		}
		t.Logf("checkpoint %d: %d shared files referenced, %d deleted", id, len(refs[id]), len(res.Deleted))
	}
	// A fresh registry loaded from disk agrees.
	reg, err := LoadRegistry(ctx, storage.Local(), jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Checkpoints(); !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("loaded checkpoints %v", got)
	}
	if got, want := reg.Files(), union(refs[4], refs[5]); !slices.Equal(got, want) {
		t.Errorf("loaded registry files %v, want %v", got, want)
	}
}

func TestRegistryCounts(t *testing.T) {
	r := NewRegistry()
	r.Register(1, []string{"a", "b"})
	r.Register(2, []string{"b", "c", "c"})
	if err := r.Register(2, nil); err == nil {
		t.Error("registering a checkpoint twice succeeded")
	}
	if got := r.Release(1); !slices.Equal(got, []string{"a"}) {
		t.Errorf("release 1 freed %v, want [a]", got)
	}
	if !r.Referenced("b") || r.Referenced("a") {
		t.Error("reference counts wrong after release")
	}
	if got := r.Release(2); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("release 2 freed %v, want [b c]", got)
	}
}

func TestDamagedFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	op := rockstest.KVOperator(1, 128)
	b := newIncremental(t, 1)
	fillKV(t, b, op, 0, 2000, 50, rand.New(rand.NewPCG(5, 6)))
	if _, err := b.Checkpoint(ctx, root, "job", 1); err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(root, "job", "chk-1")
	sst := referenced(t, filepath.Join(root, "job"), 1)[0]
	data, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	restoreErr := func() error {
		b2 := newIncremental(t, 1)
		_, err := b2.Restore(ctx, loc)
		return err
	}
	readErr := func() error {
		r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
		if err != nil {
			return err
		}
		defer r.Close()
		o := r.Snapshot().Operators[0]
		for _, err := range r.Entries(ctx, o, 0, o.Subtasks[0].KeyGroups) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	name := filepath.Base(sst)

	flipped := slices.Clone(data)
	flipped[len(flipped)/2] ^= 0xff
	os.WriteFile(sst, flipped, 0o644)
	for what, err := range map[string]error{"restore": restoreErr(), "read": readErr()} {
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s of a corrupt SST: %v; want ErrCorrupt naming %s", what, err, name)
		}
	}
	os.WriteFile(sst, data[:len(data)-10], 0o644)
	if err := restoreErr(); !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), name) {
		t.Errorf("truncated SST: %v", err)
	}
	os.Remove(sst)
	for what, err := range map[string]error{"restore": restoreErr(), "read": readErr()} {
		if !errors.Is(err, snapshot.ErrNotFound) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s of a missing SST: %v; want ErrNotFound naming %s", what, err, name)
		}
	}
}
