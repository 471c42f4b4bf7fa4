package rocksdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/tempdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// writer builds a self-contained rocksdb snapshot (a savepoint-like
// directory: _metadata plus one directory per subtask) from streamed state.
//
// On local disk the subtasks' working instances live in a hidden staging
// directory inside the destination, so their files reach the snapshot as
// hard links, not copies (and a killed process leaves its leftovers
// there, not in the system's temporary directory). Elsewhere (HDFS) they
// live in the temporary directory and are streamed up.
//
// A forced write over an existing snapshot leaves the old one readable
// until the new _metadata commits: subtask directories the old snapshot
// uses get another name, and only after the commit are the old files the
// new snapshot does not reference removed.
type writer struct {
	d       chkdir.Dir
	tmpRoot string
	// link: files reach the destination as hard links (local disk).
	link bool
	// token names subtask directories the replaced snapshot uses.
	token string
	// replaced is the snapshot a forced write replaces, if readable.
	replaced *rocksdbformat.Metadata
	ledger   ledger.Ledger[*rocksdbformat.Handle]
	mu       sync.Mutex
	handles  []*rocksdbformat.Handle // of the subtasks finished, removed again by Abort
	open     map[*subtaskWriter]bool
	done     bool

	// staging: the subtasks are for another writer to commit (Staged).
	staging bool
}

// metaDir is the snapshot directory a writer's location names: the
// directory itself, or the directory of a _metadata path.
func metaDir(st storage.Storage, p string) chkdir.Dir {
	if path.Base(p) == rocksdbformat.MetadataName {
		p = path.Dir(p)
	}
	return chkdir.At(st, p)
}

func create(ctx context.Context, st storage.Storage, p string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	d := metaDir(st, p)
	w := &writer{d: d, token: rocksdbformat.RandomName()[:8], open: map[*subtaskWriter]bool{}, staging: opts.Staging}
	if ok, err := d.HasMetadata(ctx); err != nil {
		return nil, err
	} else if ok {
		if !opts.Force {
			return nil, fmt.Errorf("%w: a snapshot exists at %q (use force to replace it)", storage.ErrExist, d.URI())
		}
		// The old snapshot stays until the new one commits; an unreadable
		// one keeps its files.
		if m, err := rocksdbformat.ReadMetadata(ctx, d); err == nil {
			w.replaced = m
		}
	}
	if err := st.MkdirAll(ctx, d.Path); err != nil {
		return nil, err
	}
	if storage.IsLocal(st) {
		w.tmpRoot, w.link = d.Path, true
	}
	return w, nil
}

// stagingPrefix names the staging directories of subtask writers.
const stagingPrefix = ".stateutil-rocksdb-"

// privDir is the directory of a subtask's private files: <op>-<subtask>,
// or <op>-<subtask>-<token> when the replaced snapshot uses that name.
func (w *writer) privDir(op string, subtask int) string {
	name := rocksdbformat.SubtaskDirName(op, subtask)
	if w.staging {
		return name + "-" + w.token // other shards' writers share the directory
	}
	if w.replaced != nil {
		for _, h := range w.replaced.Handles {
			for _, f := range h.AllFiles() {
				if !f.Shared && strings.HasPrefix(f.Path, name+"/") {
					return name + "-" + w.token
				}
			}
		}
	}
	return name
}

// target is where a subtask's instance is uploaded.
func (w *writer) target(in *rocksdbformat.Instance) rocksdbformat.Target {
	return rocksdbformat.Target{Dir: w.d, Priv: w.privDir(in.Operator().ID, in.Subtask()), Link: w.link}
}

// removeReplaced deletes, after the commit, the private files of the
// replaced snapshot the new one does not reference, then their
// directories if no new file lies there. Shared files belong to the job's
// checkpoints and stay. It is best effort: the new snapshot is committed.
func (w *writer) removeReplaced(ctx context.Context) {
	if w.replaced == nil {
		return
	}
	keep, keepDirs := map[string]bool{}, map[string]bool{}
	for _, h := range w.handles {
		for _, f := range h.AllFiles() {
			keep[f.Path] = true
			keepDirs[path.Dir(f.Path)] = true
		}
	}
	dirs := map[string]bool{}
	for _, h := range w.replaced.Handles {
		for _, f := range h.AllFiles() {
			if f.Shared || keep[f.Path] {
				continue
			}
			p, err := w.d.RefPath(f.Path)
			if err != nil {
				continue
			}
			_ = w.d.Storage.Remove(ctx, p)
			if dir := path.Dir(f.Path); dir != "." && !keepDirs[dir] {
				dirs[dir] = true
			}
		}
	}
	for dir := range dirs {
		if p, err := w.d.RefPath(dir); err == nil {
			_ = w.d.Storage.RemoveAll(ctx, p)
		}
	}
}

// tempDir makes a subtask's temporary directory: in the destination on
// local disk, so that its files can be linked there, told to the
// destination's storage first; else in the system's, reaped if the
// process is killed.
func (w *writer) tempDir(ctx context.Context) (*tempdir.Dir, error) {
	if w.link {
		p, err := storage.MkdirTemp(ctx, w.d.Storage, w.tmpRoot, stagingPrefix)
		return tempdir.Unclaimed(p), err
	}
	return tempdir.New(ctx, w.tmpRoot, "stateutil-rocksdb-")
}

func (w *writer) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	tmp, err := w.tempDir(ctx)
	if err != nil {
		return nil, err
	}
	sw, err := w.subtaskIn(ctx, op, index, kgs, tmp, func(string) error { return nil })
	if err != nil {
		tmp.Remove()
		return nil, err
	}
	return sw, nil
}

// subtaskIn is writer.Subtask working in the temporary directory tmp,
// with the instance's directory prepared by prepare before the database
// opens. It does not remove tmp on failure.
func (w *writer) subtaskIn(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range, tmp *tempdir.Dir, prepare func(dir string) error) (*subtaskWriter, error) {
	if _, err := w.ledger.Start(op, index, kgs); err != nil {
		return nil, fmt.Errorf("rocksdb writer: %w", err)
	}
	dir := filepath.Join(tmp.Path, "db")
	if err := prepare(dir); err != nil {
		return nil, err
	}
	in, err := rocksdbformat.OpenInstance(dir, op, index, kgs)
	if err != nil {
		return nil, err
	}
	sw := &subtaskWriter{ctx: ctx, w: w, in: in, tmp: tmp, states: map[string]*sstState{}, lastKG: -1,
		stats: snapshot.Stats{Known: true}, syncs: backgroundSyncs{running: make(chan struct{}, 4)}}
	w.mu.Lock()
	w.open[sw] = true
	w.mu.Unlock()
	return sw, nil
}

// finished records a closed subtask; h is nil when it failed, and then
// the subtask stays unfinished, so Commit refuses.
func (w *writer) finished(sw *subtaskWriter, h *rocksdbformat.Handle, sub *snapshot.Subtask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, sw)
	if h != nil {
		w.handles = append(w.handles, h)
		w.ledger.Finish(sw.in.Operator(), sw.in.Subtask(), sub, h)
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
	s.Format = FormatName
	handles, err := w.ledger.Commit(s)
	if err != nil {
		return fmt.Errorf("rocksdb writer: %w", err)
	}
	var hs []*rocksdbformat.Handle
	for _, op := range handles {
		for _, h := range op {
			if h != nil {
				hs = append(hs, h)
			}
		}
	}
	slices.SortFunc(hs, func(x, y *rocksdbformat.Handle) int {
		if x.Operator != y.Operator {
			return cmp.Compare(x.Operator, y.Operator)
		}
		return x.Subtask - y.Subtask
	})
	if err := rocksdbformat.WriteMetadata(ctx, w.d, &rocksdbformat.Metadata{Snapshot: s, Handles: hs}); err != nil {
		return err
	}
	w.done = true
	w.removeReplaced(ctx)
	return nil
}

func (w *writer) Abort(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	w.ledger.Abort()
	for sw := range w.open {
		sw.discard()
	}
	var errs []error
	for _, h := range w.handles {
		dirs := map[string]bool{}
		for _, f := range h.AllFiles() {
			if !f.Shared {
				dirs[path.Dir(f.Path)] = true
			}
		}
		for dir := range dirs {
			if dir != "." {
				errs = append(errs, w.d.Storage.RemoveAll(ctx, path.Join(w.d.Path, dir)))
			}
		}
	}
	return errors.Join(errs...)
}
