package redistribute

import (
	"context"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// KeyedCopier is implemented by a snapshot.Writer that can build a new
// subtask's keyed state straight from an old snapshot's files, without
// decoding and re-encoding entries: the fast path of a rescale at
// unchanged max parallelism, where a new subtask's keyed state is whole
// key groups of the old subtasks, byte for byte.
type KeyedCopier interface {
	// SubtaskFrom starts subtask index of newOp with its keyed state
	// complete: every entry of op (an operator of r's snapshot) whose key
	// group lies in kgs. The caller adds operator and raw state and closes
	// it; Entry must not be called. ok is false, with nothing started,
	// when the writer cannot copy from r (another format, or descriptors
	// that change how entries are stored); the caller then goes entry by
	// entry.
	SubtaskFrom(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, index int, kgs keygroup.Range) (sw snapshot.SubtaskWriter, ok bool, err error)
}

// writeSubtask writes new subtask j of operator plan p: through w's
// KeyedCopier when w has one, max parallelism stays and opts allow it,
// else entry by entry (WriteSubtask). Operator and raw state take the
// same code either way.
func writeSubtask(ctx context.Context, r snapshot.Reader, a *Assignment, w snapshot.Writer, op, newOp *snapshot.Operator, p *OperatorPlan, j int, opts Options) error {
	kc, ok := w.(KeyedCopier)
	if !ok || opts.EntryByEntry || p.New.MaxParallelism != p.Old.MaxParallelism {
		return WriteSubtask(ctx, a, w, newOp, j, opts.Progress)
	}
	sw, ok, err := kc.SubtaskFrom(ctx, r, op, newOp, j, a.KeyGroups(j))
	if err != nil {
		return err
	}
	if !ok {
		return WriteSubtask(ctx, a, w, newOp, j, opts.Progress)
	}
	if opts.Progress != nil && j < len(p.Subtasks) {
		opts.Progress(p.Subtasks[j].KeyedBytes)
	}
	return finishSubtask(ctx, a, sw, j, opts.Progress)
}
