package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// remoteRoots are the remote storages the hostile trials run on: HDFS,
// S3, Google Cloud Storage and Azure, each skipped (failed under make
// test) without its server or emulator.
var remoteRoots = []struct {
	name string
	dir  func(testing.TB) string
}{
	{"HDFS", formattest.HDFSDir},
	{"S3", formattest.S3Dir},
	{"GCS", formattest.GCSDir},
	{"Azure", formattest.AzureDir},
}

// TestRemoteClaimsHoldAcrossSpellings holds writer A in the middle of its
// write to DST on each remote storage while writer B writes DST spelled
// with "..": B must be refused as held by another writer, and A must
// finish.
func TestRemoteClaimsHoldAcrossSpellings(t *testing.T) {
	for _, remote := range remoteRoots {
		t.Run(remote.name, func(t *testing.T) {
			root := remote.dir(t)
			dir := t.TempDir()
			double, unclear := 0, 0
			for i, f := range writableFormats() {
				a := fmt.Sprintf("%s/real/dst-%d", root, i)
				b := fmt.Sprintf("%s/real/sub/../dst-%d", root, i)
				args := func(dst string) []string { return []string{"convert", example, "--to", f, "--output", dst, "--quiet"} }
				d, u, firstErr := whileHeld(t, filepath.Join(dir, fmt.Sprintf("pause-%d", i)), args(a), args(b))
				double, unclear = double+d, unclear+u
				if firstErr != "" {
					t.Fatalf("%s: writer A: %s", f, firstErr)
				}
				sameState(t, example, a)
			}
			hostileCount(t, "remote-claim-rounds-held", len(writableFormats()))
			hostileCount(t, "double-successes", double)
			hostileCount(t, "unclear-refusals", unclear)
		})
	}
}

// TestRemoteForceReplacesOnlyASnapshot writes with --force over a user's
// file, over a directory of a garbage _metadata and a user's file, and
// over a snapshot beside a user's file, on each remote storage: refused
// (exit 1) naming them, every byte left as it was.
func TestRemoteForceReplacesOnlyASnapshot(t *testing.T) {
	ctx := context.Background()
	for _, remote := range remoteRoots {
		t.Run(remote.name, func(t *testing.T) {
			root := remote.dir(t)
			st, p, err := testReg.Storage.Resolve(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{
				"notes.txt":        "my notes\n",
				"dir/_metadata":    "not a snapshot's metadata",
				"dir/precious.txt": "keep me",
				"snap/NOTES.txt":   "keep me too",
			}
			if err := st.MkdirAll(ctx, p+"/dir"); err != nil {
				t.Fatal(err)
			}
			mustRun(t, "convert", example, "--to", "filesystem", "--output", root+"/snap", "--quiet")
			for name, content := range files {
				if err := storage.WriteFile(ctx, st, p+"/"+name, []byte(content)); err != nil {
					t.Fatal(err)
				}
			}
			removed := 0
			for dst, named := range map[string]string{"notes.txt": "notes.txt", "dir": "precious.txt", "snap": "NOTES.txt"} {
				for _, f := range writableFormats() {
					code, _, errOut := run(t, "convert", example, "--to", f, "--output", root+"/"+dst, "--force", "--quiet")
					if code != ExitUsage || !strings.Contains(errOut, named) {
						t.Errorf("convert --to %s --force over %s: exit %d, want %d naming %s: %s", f, dst, code, ExitUsage, named, errOut)
					}
				}
			}
			for name, content := range files {
				got, err := storage.ReadAll(ctx, st, p+"/"+name, 1<<20)
				if err != nil || string(got) != content {
					removed++
					t.Errorf("%s: %q, %v; want %q", name, got, err, content)
				}
			}
			if left := remoteLeftovers(t, root); len(left) > 0 {
				t.Errorf("left %v", left)
			}
			hostileCount(t, "user-files-removed", removed)
		})
	}
}
