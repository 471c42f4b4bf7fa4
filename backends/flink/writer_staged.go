package flink

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/vmihailenco/msgpack/v5"
)

// A Flink savepoint's subtasks are written in shards as in one process:
// each staging writer names its files with a token of its own
// (op<k>-<i>.<token>-<kind>), so the writers of different shards share the
// savepoint directory without colliding. Staged hands each subtask's
// handles on (their files relative to the directory, as `_metadata`
// records them) and its files with their sizes and CRC32C; the committing
// writer adopts them and writes the checksum manifest and `_metadata`.

// stagedHandles is a subtaskOut as a staged subtask's layout (msgpack).
type stagedHandles struct {
	Keyed, RawKeyed       *metadata.KeyedHandle
	Operator, RawOperator *metadata.OperatorStateHandle
	Inputs, Outputs       []*metadata.ChannelHandle
}

// files are the state files the handles refer to.
func (h *stagedHandles) files() []snapshot.FileRef {
	var out []snapshot.FileRef
	add := func(d *metadata.StreamHandle) {
		if d != nil && d.Type == metadata.HandleRelativeFile {
			out = append(out, snapshot.FileRef{Path: d.Path, Size: d.Size})
		}
	}
	for _, k := range []*metadata.KeyedHandle{h.Keyed, h.RawKeyed} {
		if k != nil && k.KeyGroups != nil {
			add(k.KeyGroups.Delegate)
		}
	}
	for _, o := range []*metadata.OperatorStateHandle{h.Operator, h.RawOperator} {
		if o != nil {
			add(o.Delegate)
		}
	}
	// The channel handles of a subtask share one file.
	for _, c := range append(slices.Clip(h.Inputs), h.Outputs...) {
		if !slices.ContainsFunc(out, func(f snapshot.FileRef) bool { return f.Path == c.Delegate.Path }) {
			add(c.Delegate)
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
	out, err := w.ledger.Staged(w.dir, func(so *subtaskOut) any { return handlesOf(so) },
		func(f ledger.Finished[*subtaskOut]) ([]snapshot.FileRef, error) { return f.Value.files, nil })
	if err != nil {
		return nil, fmt.Errorf("flink writer: %w", err)
	}
	w.done = true
	return out, nil
}

func handlesOf(so *subtaskOut) *stagedHandles {
	return &stagedHandles{Keyed: so.keyed, RawKeyed: so.rawKeyed, Operator: so.operator, RawOperator: so.rawOperator, Inputs: so.inputs, Outputs: so.outputs}
}

// Adopt records a subtask another writer staged in w's directory; see
// snapshot.Adopter. The checksum manifest takes each file's CRC32C from
// what the staging writer recorded, which the caller has checked.
func (w *writer) Adopt(_ context.Context, op *snapshot.Operator, s snapshot.StagedSubtask) error {
	if s.Subtask == nil {
		return fmt.Errorf("flink writer: operator %q subtask %d: staged without figures", op.Label(), s.Index)
	}
	var h stagedHandles
	if err := msgpack.Unmarshal(s.Layout, &h); err != nil {
		return fmt.Errorf("flink writer: operator %q subtask %d: staged handles: %w", op.Label(), s.Index, err)
	}
	so := &subtaskOut{keyed: h.Keyed, rawKeyed: h.RawKeyed, operator: h.Operator, rawOperator: h.RawOperator, inputs: h.Inputs, outputs: h.Outputs}
	for _, f := range h.files() {
		i := slices.IndexFunc(s.Files, func(r snapshot.FileRef) bool { return r.Path == path.Join(w.dir, f.Path) })
		if i < 0 || s.Files[i].Size != f.Size {
			return fmt.Errorf("flink writer: operator %q subtask %d: the staged files do not record %q as its handles do (%d bytes)", op.Label(), s.Index, f.Path, f.Size)
		}
		so.files = append(so.files, snapshot.FileRef{Path: f.Path, Size: f.Size, CRC32C: s.Files[i].CRC32C})
	}
	if err := w.ledger.Adopt(op, s.Index, s.Subtask, so.files, so); err != nil {
		return fmt.Errorf("flink writer: %w", err)
	}
	return nil
}
