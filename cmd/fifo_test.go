package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// mkfifo replaces path (if anything is there) with a FIFO nobody writes
// to: a reader that opened it for reading would wait forever.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
}

// generated writes the example snapshot in format to a fresh location,
// its values padded so that the filesystem format keeps keyed state in
// files, not inline, and returns it.
func generated(t *testing.T, format, name string) string {
	t.Helper()
	loc := filepath.Join(t.TempDir(), name)
	mustRun(t, "generate", "--format", format, "--output", loc, "--value-bytes", "2000")
	return loc
}

// largestFile is the largest file in dir other than _metadata.
func largestFile(t *testing.T, dir string) string {
	t.Helper()
	var best string
	var size int64 = -1
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "_metadata" {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() > size {
			best, size = p, info.Size()
		}
		return nil
	})
	if err != nil || best == "" {
		t.Fatalf("no state file in %s (%v)", dir, err)
	}
	return best
}

// flinkCopy copies a real Flink checkpoint (heap state in files) into a
// fresh directory and returns it with the path of a keyed state file,
// which opening the snapshot reads.
func flinkCopy(t *testing.T) (dir, keyed string) {
	t.Helper()
	src := filepath.Join("..", "..", "shared", "fixtures", "flink", "new-stateful-udf-migration-itcase-flink1.16-hashmap-checkpoint")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("Flink fixtures not found at %s (they live in ../shared next to the repository): %v", src, err)
	}
	dir = filepath.Join(t.TempDir(), "chk-2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := metadata.ParseMetadata(data, filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if h := st.ManagedKeyedState; h != nil && h.KeyGroups != nil && h.KeyGroups.Delegate != nil && h.KeyGroups.Delegate.Type == metadata.HandleRelativeFile {
				files = append(files, filepath.Join(dir, h.KeyGroups.Delegate.Path))
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("%s has no keyed state file", src)
	}
	sort.Strings(files)
	return dir, files[0]
}

// A FIFO where a snapshot's metadata, a state file or a memory dump should
// be makes inspect and verify fail at once with one line naming it (exit
// 2), never wait for a writer that will not come. The commands run on
// another goroutine; the test fails, not hangs, if they do not return.
func TestFIFOsAreRefusedNotWaitedOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the location to inspect and the FIFO in it.
		setup func(t *testing.T) (loc, fifo string)
	}{
		{"memory dump", func(t *testing.T) (string, string) {
			loc := filepath.Join(t.TempDir(), "state.dump")
			mkfifo(t, loc)
			return loc, loc
		}},
		{"filesystem _metadata", func(t *testing.T) (string, string) {
			loc := generated(t, "filesystem", "chk-1")
			mkfifo(t, filepath.Join(loc, "_metadata"))
			return loc, filepath.Join(loc, "_metadata")
		}},
		{"filesystem state file", func(t *testing.T) (string, string) {
			loc := generated(t, "filesystem", "chk-1")
			f := largestFile(t, loc)
			mkfifo(t, f)
			return loc, f
		}},
		{"rocksdb _metadata", func(t *testing.T) (string, string) {
			loc := generated(t, "rocksdb", "chk-1")
			mkfifo(t, filepath.Join(loc, "_metadata"))
			return loc, filepath.Join(loc, "_metadata")
		}},
		{"rocksdb SST file", func(t *testing.T) (string, string) {
			loc := generated(t, "rocksdb", "chk-1")
			f := largestFile(t, loc)
			mkfifo(t, f)
			return loc, f
		}},
		{"flink _metadata", func(t *testing.T) (string, string) {
			dir, _ := flinkCopy(t)
			mkfifo(t, filepath.Join(dir, "_metadata"))
			return dir, filepath.Join(dir, "_metadata")
		}},
		{"flink state file", func(t *testing.T) (string, string) {
			dir, keyed := flinkCopy(t)
			mkfifo(t, keyed)
			return dir, keyed
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc, fifo := tc.setup(t)
			for _, command := range []string{"inspect", "verify"} {
				var stdout, stderr bytes.Buffer
				var code int
				formattest.Bounded(t, "stateutil "+command+" "+loc, func() {
					code = Run(context.Background(), []string{command, loc}, &stdout, &stderr)
				})
				msg := stderr.String()
				if code != ExitCorrupt || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, filepath.Base(fifo)) || !strings.Contains(msg, "not a regular file") {
					t.Errorf("%s: exit %d, stderr %q; want exit %d and one line saying %s is not a regular file", command, code, msg, ExitCorrupt, fifo)
				}
			}
		})
	}
}
