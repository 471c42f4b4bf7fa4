// Package ledger is the bookkeeping every snapshot writer shares: which
// subtasks of which operators were started and finished, and how they
// become the operators of the committed snapshot. One place decides what
// a Commit accepts: every started subtask finished, each operator once,
// no subtask beyond its operator's parallelism, no state for an operator
// the snapshot does not have; subtasks nothing was written for are empty.
package ledger

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Ledger records one writer's subtasks; T is what the writer keeps per
// subtask beside its figures (file layouts, handles). Safe for concurrent
// use.
type Ledger[T any] struct {
	mu   sync.Mutex
	ops  map[string]*operator[T]
	done bool
}

type operator[T any] struct {
	seq      int // in the order operators were first started
	label    string
	subtasks map[int]*subtask[T]
}

type subtask[T any] struct {
	finished bool
	sub      *snapshot.Subtask
	value    T
}

// Key identifies an operator across Start and Commit: its id, else its
// label.
func Key(op *snapshot.Operator) string {
	if op.ID != "" {
		return "id:" + op.ID
	}
	return "label:" + op.Label()
}

// Start records that subtask index of op is being written, owning kgs,
// and returns the operator's sequence number (0 for the first operator
// started, and so on: a stable short name for files). It refuses an index
// outside op's parallelism, key groups outside its max parallelism, a
// subtask started twice, and anything after Commit or Abort.
func (l *Ledger[T]) Start(op *snapshot.Operator, index int, kgs keygroup.Range) (int, error) {
	if index < 0 || (op.Parallelism > 0 && index >= op.Parallelism) {
		return 0, fmt.Errorf("operator %q: subtask %d outside parallelism %d", op.Label(), index, op.Parallelism)
	}
	if kgs.Len() > 0 && (kgs.Start < 0 || kgs.End >= keygroup.UpperBoundMaxParallelism ||
		(op.MaxParallelism > 0 && kgs.End >= op.MaxParallelism)) {
		return 0, fmt.Errorf("operator %q: key groups %v outside max parallelism %d", op.Label(), kgs, op.MaxParallelism)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return 0, fmt.Errorf("operator %q subtask %d: the writer has already committed or aborted", op.Label(), index)
	}
	if l.ops == nil {
		l.ops = map[string]*operator[T]{}
	}
	o := l.ops[Key(op)]
	if o == nil {
		o = &operator[T]{seq: len(l.ops), label: op.Label(), subtasks: map[int]*subtask[T]{}}
		l.ops[Key(op)] = o
	}
	if o.subtasks[index] != nil {
		return 0, fmt.Errorf("operator %q: subtask %d written twice", op.Label(), index)
	}
	o.subtasks[index] = &subtask[T]{}
	return o.seq, nil
}

// Finish records subtask index of op as complete, with its figures and
// the writer's value.
func (l *Ledger[T]) Finish(op *snapshot.Operator, index int, sub *snapshot.Subtask, value T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.ops[Key(op)]; o != nil && o.subtasks[index] != nil {
		o.subtasks[index] = &subtask[T]{finished: true, sub: sub, value: value}
	}
}

// Commit fills in the subtasks of every operator of s from what was
// finished, subtasks nothing was written for as empty ones, and returns
// the writer's values in the same shape (the zero T for empty subtasks).
// After a successful Commit the ledger takes nothing more; after a failed
// one the writer may still Abort.
func (l *Ledger[T]) Commit(s *snapshot.Snapshot) ([][]T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil, fmt.Errorf("the writer has already committed or aborted")
	}
	seen := map[string]bool{}
	values := make([][]T, len(s.Operators))
	for i, op := range s.Operators {
		key := Key(op)
		if seen[key] {
			return nil, fmt.Errorf("operator %q appears twice in the snapshot", op.Label())
		}
		seen[key] = true
		var written map[int]*subtask[T]
		if o := l.ops[key]; o != nil {
			written = o.subtasks
		}
		for idx, st := range written {
			if !st.finished {
				return nil, fmt.Errorf("operator %q: subtask %d was started but not closed", op.Label(), idx)
			}
			if idx >= op.Parallelism {
				return nil, fmt.Errorf("operator %q: subtask %d written for parallelism %d", op.Label(), idx, op.Parallelism)
			}
		}
		op.Subtasks = make([]*snapshot.Subtask, op.Parallelism)
		values[i] = make([]T, op.Parallelism)
		for idx := range op.Parallelism {
			if st := written[idx]; st != nil {
				op.Subtasks[idx], values[i][idx] = st.sub, st.value
				continue
			}
			op.Subtasks[idx] = Empty(op, idx)
		}
	}
	for key, o := range l.ops {
		if !seen[key] && len(o.subtasks) > 0 {
			return nil, fmt.Errorf("state written for operator %q, which the committed snapshot does not have", o.label)
		}
	}
	l.done = true
	return values, nil
}

// Finished is one finished subtask, as Closed lists it.
type Finished[T any] struct {
	OperatorID, Operator string // the operator's id and label
	Index                int
	Subtask              *snapshot.Subtask
	Value                T
}

// Close marks the ledger done, as Commit does, and lists the finished
// subtasks, by operator (in the order first started) and index: what a
// staging writer hands to the writer that commits (snapshot.Stager). It
// refuses a subtask started but not finished.
func (l *Ledger[T]) Close() ([]Finished[T], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil, fmt.Errorf("the writer has already committed or aborted")
	}
	ops := make([]*operator[T], len(l.ops))
	ids := make([]string, len(l.ops))
	for key, o := range l.ops {
		ops[o.seq] = o
		if id, ok := strings.CutPrefix(key, "id:"); ok {
			ids[o.seq] = id
		}
	}
	var out []Finished[T]
	for i, o := range ops {
		idx := slices.Sorted(maps.Keys(o.subtasks))
		for _, j := range idx {
			st := o.subtasks[j]
			if !st.finished {
				return nil, fmt.Errorf("operator %q: subtask %d was started but not closed", o.label, j)
			}
			out = append(out, Finished[T]{OperatorID: ids[i], Operator: o.label, Index: j, Subtask: st.sub, Value: st.value})
		}
	}
	l.done = true
	return out, nil
}

// Abort marks the ledger done: nothing is started or committed after it.
func (l *Ledger[T]) Abort() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

// Done reports whether Commit succeeded or Abort was called.
func (l *Ledger[T]) Done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// Empty is the subtask nothing was written for: no state, its operator's
// key-group range.
func Empty(op *snapshot.Operator, idx int) *snapshot.Subtask {
	sub := &snapshot.Subtask{Index: idx, Keyed: snapshot.Stats{Known: true}, Operator: snapshot.Stats{Known: true}}
	if op.MaxParallelism > 0 && op.Parallelism > 0 && idx < op.Parallelism {
		sub.KeyGroups = keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx)
	} else {
		sub.KeyGroups = keygroup.Range{Start: 0, End: -1}
	}
	return sub
}
