package rocksdb

import (
	"context"
	"errors"
	"fmt"
	"github.com/stateutil/stateutil/backends/internal/chkdir"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// writer builds a self-contained rocksdb snapshot (a savepoint-like
// directory: _metadata plus one directory per subtask) from streamed state.
type writer struct {
	d        chkdir.Dir
	tmpRoot  string
	mu       sync.Mutex
	handles  []*handle
	subtasks map[string][]*snapshot.Subtask
	open     map[*subtaskWriter]bool
	done     bool
}

func create(ctx context.Context, location string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	st, p, err := storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	d := metaDir(st, p)
	if ok, err := d.HasMetadata(ctx); err != nil {
		return nil, err
	} else if ok {
		if !opts.Force {
			return nil, fmt.Errorf("%w: a snapshot exists at %q (use force to replace it)", storage.ErrExist, d.URI())
		}
		if err := removeSnapshot(ctx, d); err != nil {
			return nil, err
		}
	}
	if err := st.MkdirAll(ctx, d.Path); err != nil {
		return nil, err
	}
	return &writer{d: d, subtasks: map[string][]*snapshot.Subtask{}, open: map[*subtaskWriter]bool{}}, nil
}

// removeSnapshot deletes an existing rocksdb snapshot's metadata (first)
// and its subtask directories.
func removeSnapshot(ctx context.Context, d chkdir.Dir) error {
	m, err := readMetadata(ctx, d)
	if err != nil {
		return fmt.Errorf("cannot replace %q: %w", d.URI(), err)
	}
	if err := d.Storage.Remove(ctx, d.Metadata()); err != nil {
		return err
	}
	for _, h := range m.Handles {
		if err := d.Storage.RemoveAll(ctx, path.Join(d.Path, subtaskDirName(h.Operator, h.Subtask))); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	tmp, err := os.MkdirTemp(w.tmpRoot, "stateutil-rocksdb-")
	if err != nil {
		return nil, err
	}
	in, err := openInstance(filepath.Join(tmp, "db"), op, index, kgs)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	sw := &subtaskWriter{ctx: ctx, w: w, in: in, tmp: tmp, states: map[string]*sstState{}, lastKG: -1,
		stats: snapshot.Stats{Known: true}}
	w.mu.Lock()
	w.open[sw] = true
	w.mu.Unlock()
	return sw, nil
}

// finished records a closed subtask.
func (w *writer) finished(sw *subtaskWriter, h *handle, sub *snapshot.Subtask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, sw)
	if h != nil {
		w.handles = append(w.handles, h)
		w.subtasks[h.Operator] = append(w.subtasks[h.Operator], sub)
	}
}

func (w *writer) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("rocksdb: writer already committed or aborted")
	}
	if len(w.open) > 0 {
		return fmt.Errorf("rocksdb: %d subtask writers are not closed", len(w.open))
	}
	c := *s
	c.Format = FormatName
	c.Operators = nil
	for _, op := range s.Operators {
		o := *op
		if subs, ok := w.subtasks[op.ID]; ok {
			o.Subtasks = slices.Clone(subs)
			slices.SortFunc(o.Subtasks, func(x, y *snapshot.Subtask) int { return x.Index - y.Index })
		}
		c.Operators = append(c.Operators, &o)
	}
	slices.SortFunc(w.handles, func(x, y *handle) int {
		if x.Operator != y.Operator {
			return compareStrings(x.Operator, y.Operator)
		}
		return x.Subtask - y.Subtask
	})
	if err := writeMetadata(ctx, w.d, &metadata{Snapshot: &c, Handles: w.handles}); err != nil {
		return err
	}
	w.done = true
	return nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w *writer) Abort(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	for sw := range w.open {
		sw.discard()
	}
	var errs []error
	for _, h := range w.handles {
		errs = append(errs, w.d.Storage.RemoveAll(ctx, path.Join(w.d.Path, subtaskDirName(h.Operator, h.Subtask))))
	}
	return errors.Join(errs...)
}
