package migrate

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// errKilled stands for the process dying where the commit calls
// BeforePlace.
var errKilled = errors.New("killed")

// A commit killed during an object store's copy of the snapshot to the
// destination (the plan marked committed, some files at the destination,
// no metadata there; everything still staged) blocks nothing: the next
// commit recognises the files as its own, moves the snapshot again and
// removes the staging area, and a later forced write of the destination
// works. Also when the plan replaces a snapshot.
func TestCommitRedoesAHalfCopyOnS3(t *testing.T) {
	ctx := context.Background()
	remote := formattest.S3Dir(t)
	src := generated(t, 2000, 2)
	st, root, err := testReg.Storage.Resolve(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		name := map[bool]string{false: "new", true: "replace"}[force]
		t.Run(name, func(t *testing.T) {
			dst := remote + "/" + name
			req := Request{Source: src, Destination: dst, Format: "rocksdb", Force: force, Change: redistribute.Request{Parallelism: 3}}
			if force {
				if _, err := Run(ctx, testReg, Request{Source: src, Destination: dst}); err != nil {
					t.Fatal(err)
				}
			}
			sp, _ := planAndRun(t, req, 2)
			_, staging, _ := testReg.Storage.Resolve(ctx, sp.Staging)
			func() {
				defer func() {
					if r := recover(); r != errKilled {
						t.Fatalf("commit not stopped where the test kills it: %v", r)
					}
				}()
				_, err := CommitShards(ctx, testReg, sp, CommitOptions{BeforePlace: func() { panic(errKilled) }})
				t.Fatalf("commit ran on: %v", err)
			}()
			// What the killed commit went on to do: mark the plan
			// committed, then copy half the snapshot's files (not its
			// metadata) before it died.
			if err := storage.WriteFile(ctx, st, path.Join(staging, StagingCommitted), []byte(sp.ID+"\n")); err != nil {
				t.Fatal(err)
			}
			_, dstPath, _ := testReg.Storage.Resolve(ctx, dst)
			data := path.Join(staging, stagingData, path.Base(dstPath))
			if force {
				// The old snapshot moved aside first (swap), recorded in
				// the commit's journal before.
				j, err := startJournal(ctx, st, dstPath)
				if err != nil {
					t.Fatal(err)
				}
				aside := sibling(dstPath, "old")
				if err := j.record(ctx, storage.Made{Kind: madeMoving, Path: data}, storage.Made{Kind: madeAside, Path: aside}); err != nil {
					t.Fatal(err)
				}
				if err := st.Rename(ctx, dstPath, aside); err != nil {
					t.Fatal(err)
				}
			}
			files, err := relFiles(ctx, st, data)
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(func(yield func(string) bool) {
				for f := range files {
					if f != "_metadata" && !yield(f) {
						return
					}
				}
			})
			for _, f := range names[:len(names)/2+1] {
				b, err := storage.ReadAll(ctx, st, path.Join(data, f), 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.MkdirAll(ctx, path.Dir(path.Join(dstPath, f))); err != nil {
					t.Fatal(err)
				}
				if err := storage.WriteFile(ctx, st, path.Join(dstPath, f), b); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, _, err := testReg.Detect(ctx, dst); err == nil {
				t.Fatal("the half-copied destination reads as a snapshot")
			}
			res, err := CommitShards(ctx, testReg, sp, CommitOptions{Verify: true})
			if err != nil {
				t.Fatalf("commit after one killed during its copy: %v", err)
			}
			if !res.AlreadyCommitted || !res.Verified {
				t.Fatalf("%+v", res)
			}
			entries, err := st.List(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name, storage.TempPrefix) {
					t.Errorf("left on S3 after the commit: %s", e.Name)
				}
			}
			// The destination takes a forced write.
			if _, err := Run(ctx, testReg, Request{Source: src, Destination: dst, Force: true, Format: "filesystem"}); err != nil {
				t.Fatalf("convert --force after the recovered commit: %v", err)
			}
			if r, err := testReg.Open(ctx, dst, snapshot.OpenOptions{}); err != nil {
				t.Fatal(err)
			} else {
				r.Close()
			}
		})
	}
}
