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
// removed its journal: what the next writer clears is only what the
// journal lists and the snapshot does not use, so its checksum manifest
// stays, the savepoint verifies against it, and a file the journal does
// not list stays whatever it is.
func TestSettleKeepsCompanionAndUnlistedFiles(t *testing.T) {
	ctx := context.Background()
	src, err := filepath.Glob("../testdata/flink/2.3.0/basic-hashmap-canonical/snapshot/savepoint-*")
	if err != nil || len(src) != 1 {
		t.Fatalf("the checked-in 2.3.0 savepoint: %v %v", src, err)
	}
	dst := filepath.Join(t.TempDir(), "sp")
	if _, err := Run(ctx, testReg, Request{Source: src[0], Destination: dst, Change: redistribute.Request{Parallelism: 3}}); err != nil {
		t.Fatal(err)
	}
	j, err := startJournal(ctx, storage.Local(), dst)
	if err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dst, "left-by-the-killed-writer")
	if err := j.record(ctx, storage.Made{Kind: storage.MadeFile, Path: filepath.Join(dst, flink.ChecksumsFile)}, storage.Made{Kind: storage.MadeFile, Path: left}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{left, filepath.Join(dst, "NOTES.txt")} {
		if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := readJournal(ctx, storage.Local(), dst)
	if err != nil || dead == nil {
		t.Fatalf("readJournal: %v %v", dead, err)
	}
	if err := dead.settle(ctx, testReg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, flink.ChecksumsFile)); err != nil {
		t.Fatalf("the manifest went with what the killed writer left: %v", err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("a file the journal lists and the snapshot does not use stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "NOTES.txt")); err != nil {
		t.Fatalf("a file the journal does not list went: %v", err)
	}
	if _, err := os.Stat(journalDir(dst)); !os.IsNotExist(err) {
		t.Fatalf("the journal stayed: %v", err)
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
