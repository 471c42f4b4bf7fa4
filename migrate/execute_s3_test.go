package migrate

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3"
)

// On S3 a state file's upload completes while the next files are
// written; Execute returns once they all have: every file the committed
// snapshot lists is in place, with its size, before Commit writes the
// metadata. An Abort after Execute leaves nothing.
func TestExecuteOnS3WaitsForEveryUpload(t *testing.T) {
	old := s3.PartSize
	s3.PartSize = 5 << 20
	t.Cleanup(func() { s3.PartSize = old })
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	w, err := testReg.Create(ctx, filesystem.Format, src, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := generate.Default()
	c.Keys, c.Parallelism, c.ValueBytes = 4000, 2, 1000
	if _, err := generate.Write(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	r := openSnap(t, src)
	remote := formattest.S3Dir(t)
	st, _, err := testReg.Storage.Resolve(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	execute := func(dst string) (snapshot.Writer, *Plan) {
		plan, err := NewPlan(ctx, r, filesystem.Format, redistribute.Request{Parallelism: 3, Codecs: testReg.Codecs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := Create(ctx, testReg, filesystem.Format, dst, snapshot.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := Execute(ctx, r, w, plan, ExecuteOptions{}); err != nil {
			t.Fatal(err)
		}
		return w, plan
	}
	listed := func(dst string) map[string]int64 {
		_, p, _ := testReg.Storage.Resolve(ctx, dst)
		entries, err := st.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sizes := map[string]int64{}
		for _, e := range entries {
			sizes[e.Name] = e.Size
		}
		return sizes
	}

	dst := remote + "/committed"
	w, plan := execute(dst)
	before := listed(dst)
	if err := Commit(ctx, w, plan); err != nil {
		t.Fatal(err)
	}
	multipart := 0
	for _, op := range openSnap(t, dst).Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, f := range sub.Files {
				size, ok := before[path.Base(f.Path)]
				if !ok || size != f.Size {
					t.Errorf("%s: %d bytes in place when Execute returned (listed: %v), %d committed", f.Path, size, ok, f.Size)
				}
				if f.Size > int64(s3.PartSize) {
					multipart++
				}
			}
		}
	}
	if multipart < 2 {
		t.Fatalf("%d state files went up in parts, want several", multipart)
	}

	aborted := remote + "/aborted"
	w, _ = execute(aborted)
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	_, p, _ := testReg.Storage.Resolve(ctx, aborted)
	if entries, err := st.List(ctx, p); len(entries) > 0 || err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("left after Abort: %v (%v)", entries, err)
	}
}
