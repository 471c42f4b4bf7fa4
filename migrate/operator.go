package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// ErrConflict reports an edit that would leave two operators with one uid.
var ErrConflict = errors.New("conflicting operator")

// RemoveOperator writes r's snapshot without the operator labelled label
// (uid, id or name) to w, and commits.
func RemoveOperator(ctx context.Context, r snapshot.Reader, w snapshot.Writer, label string) error {
	return rewrite(ctx, r, w, label, func(_ *snapshot.Operator) (*snapshot.Operator, error) { return nil, nil })
}

// RenameOperator writes r's snapshot to w with the uid of the operator
// labelled label changed to uid, and commits. The operator id is kept.
func RenameOperator(ctx context.Context, r snapshot.Reader, w snapshot.Writer, label, uid string) error {
	if uid == "" {
		return fmt.Errorf("%w: the new uid is empty", ErrConflict)
	}
	if other, ok := r.Snapshot().Operator(uid); ok {
		return fmt.Errorf("%w: operator %q already has uid, id or name %q", ErrConflict, other.Label(), uid)
	}
	return rewrite(ctx, r, w, label, func(op *snapshot.Operator) (*snapshot.Operator, error) {
		op.UID = uid
		return op, nil
	})
}

// rewrite copies every operator, passing the labelled one through edit
// (nil drops it).
func rewrite(ctx context.Context, r snapshot.Reader, w snapshot.Writer, label string, edit func(*snapshot.Operator) (*snapshot.Operator, error)) (err error) {
	defer func() {
		if err != nil {
			_ = w.Abort(context.WithoutCancel(ctx))
		}
	}()
	s := r.Snapshot()
	target, ok := s.Operator(label)
	if !ok {
		return fmt.Errorf("%w: no operator %q in the snapshot", snapshot.ErrNotFound, label)
	}
	out := redistribute.Rewritten(s)
	var kept []*snapshot.Operator
	for i, op := range s.Operators {
		newOp := out.Operators[i]
		if op == target {
			if newOp, err = edit(newOp); err != nil {
				return err
			}
			if newOp == nil {
				continue
			}
		}
		kept = append(kept, newOp)
		if err := redistribute.CopyOperator(ctx, r, w, op, newOp); err != nil {
			return err
		}
	}
	out.Operators = kept
	return w.Commit(ctx, out)
}
