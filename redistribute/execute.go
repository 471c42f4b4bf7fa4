package redistribute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/stateutil/stateutil/snapshot"
)

// Execute writes r's snapshot, redistributed as plan says, to w and
// commits it; on any error it aborts w, so nothing is left that a Reader
// accepts. State streams from r to w operator by operator, up to
// maxSubtaskWriters subtasks of an operator at a time (see
// forEachSubtask); only a max-parallelism change buffers entries (on disk
// beyond opts.MemoryLimit). opts.Progress is never called concurrently.
// plan must come from NewPlan on the same snapshot.
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
	n := a.Parallelism()
	opts.Progress = serialized(opts.Progress, n)
	return forEachSubtask(ctx, n, func(ctx context.Context, j int) error {
		// Readers' errors name the old subtask, writers' the new one.
		return writeSubtask(ctx, r, a, w, op, newOp, p, j, opts)
	})
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
	return forEachSubtask(ctx, a.Parallelism(), func(ctx context.Context, i int) error {
		return WriteSubtask(ctx, a, w, newOp, i, nil)
	})
}

// maxSubtaskWriters caps the subtasks written at once. Each subtask
// writer holds bounded but sizeable buffers (a rocksdb writer sorts up to
// 64 MiB per subtask), so the cap keeps memory bounded whatever
// GOMAXPROCS is.
const maxSubtaskWriters = 2

// subtaskWriters is how many subtasks forEachSubtask writes at once.
func subtaskWriters(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), maxSubtaskWriters, n))
}

// forEachSubtask calls fn for subtasks 0..n-1, up to subtaskWriters(n) at
// a time, taking them in index order. The first failure cancels the ctx
// the others run with and no further subtask starts; every call has
// returned before forEachSubtask does. Its error is the lowest-indexed
// subtask's, leaving out cancellations the failure itself caused, so it
// does not depend on which goroutine failed first. Writers commit
// subtasks by index, so the order of completion does not show in the
// snapshot written.
func forEachSubtask(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	workers := subtaskWriters(n)
	if workers == 1 {
		for i := range n {
			if err := fn(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for gctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if errs[i] = fn(gctx, i); errs[i] != nil {
					cancel()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case ctx.Err() == nil && errors.Is(err, context.Canceled):
			// Canceled by another subtask's failure: report that one.
			canceled = cmp.Or(canceled, err)
		default:
			return err
		}
	}
	if canceled == nil && done.Load() < int64(n) {
		canceled = ctx.Err() // canceled before every subtask started
	}
	return canceled
}

// serialized makes progress safe to call from the goroutines writing n
// subtasks: calls are made one at a time.
func serialized(progress func(int64), n int) func(int64) {
	if progress == nil || subtaskWriters(n) == 1 {
		return progress
	}
	var mu sync.Mutex
	return func(b int64) {
		mu.Lock()
		defer mu.Unlock()
		progress(b)
	}
}

// progressBatch hands sizes to report a megabyte at a time, so that an
// entry costs the writers no lock (report is serialized).
type progressBatch struct {
	report func(int64)
	n      int64
}

func (p *progressBatch) add(n int64) {
	if p.report == nil {
		return
	}
	if p.n += n; p.n >= 1<<20 {
		p.flush()
	}
}

func (p *progressBatch) flush() {
	if p.n > 0 {
		p.report(p.n)
		p.n = 0
	}
}

// WriteSubtask writes new subtask i of an assignment to w as a subtask of
// newOp, reporting the bytes of entries and elements written to progress
// (may be nil) in batches.
func WriteSubtask(ctx context.Context, a *Assignment, w snapshot.Writer, newOp *snapshot.Operator, i int, progress func(int64)) error {
	sw, err := w.Subtask(ctx, newOp, i, a.KeyGroups(i))
	if err != nil {
		return err
	}
	batch := progressBatch{report: progress}
	var cur snapshot.Entry // one for all: a writer's Entry makes its argument escape
	for e, err := range a.Entries(ctx, i) {
		if err != nil {
			return err
		}
		cur = e
		if err := sw.Entry(&cur); err != nil {
			return err
		}
		batch.add(e.Size())
	}
	batch.flush()
	return finishSubtask(ctx, a, sw, i, progress)
}

// finishSubtask adds new subtask i's operator and raw state to sw, whose
// keyed state is complete, and closes it.
func finishSubtask(ctx context.Context, a *Assignment, sw snapshot.SubtaskWriter, i int, progress func(int64)) error {
	batch := progressBatch{report: progress}
	for el, err := range a.Elements(ctx, i) {
		if err != nil {
			return err
		}
		if err := sw.Element(el.State, el.Value); err != nil {
			return err
		}
		batch.add(int64(len(el.Value)))
	}
	batch.flush()
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
// them in), without the source's format and without what the reader
// recorded about where s was found.
func Rewritten(s *snapshot.Snapshot) *snapshot.Snapshot {
	out := *s
	out.Format = ""
	out.Properties = maps.Clone(s.Properties)
	delete(out.Properties, snapshot.PropJobCheckpoints)
	out.Operators = make([]*snapshot.Operator, len(s.Operators))
	for i, op := range s.Operators {
		c := *op
		c.Subtasks = nil
		out.Operators[i] = &c
	}
	return &out
}
