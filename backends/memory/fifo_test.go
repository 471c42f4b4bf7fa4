package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// A FIFO in place of a dump is refused, by the registry and by the
// format's own Open, without waiting for a writer.
func TestFIFODumpIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.dump")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	ctx := context.Background()
	for name, open := range map[string]func() error{
		"registry": func() error { _, err := testReg.Open(ctx, path, snapshot.OpenOptions{}); return err },
		"format":   func() error { _, err := Open(ctx, storage.Local(), path, snapshot.OpenOptions{}); return err },
	} {
		var err error
		formattest.Bounded(t, "opening a FIFO through the "+name, func() { err = open() })
		if !errors.Is(err, storage.ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want ErrNotRegular naming %s", name, err, path)
		}
	}
}
