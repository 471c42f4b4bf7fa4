package rocksdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/snapshot"
)

// A rocksdb snapshot's subtasks are written in shards as in one process,
// each subtask's files in a directory of its own; a staging writer adds
// its token to those directories (<op>-<i>-<token>), so that shards, and
// two attempts of one shard, never write the same one. Staged hands each
// subtask's handle on; the committing writer adopts the handles and
// writes _metadata.

// Staged ends w and lists what its subtasks wrote; see snapshot.Stager.
func (w *writer) Staged(context.Context) ([]snapshot.StagedSubtask, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, errors.New("rocksdb: writer already committed or aborted")
	}
	if len(w.open) > 0 {
		return nil, fmt.Errorf("rocksdb: %d subtask writers are not closed", len(w.open))
	}
	out, err := w.ledger.Staged(w.d.Path, func(h *rocksdbformat.Handle) any { return h }, func(f ledger.Finished[*rocksdbformat.Handle]) ([]snapshot.FileRef, error) {
		refs := f.Value.Refs()
		for _, ref := range refs {
			if ref.Shared {
				return nil, fmt.Errorf("operator %q subtask %d: a staged subtask references shared file %q", f.Operator, f.Index, ref.Path)
			}
		}
		return refs, nil
	})
	if err != nil {
		return nil, fmt.Errorf("rocksdb writer: %w", err)
	}
	w.done = true
	return out, nil
}

// Adopt records a subtask another writer staged in w's directory; see
// snapshot.Adopter.
func (w *writer) Adopt(_ context.Context, op *snapshot.Operator, s snapshot.StagedSubtask) error {
	if s.Subtask == nil {
		return fmt.Errorf("rocksdb writer: operator %q subtask %d: staged without figures", op.Label(), s.Index)
	}
	h := &rocksdbformat.Handle{}
	if err := msgpack.Unmarshal(s.Layout, h); err != nil {
		return fmt.Errorf("rocksdb writer: operator %q subtask %d: staged handle: %w", op.Label(), s.Index, err)
	}
	if h.Operator != op.ID || h.Subtask != s.Index {
		return fmt.Errorf("rocksdb writer: operator %q subtask %d: the staged handle is operator %s subtask %d's", op.Label(), s.Index, h.Operator, h.Subtask)
	}
	check := rocksdbformat.Metadata{Snapshot: &snapshot.Snapshot{}, Handles: []*rocksdbformat.Handle{h}}
	if err := check.Validate("staged subtask"); err != nil {
		return fmt.Errorf("rocksdb writer: operator %q subtask %d: %w", op.Label(), s.Index, err)
	}
	for _, f := range h.AllFiles() {
		if f.Shared {
			return fmt.Errorf("rocksdb writer: operator %q subtask %d: staged shared file %q", op.Label(), s.Index, f.Path)
		}
	}
	if _, err := w.ledger.Start(op, s.Index, s.Subtask.KeyGroups); err != nil {
		return fmt.Errorf("rocksdb writer: %w", err)
	}
	w.ledger.Finish(op, s.Index, s.Subtask, h)
	return nil
}
