package filesystem

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// TestRegistryAndConcurrentSubtasks writes through the format registry
// (by a Flink alias, to a file:// URI) with every subtask on its own
// goroutine, then reads back through snapshot.Open.
func TestRegistryAndConcurrentSubtasks(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"filesystem", "fs", "hashmap", "FS"} {
		if f, err := testReg.Lookup(name); err != nil || f.Name != Name {
			t.Fatalf("LookupFormat(%q) = %v, %v", name, f, err)
		}
	}
	format, _ := testReg.Lookup("hashmap")
	dir := filepath.Join(t.TempDir(), "job", "chk-3")
	fx := newFixture(4096, 500)
	w, err := testReg.Create(ctx, format, "file://"+dir, snapshot.WriteOptions{InlineThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, op := range fx.snap.Operators {
		for i := range op.Parallelism {
			wg.Go(func() {
				sw, err := w.Subtask(ctx, op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
				if err != nil {
					errs <- err
					return
				}
				if es := fx.entries[op.ID]; es != nil {
					for j := range es[i] {
						if err := sw.Entry(&es[i][j]); err != nil {
							errs <- err
						}
					}
				}
				if els := fx.elements[op.ID]; els != nil {
					for _, el := range els[i] {
						sw.Element(el.State, el.Value)
					}
				}
				if raw := fx.raw[op.ID]; raw != nil {
					sw.Raw(raw[i])
				}
				if err := sw.Close(); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, fx.snap); err != nil {
		t.Fatal(err)
	}
	r, err := testReg.Open(ctx, filepath.Dir(dir), snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkFixture(t, r.(*Reader), fx)
}
