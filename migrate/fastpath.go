package migrate

import (
	"context"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// writeSubtask writes new subtask j of operator plan p: through w's
// snapshot.KeyedCopier when w has one, max parallelism stays and opts allow it,
// else entry by entry (WriteSubtask). Operator and raw state, and the data
// in flight inFlight carries (may be nil), take the same code either way.
func writeSubtask(ctx context.Context, r snapshot.Reader, a *redistribute.Assignment, w snapshot.Writer, op, newOp *snapshot.Operator, p *redistribute.OperatorPlan, j int, inFlight func(snapshot.SubtaskWriter) error, opts ExecuteOptions) error {
	kc, ok := unwrapWriter(w).(snapshot.KeyedCopier)
	if !ok || opts.EntryByEntry || p.New.MaxParallelism != p.Old.MaxParallelism {
		return WriteSubtask(ctx, a, w, newOp, j, inFlight, opts.Progress)
	}
	sw, ok, err := kc.SubtaskFrom(ctx, r, op, newOp, j, a.KeyGroups(j))
	if err != nil {
		return err
	}
	if !ok {
		return WriteSubtask(ctx, a, w, newOp, j, inFlight, opts.Progress)
	}
	if opts.Progress != nil && j < len(p.Subtasks) {
		opts.Progress(p.Subtasks[j].KeyedBytes)
	}
	return finishSubtask(ctx, a, sw, j, inFlight, opts.Progress)
}
