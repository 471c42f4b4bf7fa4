package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/stateutil/stateutil/internal/envelope"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

type reader struct {
	snap     *snapshot.Snapshot
	recorded string // the format the dump's metadata names
	// Version 1: all state, read at open.
	whole []opState
	// Version 2: the file, its key groups read on demand.
	x *indexed
}

func newReader(s *snapshot.Snapshot, whole []opState, x *indexed) *reader {
	r := &reader{snap: s, recorded: s.Format, whole: whole, x: x}
	s.Format = Name
	return r
}

func (r *reader) Snapshot() *snapshot.Snapshot { return r.snap }

// RecordedFormat is the format the dump's metadata names; see
// snapshot.FormatRecorder.
func (r *reader) RecordedFormat() string { return r.recorded }

func (r *reader) Close() error {
	if r.x != nil {
		return r.x.f.Close()
	}
	return nil
}

// CheckWhole checks the checksum of the whole file (snapshot.WholeChecker):
// a version 2 dump is otherwise checked a key group at a time.
func (r *reader) CheckWhole(context.Context) error {
	if r.x == nil {
		return nil // checked at open
	}
	return envelope.CheckSum(r.x.f, r.x.f.Size(), r.x.f.Name())
}

// subtask finds op among the operators and checks index.
func (r *reader) subtask(op *snapshot.Operator, index int) (int, error) {
	for i, o := range r.snap.Operators {
		if o == op {
			if index < 0 || index >= len(o.Subtasks) {
				return 0, fmt.Errorf("%w: operator %q has no subtask %d", snapshot.ErrNotFound, op.Label(), index)
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: operator %q is not in this snapshot", snapshot.ErrNotFound, op.Label())
}

// parts is a subtask's operator and raw state.
func (r *reader) parts(i, index int) ([]elementList, snapshot.RawState) {
	var p *Parts
	if r.x != nil {
		p = &r.x.subs[i][index].Parts
	} else {
		p = &r.whole[i].Subtasks[index].Parts
	}
	return p.Lists, snapshot.RawState{Keyed: p.RawKeyed, Operator: p.RawOperator}
}

func (r *reader) Entries(_ context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) snapshot.Entries {
	i, err := r.subtask(op, index)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	if r.x != nil {
		return r.x.entries(op, &r.x.subs[i][index], kgs)
	}
	sub := &r.whole[i].Subtasks[index]
	return func(yield func(snapshot.Entry, error) bool) {
		es := sub.Entries
		for i := sort.Search(len(es), func(i int) bool { return es[i].KeyGroup >= kgs.Start }); i < len(es) && es[i].KeyGroup <= kgs.End; i++ {
			if !yield(es[i].of(op), nil) {
				return
			}
		}
	}
}

func (r *reader) Elements(_ context.Context, op *snapshot.Operator, index int) snapshot.Elements {
	i, err := r.subtask(op, index)
	if err != nil {
		return snapshot.FailedElements(err)
	}
	lists, _ := r.parts(i, index)
	return func(yield func(snapshot.Element, error) bool) {
		for _, l := range lists {
			for _, v := range l.Values {
				if !yield(snapshot.Element{State: l.State, Subtask: index, Value: v}, nil) {
					return
				}
			}
		}
	}
}

func (r *reader) Raw(_ context.Context, op *snapshot.Operator, index int) (snapshot.RawState, error) {
	i, err := r.subtask(op, index)
	if err != nil {
		return snapshot.RawState{}, err
	}
	_, raw := r.parts(i, index)
	return raw, nil
}
