package filesystem

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/snapshot"
)

// A filesystem snapshot's subtasks are written in shards as they are in
// one process: each staging writer names its files with a token of its
// own (op<k>-<i>.<token>.<ext>), so writers of different shards, or two
// attempts of one, share the snapshot directory without colliding. Staged
// hands the subtasks' layouts on; the committing writer adopts them and
// writes _metadata.

// Staged ends w and lists what its subtasks wrote; see snapshot.Stager.
func (w *Writer) Staged(context.Context) ([]snapshot.StagedSubtask, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, errors.New("filesystem writer: already committed or aborted")
	}
	if len(w.open) > 0 {
		return nil, fmt.Errorf("filesystem writer: %d subtask blobs still open (Close every subtask first)", len(w.open))
	}
	out, err := w.ledger.Staged(w.dir.Path, func(l subtaskLayout) any { return &l },
		func(f ledger.Finished[subtaskLayout]) ([]snapshot.FileRef, error) { return f.Value.files(), nil })
	if err != nil {
		return nil, fmt.Errorf("filesystem writer: %w", err)
	}
	w.done = true
	return out, nil
}

// Adopt records a subtask another writer staged in w's directory; see
// snapshot.Adopter.
func (w *Writer) Adopt(_ context.Context, op *snapshot.Operator, s snapshot.StagedSubtask) error {
	if s.Subtask == nil {
		return fmt.Errorf("filesystem writer: operator %q subtask %d: staged without figures", op.Label(), s.Index)
	}
	var l subtaskLayout
	if err := msgpack.Unmarshal(s.Layout, &l); err != nil {
		return fmt.Errorf("filesystem writer: operator %q subtask %d: staged layout: %w", op.Label(), s.Index, err)
	}
	sub := *s.Subtask
	sub.Files = l.files()
	if err := w.ledger.Adopt(op, s.Index, &sub, sub.Files, l); err != nil {
		return fmt.Errorf("filesystem writer: %w", err)
	}
	return nil
}
