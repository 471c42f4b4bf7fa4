package flink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
)

// readEverything opens a snapshot and reads all its keyed entries and
// operator-state elements.
func readEverything(dir string) error {
	ctx := context.Background()
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := report.Summarize(ctx, dir, r, true); err != nil {
		return err
	}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return err
				}
			}
			for _, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// TestTruncatedFiles cuts `_metadata` and the largest state file of three
// fixtures (canonical RocksDB savepoint, heap checkpoint, inline-only
// savepoint) at every offset. Each cut must fail with a corruption error
// that names a file and an offset, and nothing may panic. With -short every
// 13th offset is tried.
func TestTruncatedFiles(t *testing.T) {
	root := fixtureRoot(t)
	for _, name := range []string{
		"new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint",
		"new-stateful-udf-migration-itcase-flink1.16-hashmap-checkpoint",
		"operatorstate/complexKeyed-flink1.16",
	} {
		src := filepath.Join(root, name)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		victims := []string{"_metadata"}
		var largest string
		var size int64
		for _, e := range entries {
			if info, _ := e.Info(); e.Name() != "_metadata" && info != nil && info.Size() > size {
				largest, size = e.Name(), info.Size()
			}
		}
		if largest != "" {
			victims = append(victims, largest)
		}
		for _, victim := range victims {
			dir := t.TempDir()
			// Copies, not symlinks: a state file that a symlink leads
			// out of the snapshot to is refused.
			for _, e := range entries {
				if e.Name() != victim {
					body, err := os.ReadFile(filepath.Join(src, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, e.Name()), body, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			data, err := os.ReadFile(filepath.Join(src, victim))
			if err != nil {
				t.Fatal(err)
			}
			if err := readEverything(src); err != nil {
				t.Fatalf("%s untouched: %v", name, err)
			}
			step := 1
			if testing.Short() {
				step = 13
			}
			for n := 0; n < len(data); n += step {
				if err := os.WriteFile(filepath.Join(dir, victim), data[:n], 0o600); err != nil {
					t.Fatal(err)
				}
				err := readEverything(dir)
				if victim == "_metadata" && n < 4 {
					// Too short to carry the magic: no format claims it.
					if err == nil {
						t.Errorf("%s: _metadata cut at %d was accepted", name, n)
					}
					continue
				}
				if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "offset") {
					t.Fatalf("%s: %s cut at %d of %d: want a corruption error with an offset, got %v", name, victim, n, len(data), err)
				}
			}
		}
	}
}
