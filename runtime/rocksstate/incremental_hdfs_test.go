package rocksstate_test

import (
	"math/rand/v2"
	"path"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/snaptest"
)

func putRandom(t *testing.T, b *rocksstate.Incremental, op *snapshot.Operator, from, to int, r *rand.Rand) {
	t.Helper()
	for k := from; k < to; k++ {
		key := snapshot.EncodeInt64(int64(k))
		kg, _ := testReg.Codecs.KeyGroupOf(tInt64, key, op.MaxParallelism)
		sub := keygroup.SubtaskOf(kg, op.MaxParallelism, op.Parallelism)
		in, err := b.Open(op, sub, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub))
		if err != nil {
			t.Fatal(err)
		}
		v := make([]byte, 200)
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		if err := in.Put(&snapshot.Entry{KeyGroup: kg, State: "kv", Key: key, Namespace: []byte{}, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
}

func instanceEntries(t *testing.T, b *rocksstate.Incremental) []snapshot.Entry {
	t.Helper()
	var out []snapshot.Entry
	for _, in := range b.Instances() {
		for e, err := range in.Entries(ctx, in.KeyGroups()) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Clone())
		}
	}
	snaptest.Canonical(out)
	return out
}

// Incremental checkpoints with the root on HDFS: after a 1% change the
// second checkpoint uploads a small fraction of its bytes; a new
// checkpointer restores the job directory from HDFS entry-identical, and
// retention leaves shared/ holding exactly what the retained checkpoints
// reference.
func TestIncrementalOnHDFS(t *testing.T) {
	root := formattest.HDFSDir(t)
	op := crashOperator()
	const n = 40_000
	r := rand.New(rand.NewPCG(7, 8))
	b, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: t.TempDir(), Retain: 2, Storage: testReg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	putRandom(t, b, op, 0, n, r)
	c1, err := b.Checkpoint(ctx, root, "job", 1)
	if err != nil {
		t.Fatal(err)
	}
	putRandom(t, b, op, 0, n/100, r) // change 1%
	c2, err := b.Checkpoint(ctx, root, "job", 2)
	if err != nil {
		t.Fatal(err)
	}
	frac := float64(c2.UploadedBytes) / float64(c2.Bytes)
	t.Logf("on HDFS: checkpoint 1 uploaded %d files, %d bytes; checkpoint 2 after a 1%% change uploaded %d of %d bytes (%.2f%%) in %d files, reused %d files",
		c1.UploadedFiles, c1.UploadedBytes, c2.UploadedBytes, c2.Bytes, 100*frac, c2.UploadedFiles, c2.ReusedFiles)
	if c1.UploadedBytes != c1.Bytes {
		t.Errorf("first checkpoint uploaded %d of %d bytes", c1.UploadedBytes, c1.Bytes)
	}
	if frac > 0.05 || c2.ReusedFiles == 0 {
		t.Errorf("second checkpoint uploaded %.2f%% of its bytes (%d files reused), want under 5%%", 100*frac, c2.ReusedFiles)
	}

	want := instanceEntries(t, b)
	b2, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: t.TempDir(), Retain: 2, Storage: testReg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	s, err := b2.Restore(ctx, root+"/job")
	if err != nil || s.CheckpointID != 2 {
		t.Fatalf("restore of the HDFS job directory: %v (want chk-2)", err)
	}
	if ok, diff := snaptest.EqualEntries(want, instanceEntries(t, b2)); !ok {
		t.Fatalf("restored from HDFS: %s", diff)
	}
	putRandom(t, b2, op, n/2, n/2+n/100, r)
	c3, err := b2.Checkpoint(ctx, root, "job", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checkpoint 3 after restore: uploaded %d of %d bytes, discarded %v, deleted %d shared files", c3.UploadedBytes, c3.Bytes, c3.Discarded, len(c3.Deleted))
	if float64(c3.UploadedBytes) > 0.05*float64(c3.Bytes) || !slices.Equal(c3.Discarded, []int64{1}) {
		t.Errorf("checkpoint 3 uploaded %d of %d bytes, discarded %v", c3.UploadedBytes, c3.Bytes, c3.Discarded)
	}
	st, p, err := testReg.Storage.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	jobDir := path.Join(p, "job")
	reg, err := rocksstate.LoadRegistry(ctx, st, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, shared := jobListing(t, st, jobDir)
	slices.Sort(shared)
	if !slices.Equal(shared, reg.Files()) || !slices.Equal(reg.Checkpoints(), []int64{2, 3}) {
		t.Errorf("shared/ %v, retained checkpoints %v reference %v", shared, reg.Checkpoints(), reg.Files())
	}
}
