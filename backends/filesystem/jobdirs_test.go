package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			t.Fatalf("%s holds a file %s", dir, e.Name())
		}
		names = append(names, e.Name())
	}
	return names
}

// A checkpoint <job>/chk-N comes with the job's shared/ and taskowned/
// folders, as Flink lays a checkpoint directory out; a savepoint, and an
// aborted checkpoint, leave nothing beside themselves.
func TestCheckpointCreatesJobFolders(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	job := filepath.Join(root, "job")
	newFixture(128, 20).write(t, storage.Local(), filepath.Join(job, "chk-3"), snapshot.WriteOptions{})
	if got, want := dirNames(t, job), []string{"chk-3", "shared", "taskowned"}; !slices.Equal(got, want) {
		t.Fatalf("job directory holds %v, want %v", got, want)
	}
	if r, err := testReg.Open(ctx, job, snapshot.OpenOptions{}); err != nil {
		t.Fatalf("the job directory: %v", err)
	} else {
		r.Close()
	}

	newFixture(128, 20).write(t, storage.Local(), filepath.Join(root, "savepoint-1"), snapshot.WriteOptions{})
	if got, want := dirNames(t, root), []string{"job", "savepoint-1"}; !slices.Equal(got, want) {
		t.Fatalf("beside a savepoint: %v, want %v", got, want)
	}

	other := filepath.Join(root, "other")
	w, err := Create(ctx, storage.Local(), filepath.Join(other, "chk-1"), snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op := newFixture(128, 20).snap.Operators[0]
	sw, err := w.Subtask(ctx, op, 0, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, 0))
	if err != nil {
		t.Fatal(err)
	}
	sw.Close()
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, other); len(got) != 0 {
		t.Fatalf("an aborted checkpoint left %v", got)
	}
}
