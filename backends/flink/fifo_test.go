package flink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// A FIFO as _metadata or as a keyed state file (read when the snapshot is
// opened) is refused naming it, without waiting for a writer.
func TestFIFOsAreRefused(t *testing.T) {
	src := filepath.Join(fixtureRoot(t), "new-stateful-udf-migration-itcase-flink1.16-hashmap-checkpoint")
	m, err := ReadMetadata(context.Background(), storage.Local(), filepath.Join(src, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	var keyed string
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if h := st.ManagedKeyedState; keyed == "" && h != nil && h.KeyGroups != nil && h.KeyGroups.Delegate.Type == metadata.HandleRelativeFile {
				keyed = h.KeyGroups.Delegate.Path
			}
		}
	}
	if keyed == "" {
		t.Fatal("no keyed state file in the fixture")
	}
	for _, victim := range []string{"_metadata", keyed} {
		t.Run(victim, func(t *testing.T) {
			dir := t.TempDir()
			entries, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != victim {
					if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			}
			fifo := filepath.Join(dir, victim)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("cannot make a FIFO here: %v", err)
			}
			ctx := context.Background()
			for name, open := range map[string]func() error{
				"registry": func() error { _, err := testReg.Open(ctx, dir, snapshot.OpenOptions{}); return err },
				"format":   func() error { _, err := Format.Open(ctx, storage.Local(), dir, snapshot.OpenOptions{}); return err },
			} {
				var err error
				formattest.Bounded(t, "opening through the "+name, func() { err = open() })
				if !errors.Is(err, storage.ErrNotRegular) || !strings.Contains(err.Error(), fifo) {
					t.Errorf("%s: err = %v, want ErrNotRegular naming %s", name, err, fifo)
				}
			}
		})
	}
}
