package filesystem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// DefaultInlineThreshold is the size below which state is kept in
// _metadata, as Flink's state.storage.fs.memory-threshold.
const DefaultInlineThreshold = 20 << 10

// Writer writes a filesystem snapshot; see snapshot.Writer.
type Writer struct {
	dir    chkdir.Dir
	inline int64
	token  string

	ledger ledger.Ledger[subtaskLayout]

	mu         sync.Mutex
	open       map[*spill]struct{}
	written    ledger.Files
	replaced   []string // files of the snapshot a forced write replaces
	createdDir bool
	done       bool
}

// Create starts a snapshot in directory p of st. A directory that already
// holds a snapshot is refused unless opts.Force; a job directory is always
// refused (write to one of its chk-<N> instead).
func Create(ctx context.Context, st storage.Storage, p string, opts snapshot.WriteOptions) (*Writer, error) {
	d := chkdir.At(st, p)
	w := &Writer{dir: d, open: map[*spill]struct{}{}}
	switch {
	case opts.InlineThreshold == 0:
		w.inline = DefaultInlineThreshold
	case opts.InlineThreshold > 0:
		w.inline = opts.InlineThreshold
	}
	has, err := d.HasMetadata(ctx)
	if err != nil {
		return nil, err
	}
	if has {
		if !opts.Force {
			return nil, fmt.Errorf("%q already holds a snapshot (force to replace it): %w", d.URI(), storage.ErrExist)
		}
		// The old snapshot stays readable until the new _metadata replaces
		// it; its files go after that. An unreadable one keeps its files.
		if m, err := readMetadata(ctx, d); err == nil {
			w.replaced = m.files()
		}
	} else if cps, err := chkdir.List(ctx, st, d.Path); err == nil && len(cps) > 0 {
		return nil, fmt.Errorf("%q is a job directory with %d checkpoints; write to a new chk-<N> or savepoint directory: %w", d.URI(), len(cps), storage.ErrExist)
	}
	if _, err := st.Stat(ctx, d.Path); errors.Is(err, storage.ErrNotFound) {
		w.createdDir = true
	}
	if err := st.MkdirAll(ctx, d.Path); err != nil {
		return nil, err
	}
	var tok [4]byte
	rand.Read(tok[:])
	w.token = hex.EncodeToString(tok[:])
	return w, nil
}

// Subtask starts writing subtask index of op; see snapshot.Writer.
func (w *Writer) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	seq, err := w.ledger.Start(op, index, kgs)
	if err != nil {
		return nil, err
	}
	return newSubtaskWriter(ctx, w, op, seq, index, kgs), nil
}

// fileName names a blob of one subtask.
func (w *Writer) fileName(seq, index int, ext string) string {
	return fmt.Sprintf("op%d-%d.%s.%s", seq, index, w.token, ext)
}

func (w *Writer) track(s *spill) {
	w.mu.Lock()
	w.open[s] = struct{}{}
	w.mu.Unlock()
}

func (w *Writer) untrack(s *spill) {
	w.mu.Lock()
	delete(w.open, s)
	w.mu.Unlock()
}

// Commit fills in s's subtasks from what was written and writes _metadata.
func (w *Writer) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("filesystem writer: already committed or aborted")
	}
	m, err := w.assemble(s)
	if err != nil {
		return err
	}
	data, err := encodeMetadata(m)
	if err != nil {
		return err
	}
	if err := w.jobDirs(ctx); err != nil {
		return err
	}
	if err := w.dir.CommitMetadata(ctx, data); err != nil {
		return err
	}
	w.done = true
	for _, f := range w.replaced {
		if !w.written.Has(f) {
			w.dir.Storage.Remove(ctx, path.Join(w.dir.Path, f)) // best effort: stale files do no harm
		}
	}
	return nil
}

// jobDirs creates the shared/ and taskowned/ folders of the job directory
// a checkpoint is written into, as Flink lays it out (see chkdir), before
// the checkpoint is committed. This format puts no files there; other
// tools expect the folders. A savepoint has no job directory.
func (w *Writer) jobDirs(ctx context.Context) error {
	if w.dir.JobDir == "" {
		return nil
	}
	for _, name := range []string{chkdir.SharedDir, chkdir.TaskOwnedDir} {
		if err := w.dir.Storage.MkdirAll(ctx, path.Join(w.dir.JobDir, name)); err != nil {
			return err
		}
	}
	return nil
}

// assemble builds the metadata; w.mu is held.
func (w *Writer) assemble(s *snapshot.Snapshot) (*metadata, error) {
	if len(w.open) > 0 {
		return nil, fmt.Errorf("filesystem writer: %d subtask blobs still open (Close every subtask before Commit)", len(w.open))
	}
	layouts, err := w.ledger.Commit(s)
	if err != nil {
		return nil, fmt.Errorf("filesystem writer: %w", err)
	}
	s.Format = Name
	return &metadata{Snapshot: s, Layouts: layouts}, nil
}

// Abort removes everything written; see snapshot.Writer.
func (w *Writer) Abort(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	w.ledger.Abort()
	for s := range w.open {
		s.abort()
	}
	return w.written.Remove(ctx, w.dir.Storage, w.dir.Path, w.createdDir)
}
