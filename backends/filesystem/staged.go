package filesystem

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

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
	done, err := w.ledger.Close()
	if err != nil {
		return nil, fmt.Errorf("filesystem writer: %w", err)
	}
	w.done = true
	out := make([]snapshot.StagedSubtask, 0, len(done))
	for _, f := range done {
		layout, err := msgpack.Marshal(&f.Value)
		if err != nil {
			return nil, err
		}
		s := snapshot.StagedSubtask{OperatorID: f.OperatorID, Operator: f.Operator, Index: f.Index, Subtask: f.Subtask, Layout: layout}
		for _, ref := range f.Value.files() {
			ref.Path = path.Join(w.dir.Path, ref.Path)
			s.Files = append(s.Files, ref)
		}
		out = append(out, s)
	}
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
	for _, ref := range l.files() {
		if strings.ContainsAny(ref.Path, `/\`) || ref.Path == "." || ref.Path == ".." {
			return fmt.Errorf("filesystem writer: operator %q subtask %d: staged file %q is not a plain name", op.Label(), s.Index, ref.Path)
		}
	}
	if _, err := w.ledger.Start(op, s.Index, s.Subtask.KeyGroups); err != nil {
		return fmt.Errorf("filesystem writer: %w", err)
	}
	sub := *s.Subtask
	sub.Files = l.files()
	w.ledger.Finish(op, s.Index, &sub, l)
	return nil
}
