package ledger

import (
	"context"
	"errors"
	"path"
	"slices"
	"sync"

	"github.com/stateutil/stateutil/storage"
)

// Files are the files a writer has committed into its directory, which
// its Abort removes again. Add may be called from several subtask writers
// at once.
type Files struct {
	mu    sync.Mutex
	names []string
}

// Add records a committed file, by its name in the directory.
func (f *Files) Add(name string) {
	f.mu.Lock()
	f.names = append(f.names, name)
	f.mu.Unlock()
}

// Has reports whether name was committed.
func (f *Files) Has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.names, name)
}

// Remove deletes every committed file from dir, and dir itself if the
// writer created it and it is left empty (a non-empty one is not the
// writer's alone). Files already gone are not an error.
func (f *Files) Remove(ctx context.Context, st storage.Storage, dir string, createdDir bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, name := range f.names {
		if err := st.Remove(ctx, path.Join(dir, name)); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if createdDir {
		st.Remove(ctx, dir) // only if empty
	}
	return errors.Join(errs...)
}
