package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// A FIFO as _metadata or as a state file is refused when the snapshot is
// opened, through the registry and the format's own Open, naming it,
// without waiting for a writer.
func TestFIFOsAreRefused(t *testing.T) {
	for _, victim := range []string{chkdir.MetadataFile, "state file"} {
		t.Run(victim, func(t *testing.T) {
			dir := t.TempDir()
			newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
			fifo := filepath.Join(dir, chkdir.MetadataFile)
			if victim != chkdir.MetadataFile {
				files, _ := filepath.Glob(filepath.Join(dir, "*.keyed"))
				if len(files) == 0 {
					t.Fatal("no keyed state file")
				}
				fifo = files[0]
			}
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("cannot make a FIFO here: %v", err)
			}
			ctx := context.Background()
			for name, open := range map[string]func() error{
				"registry": func() error { _, err := testReg.Open(ctx, dir, snapshot.OpenOptions{}); return err },
				"format":   func() error { _, err := Open(ctx, storage.Local(), dir, snapshot.OpenOptions{}); return err },
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
