package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real Flink savepoint whose state file is a symlink out of it is
// damage naming the file, as in the other formats (internal/chkdir); a
// symlink that stays inside the savepoint reads as the file would.
func TestFlinkStateFileSymlink(t *testing.T) {
	src := flinkSnapshot(t, "2.3.0", "types-hashmap-canonical")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var state string
	for _, e := range entries {
		if e.Name() != "_metadata" {
			state = e.Name()
		}
	}
	if state == "" {
		t.Fatalf("%s holds no state file beside _metadata", src)
	}
	// copyWithLink copies the savepoint to dir/sp, its state file moved to
	// dir/to and replaced by a symlink to it.
	copyWithLink := func(t *testing.T, to string) string {
		dir := t.TempDir()
		sp := filepath.Join(dir, "sp")
		for _, d := range []string{sp, filepath.Dir(filepath.Join(dir, to))} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(sp, e.Name())
			if e.Name() == state {
				at = filepath.Join(dir, to)
				if err := os.Symlink(at, filepath.Join(sp, state)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(at, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return sp
	}
	outside := copyWithLink(t, filepath.Join("elsewhere", state))
	// inspect, as for any damaged state file, leaves it out of its figures
	// with a warning.
	for command, want := range map[string]int{"verify": ExitCorrupt, "dump": ExitCorrupt, "inspect": ExitOK} {
		code, out, errOut := run(t, command, outside)
		said := out + errOut
		if code != want || !strings.Contains(said, filepath.Join(outside, "_metadata")+`": reference "`+state+`": symlinks lead to`) || !strings.Contains(said, "outside") {
			t.Errorf("%s of a savepoint whose %s links out of it: exit %d:\n%s\nwant exit %d naming the file", command, state, code, said, want)
		}
	}
	inside := copyWithLink(t, filepath.Join("sp", "moved", state))
	mustRun(t, "verify", inside)
}
