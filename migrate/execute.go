package migrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/stateutil/stateutil/internal/recovered"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// ExecuteOptions tune Execute.
type ExecuteOptions struct {
	// TempDir holds what a max-parallelism change spills, beyond
	// MemoryLimit bytes of entries (0: redistribute.DefaultMemoryLimit).
	TempDir     string
	MemoryLimit int64
	// Progress, if set, is called as keyed entries and operator-state
	// elements are written, with their bytes since the last call (about a
	// megabyte at a time); never concurrently.
	Progress func(bytes int64)
	// EntryByEntry moves keyed state entry by entry even where the writer
	// has a fast path (snapshot.KeyedCopier): the reference the fast path
	// is tested and measured against.
	EntryByEntry bool
	// Codecs hash keys when max parallelism changes.
	Codecs *snapshot.Codecs
	// Subtasks, when set, limits Execute to one shard's part of the plan:
	// Subtasks[i] lists, ascending, the new subtasks of plan operator i to
	// write. nil writes every subtask.
	Subtasks [][]int
}

// Execute writes every new subtask of plan to w: state streams from r to
// w operator by operator, up to maxSubtaskWriters subtasks of an operator
// at a time (see forEachSubtask); only a max-parallelism change buffers
// entries (on disk beyond a memory limit). A storage may finish a file's
// upload while the next ones are written (storage.DeferCommits); Execute
// returns once every file it wrote is in place or failed, so that the
// metadata written after it never refers to a missing file, and an abort
// after it removes them all. It neither commits nor aborts w (Commit, and
// the caller on failure, do). plan must come from NewPlan on the same
// snapshot.
func Execute(ctx context.Context, r snapshot.Reader, w snapshot.Writer, plan *Plan, opts ExecuteOptions) error {
	ctx, commits := storage.DeferCommits(ctx)
	err := execute(ctx, r, w, plan, opts)
	// A failed write is what to report, not the commits it cut short.
	if werr := commits.Wait(); err == nil {
		err = werr
	}
	return err
}

func execute(ctx context.Context, r snapshot.Reader, w snapshot.Writer, plan *Plan, opts ExecuteOptions) error {
	s := r.Snapshot()
	if len(plan.Operators) != len(s.Operators) {
		return fmt.Errorf("the plan has %d operators, the snapshot %d: plan another snapshot", len(plan.Operators), len(s.Operators))
	}
	carrier, err := inFlightCarrier(w, plan)
	if err != nil {
		return err
	}
	for i, op := range s.Operators {
		p := &plan.Operators[i]
		if p.ID != op.ID || p.UID != op.UID {
			return fmt.Errorf("plan operator %d is %q, the snapshot's is %q", i, p.UID, op.Label())
		}
		newOp := plan.output(i)
		if newOp == nil || (opts.Subtasks != nil && len(opts.Subtasks[i]) == 0) {
			continue // removed, or another shard's
		}
		var only []int
		if opts.Subtasks != nil {
			only = opts.Subtasks[i]
		}
		if err := executeOperator(ctx, r, w, carrier, op, newOp, p, only, opts); err != nil {
			return err
		}
	}
	return nil
}

// Commit writes plan's metadata to w, after Execute wrote its subtasks.
func Commit(ctx context.Context, w snapshot.Writer, plan *Plan) error {
	return w.Commit(ctx, plan.committed())
}

// executeOperator writes the new subtasks of one operator: those in only,
// or all when only is nil; carrier, if set, carries their data in flight.
func executeOperator(ctx context.Context, r snapshot.Reader, w snapshot.Writer, carrier snapshot.InFlightCarrier, op, newOp *snapshot.Operator, p *redistribute.OperatorPlan, only []int, opts ExecuteOptions) error {
	pieces := make([][][]redistribute.Piece, p.New.Parallelism)
	for j := range pieces {
		pieces[j] = make([][]redistribute.Piece, len(p.OperatorStates))
		for s, sp := range p.OperatorStates {
			pieces[j][s] = sp.Assignment[j]
		}
	}
	// A writer that re-hashes from the stored pairs itself (the flink
	// writer from a Flink snapshot) takes the keyed state; the assignment
	// then moves operator and raw state only.
	rc, fast := unwrapWriter(w).(snapshot.RehashingCopier)
	fast = fast && !opts.EntryByEntry && p.New.MaxParallelism != p.Old.MaxParallelism && len(op.KeyedStates) > 0 && rc.CanRehash(r, op, newOp)
	a, err := redistribute.OpenPlanned(ctx, r, op, p.New, pieces, redistribute.Options{TempDir: opts.TempDir, MemoryLimit: opts.MemoryLimit, Codecs: opts.Codecs, SkipKeyed: fast, Only: only})
	if err != nil {
		return err
	}
	defer a.Close()
	n := a.Parallelism()
	if only != nil {
		n = len(only)
	}
	opts.Progress = serialized(opts.Progress, n)
	index := func(j int) int {
		if only != nil {
			return only[j]
		}
		return j
	}
	if fast {
		return executeRehashed(ctx, r, a, rc, op, newOp, p, n, index, opts)
	}
	// Readers' errors name the old subtask, writers' the new one.
	return forEachSubtask(ctx, n, func(ctx context.Context, j int) error {
		return writeSubtask(ctx, r, a, w, op, newOp, p, index(j), carryInFlight(ctx, carrier, r, op, index(j)), opts)
	})
}

// rehashBatch is how many new subtasks one pass of a re-hashing writer
// writes: each holds an open file and its buffers until the pass ends.
const rehashBatch = 64

// executeRehashed writes n new subtasks (index(0..n-1)) through a
// re-hashing writer, rehashBatch at a time, each batch one read of the
// old stored pairs; their operator and raw state follow as elsewhere.
// Where the plan's keyed figures were estimates and every subtask is
// written, the counts replace them.
func executeRehashed(ctx context.Context, r snapshot.Reader, a *redistribute.Assignment, rc snapshot.RehashingCopier, op, newOp *snapshot.Operator, p *redistribute.OperatorPlan, n int, index func(int) int, opts ExecuteOptions) error {
	counted := make([]snapshot.Stats, 0, n)
	for lo := 0; lo < n; lo += rehashBatch {
		batch := make([]int, 0, rehashBatch)
		var kgs []keygroup.Range
		for j := lo; j < min(n, lo+rehashBatch); j++ {
			batch = append(batch, index(j))
			kgs = append(kgs, a.KeyGroups(index(j)))
		}
		sws, counts, err := rc.SubtasksRehashed(ctx, r, op, newOp, batch, kgs, opts.Codecs)
		if err != nil {
			return err
		}
		err = forEachSubtask(ctx, len(batch), func(ctx context.Context, i int) error {
			if opts.Progress != nil {
				opts.Progress(counts[i].Bytes)
			}
			return finishSubtask(ctx, a, sws[i], batch[i], nil, opts.Progress)
		})
		if err != nil {
			for _, sw := range sws {
				sw.Close() // a no-op for those finished; the writer's abort removes them all
			}
			return err
		}
		counted = append(counted, counts...)
	}
	if p.Estimated && n == len(p.Subtasks) {
		p.Counted(counted)
	}
	return nil
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
				if errs[i] = safe(gctx, i, fn); errs[i] != nil {
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

// safe calls fn, returning a panic as an error (recovered.Error).
func safe(ctx context.Context, i int, fn func(ctx context.Context, i int) error) (err error) {
	defer recovered.Capture(&err)
	return fn(ctx, i)
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
// newOp, with its data in flight if inFlight (may be nil) carries it,
// reporting the bytes of entries and elements written to progress (may be
// nil) in batches.
func WriteSubtask(ctx context.Context, a *redistribute.Assignment, w snapshot.Writer, newOp *snapshot.Operator, i int, inFlight func(snapshot.SubtaskWriter) error, progress func(int64)) error {
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
	return finishSubtask(ctx, a, sw, i, inFlight, progress)
}

// finishSubtask adds new subtask i's operator and raw state to sw, whose
// keyed state is complete, and its data in flight if inFlight (may be
// nil) carries it, and closes it.
func finishSubtask(ctx context.Context, a *redistribute.Assignment, sw snapshot.SubtaskWriter, i int, inFlight func(snapshot.SubtaskWriter) error, progress func(int64)) error {
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
	if inFlight != nil {
		if err := inFlight(sw); err != nil {
			return err
		}
	}
	return sw.Close()
}

// unwrapWriter is the format's writer behind a claimed destination.
func unwrapWriter(w snapshot.Writer) snapshot.Writer {
	if d, ok := w.(*destination); ok {
		return d.Writer
	}
	return w
}
