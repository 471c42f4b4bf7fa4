package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// A Flink savepoint whose writer was killed after its commit, before it
// removed its writing mark: what the next writer clears is only what the
// snapshot does not hold, so its checksum manifest stays, and the
// savepoint verifies against it.
func TestRemoveDeadWriteKeepsCompanionFiles(t *testing.T) {
	ctx := context.Background()
	src, err := filepath.Glob("../testdata/flink/2.3.0/basic-hashmap-canonical/snapshot/savepoint-*")
	if err != nil || len(src) != 1 {
		t.Fatalf("the checked-in 2.3.0 savepoint: %v %v", src, err)
	}
	dst := filepath.Join(t.TempDir(), "sp")
	if _, err := Run(ctx, testReg, Request{Source: src[0], Destination: dst, Change: redistribute.Request{Parallelism: 3}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{writingMarker, "left-by-the-killed-writer"} {
		if err := os.WriteFile(filepath.Join(dst, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeDeadWrite(ctx, testReg, storage.Local(), dst, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, flink.ChecksumsFile)); err != nil {
		t.Fatalf("the manifest went with what the killed writer left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "left-by-the-killed-writer")); !os.IsNotExist(err) {
		t.Fatalf("a file the snapshot does not hold stayed: %v", err)
	}
	r, err := testReg.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.(snapshot.WholeChecker).CheckWhole(ctx); err != nil {
		t.Fatal(err)
	}
}
