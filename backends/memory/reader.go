package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

type reader struct {
	b        body
	recorded string // the format the dump's metadata names
}

func (r *reader) Snapshot() *snapshot.Snapshot { return r.b.Snapshot }

// RecordedFormat is the format the dump's metadata names; see
// snapshot.FormatRecorder.
func (r *reader) RecordedFormat() string { return r.recorded }

func (r *reader) Close() error { return nil }

func (r *reader) subtask(op *snapshot.Operator, index int) (*subtaskState, error) {
	for i, o := range r.b.Snapshot.Operators {
		if o == op {
			if index < 0 || index >= len(r.b.State[i].Subtasks) {
				return nil, fmt.Errorf("%w: operator %q has no subtask %d", snapshot.ErrNotFound, op.Label(), index)
			}
			return &r.b.State[i].Subtasks[index], nil
		}
	}
	return nil, fmt.Errorf("%w: operator %q is not in this snapshot", snapshot.ErrNotFound, op.Label())
}

func (r *reader) Entries(_ context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) snapshot.Entries {
	sub, err := r.subtask(op, index)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	return func(yield func(snapshot.Entry, error) bool) {
		es := sub.Entries
		for i := sort.Search(len(es), func(i int) bool { return es[i].KeyGroup >= kgs.Start }); i < len(es) && es[i].KeyGroup <= kgs.End; i++ {
			e := &es[i]
			if !yield(snapshot.Entry{
				KeyGroup: e.KeyGroup, State: op.KeyedStates[e.State].Name,
				Key: e.Key, Namespace: e.Namespace, UserKey: e.UserKey, Value: e.Value, ExpiresAt: e.ExpiresAt,
			}, nil) {
				return
			}
		}
	}
}

func (r *reader) Elements(_ context.Context, op *snapshot.Operator, index int) snapshot.Elements {
	sub, err := r.subtask(op, index)
	if err != nil {
		return snapshot.FailedElements(err)
	}
	return func(yield func(snapshot.Element, error) bool) {
		for _, l := range sub.Lists {
			for _, v := range l.Values {
				if !yield(snapshot.Element{State: l.State, Subtask: index, Value: v}, nil) {
					return
				}
			}
		}
	}
}

func (r *reader) Raw(_ context.Context, op *snapshot.Operator, index int) (snapshot.RawState, error) {
	sub, err := r.subtask(op, index)
	if err != nil {
		return snapshot.RawState{}, err
	}
	return snapshot.RawState{Keyed: sub.RawKeyed, Operator: sub.RawOperator}, nil
}
