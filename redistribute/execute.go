package redistribute

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// Execute writes r's snapshot, redistributed as plan says, to w and
// commits it; on any error it aborts w, so nothing is left that a Reader
// accepts. State streams from r to w one subtask at a time; only a
// max-parallelism change buffers entries (on disk beyond
// opts.MemoryLimit). plan must come from NewPlan on the same snapshot.
func Execute(ctx context.Context, r snapshot.Reader, w snapshot.Writer, plan *Plan, opts Options) (err error) {
	defer func() {
		if err != nil {
			_ = w.Abort(context.WithoutCancel(ctx))
		}
	}()
	s := r.Snapshot()
	if len(plan.Operators) != len(s.Operators) {
		return fmt.Errorf("the plan has %d operators, the snapshot %d: plan another snapshot", len(plan.Operators), len(s.Operators))
	}
	out := Rewritten(s)
	for i, op := range s.Operators {
		p := &plan.Operators[i]
		if p.ID != op.ID || p.UID != op.UID {
			return fmt.Errorf("plan operator %d is %q, the snapshot's is %q", i, p.UID, op.Label())
		}
		newOp := out.Operators[i]
		newOp.Parallelism, newOp.MaxParallelism = p.New.Parallelism, p.New.MaxParallelism
		if err := executeOperator(ctx, r, w, op, newOp, p, opts); err != nil {
			return err
		}
	}
	return w.Commit(ctx, out)
}

func executeOperator(ctx context.Context, r snapshot.Reader, w snapshot.Writer, op, newOp *snapshot.Operator, p *OperatorPlan, opts Options) error {
	pieces := make([][][]Piece, p.New.Parallelism)
	for j := range pieces {
		pieces[j] = make([][]Piece, len(p.OperatorStates))
		for s, sp := range p.OperatorStates {
			pieces[j][s] = sp.Assignment[j]
		}
	}
	a, err := open(ctx, r, op, p.New, pieces, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	for j := range a.Parallelism() {
		// Readers' errors name the old subtask, writers' the new one.
		if err := writeSubtask(ctx, r, a, w, op, newOp, p, j, opts); err != nil {
			return err
		}
	}
	return nil
}

// CopyOperator writes op's subtasks unchanged to w as newOp's (the same
// operator, renamed or re-described): the copy path of conversion and
// operator edits.
func CopyOperator(ctx context.Context, r snapshot.Reader, w snapshot.Writer, op, newOp *snapshot.Operator) error {
	same := Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
	a, err := openWith(ctx, r, op, same, Options{}, StoredOperatorState)
	if err != nil {
		return err
	}
	defer a.Close()
	for i := range a.Parallelism() {
		if err := WriteSubtask(ctx, a, w, newOp, i, nil); err != nil {
			return err
		}
	}
	return nil
}

// WriteSubtask writes new subtask i of an assignment to w as a subtask of
// newOp, reporting each entry's or element's size to progress (may be nil).
func WriteSubtask(ctx context.Context, a *Assignment, w snapshot.Writer, newOp *snapshot.Operator, i int, progress func(int64)) error {
	sw, err := w.Subtask(ctx, newOp, i, a.KeyGroups(i))
	if err != nil {
		return err
	}
	for e, err := range a.Entries(ctx, i) {
		if err != nil {
			return err
		}
		if err := sw.Entry(&e); err != nil {
			return err
		}
		if progress != nil {
			progress(e.Size())
		}
	}
	return finishSubtask(ctx, a, sw, i, progress)
}

// finishSubtask adds new subtask i's operator and raw state to sw, whose
// keyed state is complete, and closes it.
func finishSubtask(ctx context.Context, a *Assignment, sw snapshot.SubtaskWriter, i int, progress func(int64)) error {
	for el, err := range a.Elements(ctx, i) {
		if err != nil {
			return err
		}
		if err := sw.Element(el.State, el.Value); err != nil {
			return err
		}
		if progress != nil {
			progress(int64(len(el.Value)))
		}
	}
	raw, err := a.Raw(ctx, i)
	if err != nil {
		return err
	}
	if len(raw.Keyed)+len(raw.Operator) > 0 {
		if err := sw.Raw(raw); err != nil {
			return err
		}
	}
	return sw.Close()
}

// Rewritten is a copy of s's metadata to write a new snapshot from: the
// same job, operators and descriptors, without subtasks (a Writer fills
// them in) and without the source's format.
func Rewritten(s *snapshot.Snapshot) *snapshot.Snapshot {
	out := *s
	out.Format = ""
	out.Operators = make([]*snapshot.Operator, len(s.Operators))
	for i, op := range s.Operators {
		c := *op
		c.Subtasks = nil
		out.Operators[i] = &c
	}
	return &out
}
