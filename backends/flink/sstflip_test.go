package flink

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// sstRange is where one SST of a native snapshot lies: in file rel (of the
// damage case's copy), from off, size bytes.
type sstRange struct {
	rel       string
	off, size int64
}

// sstRanges lists the SSTs of the damage case's native RocksDB subtasks,
// inline in _metadata or in files of their own.
func (c *damageCase) sstRanges(t *testing.T) []sstRange {
	ctx := context.Background()
	opts := snapshot.OpenOptions{PathMap: map[string]string{c.entry.Manifest.OriginalDir: c.dir}, TempDir: t.TempDir()}
	sr, err := testReg.Open(ctx, c.snapshotDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	r := sr.(*SnapshotReader)
	metaRel, err := filepath.Rel(c.dir, filepath.Join(c.snapshotDir(), "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	var out []sstRange
	for _, op := range r.meta.Operators {
		for _, st := range op.Subtasks {
			h := nativeHandle(st.ManagedKeyedState)
			if h == nil {
				continue
			}
			files, err := r.res.NativeFiles(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if !strings.HasSuffix(f.LocalName, ".sst") {
					continue
				}
				if f.Location.Inline {
					out = append(out, sstRange{metaRel, f.Handle.DataOffset, int64(len(f.Handle.Data))})
					continue
				}
				rel, err := filepath.Rel(c.dir, f.Location.Path)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, sstRange{rel, f.Location.Offset, f.Handle.Size})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no SSTs", c.entry.Name)
	}
	return out
}

// Flipped bytes of the SSTs of real native RocksDB snapshots (inline in
// _metadata, or files of their own) are damage at the snapshot's own file
// and offset, or change nothing; RocksDB, whose Debian build asserts, never
// sees a damaged block. The flips run in a child process, so that an abort
// inside RocksDB fails this test instead of ending the run.
func TestFlippedSSTsNeverAbortRocksDB(t *testing.T) {
	if os.Getenv("STATEUTIL_SST_FLIP_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFlippedSSTsNeverAbortRocksDB$", "-test.v")
		cmd.Env = append(os.Environ(), "STATEUTIL_SST_FLIP_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the child reading flipped SSTs failed (%v):\n%s", err, tail(string(out), 4000))
		}
		if !strings.Contains(string(out), "--- PASS: TestFlippedSSTsNeverAbortRocksDB") {
			t.Fatalf("the child did not run the flips:\n%s", tail(string(out), 4000))
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "tried") || strings.Contains(l, "SST bytes flipped") {
				t.Log(strings.TrimSpace(l))
			}
		}
		return
	}
	for _, name := range []string{"2.3.0/basic-rocksdb-checkpoint-incremental", "1.20.5/basic-rocksdb-native"} {
		t.Run(name, func(t *testing.T) {
			c := newDamageCase(t, name)
			ty := tally{}
			for _, s := range c.sstRanges(t) {
				path := filepath.Join(c.dir, s.rel)
				orig, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				damaged := make([]byte, len(orig))
				step := max(1, int(s.size)/damageFlipsPerSST())
				for off := s.off; off < s.off+s.size; off += int64(step) {
					copy(damaged, orig)
					damaged[off] ^= 0xff
					if err := os.WriteFile(path, damaged, 0o600); err != nil {
						t.Fatal(err)
					}
					o, msg := c.classify(t, s.rel)
					ty.add(s.rel, o)
					if o != detected && o != harmless {
						t.Errorf("%s: SST byte %d (at %d) flipped: %s %s", s.rel, off-s.off, off, outcomeNames[o], msg)
					}
				}
				if err := os.WriteFile(path, orig, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: SST bytes flipped:\n%s", name, ty)
		})
	}
}

// damageFlipsPerSST is how many bytes of each SST the flip test damages:
// STATEUTIL_FLINK_DAMAGE_EVERY=1 asks for every byte.
func damageFlipsPerSST() int {
	if os.Getenv("STATEUTIL_FLINK_DAMAGE_EVERY") == "1" {
		return 1 << 30
	}
	if testing.Short() {
		return 4
	}
	return 16
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
