package flink

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/snapshot"
)

// A Flink savepoint's subtasks are written in shards as in one process:
// each staging writer names its files with a token of its own
// (op<k>-<i>.<token>-<kind>), so the writers of different shards share the
// savepoint directory without colliding. Staged hands each subtask's
// handles on (their files relative to the directory, as `_metadata`
// records them); the committing writer adopts them and writes `_metadata`.

// stagedHandles is a subtaskOut as a staged subtask's layout (msgpack).
type stagedHandles struct {
	Keyed, RawKeyed       *KeyedHandle
	Operator, RawOperator *OperatorStateHandle
}

// files are the state files the handles refer to.
func (h *stagedHandles) files() []snapshot.FileRef {
	var out []snapshot.FileRef
	add := func(d *StreamHandle) {
		if d != nil && d.Type == HandleRelativeFile {
			out = append(out, snapshot.FileRef{Path: d.Path, Size: d.Size})
		}
	}
	for _, k := range []*KeyedHandle{h.Keyed, h.RawKeyed} {
		if k != nil && k.KeyGroups != nil {
			add(k.KeyGroups.Delegate)
		}
	}
	for _, o := range []*OperatorStateHandle{h.Operator, h.RawOperator} {
		if o != nil {
			add(o.Delegate)
		}
	}
	return out
}

// Staged ends w and lists what its subtasks wrote; see snapshot.Stager.
func (w *writer) Staged(context.Context) ([]snapshot.StagedSubtask, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, errors.New("flink writer: already committed or aborted")
	}
	done, err := w.ledger.Close()
	if err != nil {
		return nil, fmt.Errorf("flink writer: %w", err)
	}
	w.done = true
	out := make([]snapshot.StagedSubtask, 0, len(done))
	for _, f := range done {
		h := stagedHandles{Keyed: f.Value.keyed, RawKeyed: f.Value.rawKeyed, Operator: f.Value.operator, RawOperator: f.Value.rawOperator}
		layout, err := msgpack.Marshal(&h)
		if err != nil {
			return nil, err
		}
		s := snapshot.StagedSubtask{OperatorID: f.OperatorID, Operator: f.Operator, Index: f.Index, Subtask: f.Subtask, Layout: layout}
		for _, ref := range h.files() {
			ref.Path = path.Join(w.dir, ref.Path)
			s.Files = append(s.Files, ref)
		}
		out = append(out, s)
	}
	return out, nil
}

// Adopt records a subtask another writer staged in w's directory; see
// snapshot.Adopter.
func (w *writer) Adopt(_ context.Context, op *snapshot.Operator, s snapshot.StagedSubtask) error {
	if s.Subtask == nil {
		return fmt.Errorf("flink writer: operator %q subtask %d: staged without figures", op.Label(), s.Index)
	}
	var h stagedHandles
	if err := msgpack.Unmarshal(s.Layout, &h); err != nil {
		return fmt.Errorf("flink writer: operator %q subtask %d: staged handles: %w", op.Label(), s.Index, err)
	}
	for _, ref := range h.files() {
		if strings.ContainsAny(ref.Path, `/\`) || ref.Path == "." || ref.Path == ".." {
			return fmt.Errorf("flink writer: operator %q subtask %d: staged file %q is not a plain name", op.Label(), s.Index, ref.Path)
		}
	}
	if _, err := w.ledger.Start(op, s.Index, s.Subtask.KeyGroups); err != nil {
		return fmt.Errorf("flink writer: %w", err)
	}
	w.ledger.Finish(op, s.Index, s.Subtask, &subtaskOut{keyed: h.Keyed, rawKeyed: h.RawKeyed, operator: h.Operator, rawOperator: h.RawOperator})
	return nil
}
