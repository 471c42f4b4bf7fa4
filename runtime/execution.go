package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stateutil/stateutil/internal/recovered"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// execution is one run of a job: its subtasks, channels and coordinator.
type execution struct {
	job       *Job
	opts      Options
	jobID     string
	maxP      int
	format    *snapshot.Format
	clock     Clock
	committer Committer
	backend   StateBackend // opts.Backend, or the run's session of it
	incr      incremental  // set when backend checkpoints incrementally
	vertices  []*vertex
	opMeta    []*snapshot.Operator
	coord     *coordinator
	restored  string
	started   time.Time

	sources []*sourceTask
	stages  []*stageTask
	sinks   []*sinkTask

	digestMu sync.Mutex
	digest   []digestEntry

	errMu sync.Mutex
	err   error
}

// running is a started job.
type running struct {
	ex     *execution
	cancel context.CancelCauseFunc
	done   chan struct{}
	result *Result
	err    error
}

// Run runs job to the end of its sources and returns what it produced.
func Run(ctx context.Context, job *Job, opts Options) (*Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	ex, err := newExecution(ctx, job, opts)
	if err != nil {
		cancel(err)
		return nil, err
	}
	e := &running{ex: ex, cancel: cancel, done: make(chan struct{})}
	go e.run(ctx)
	return e.Wait()
}

// Wait blocks until the job ended and returns its result. On failure the
// result still tells the records read and checkpoints completed.
func (e *running) Wait() (*Result, error) {
	<-e.done
	return e.result, e.err
}

// safe runs f, returning a panic as an error (recovered.Error).
func safe(ctx context.Context, f func(context.Context) error) (err error) {
	defer recovered.Capture(&err)
	return f(ctx)
}

func (e *running) run(ctx context.Context) {
	ex := e.ex
	var wg sync.WaitGroup
	goFn := func(f func(context.Context) error) {
		wg.Go(func() {
			if err := safe(ctx, f); err != nil {
				ex.fail(err)
				e.cancel(err)
			}
		})
	}
	goFn(ex.coord.run)
	for _, t := range ex.sources {
		goFn(t.run)
	}
	for _, t := range ex.stages {
		goFn(t.run)
	}
	for _, t := range ex.sinks {
		goFn(t.run)
	}
	wg.Wait()
	e.cancel(nil)
	ex.coord.abort(ctx)
	if ex.incr != nil {
		if err := ex.incr.close(); err != nil {
			ex.fail(err)
		}
	}
	for _, t := range ex.stages {
		t.backend.Close()
	}
	e.result, e.err = ex.result(), ex.firstErr()
	close(e.done)
}

func (ex *execution) fail(err error) {
	ex.errMu.Lock()
	defer ex.errMu.Unlock()
	if ex.err == nil {
		ex.err = err
	}
}

func (ex *execution) firstErr() error {
	ex.errMu.Lock()
	defer ex.errMu.Unlock()
	return ex.err
}

func (ex *execution) logf(format string, args ...any) {
	if ex.opts.Log != nil {
		fmt.Fprintf(ex.opts.Log, format+"\n", args...)
	}
}

func (ex *execution) reportProgress() {
	ex.opts.Progress(Progress{Records: ex.coord.records.Load(), Checkpoints: ex.coord.completed, Elapsed: time.Since(ex.started)})
}

func (ex *execution) result() *Result {
	c := ex.coord
	r := &Result{
		SchemaVersion: ResultSchemaVersion,
		Job:           ex.job.Name, JobID: ex.jobID, Parallelism: ex.opts.Parallelism, MaxParallelism: ex.maxP, Format: ex.format.Name,
		RestoredFrom: ex.restored, Records: c.records.Load(), Checkpoints: c.completed, FailedCheckpoints: c.failed,
		LastCheckpoint: c.last, CheckpointDuration: slices.Clone(c.durations), Elapsed: time.Since(ex.started),
		Incremental: slices.Clone(c.incremental),
	}
	if ex.opts.Savepoint != "" && c.last == ex.opts.Savepoint {
		r.Savepoint = ex.opts.Savepoint
	}
	r.StateEntries, r.StateDigest = ex.stateDigest()
	if m, ok := ex.committer.(interface{ Count() int64 }); ok {
		r.OutputLines = m.Count()
	}
	if m, ok := ex.committer.(interface{ Digest() string }); ok {
		r.OutputDigest = m.Digest()
	}
	r.Backend = ex.backend.Name()
	return r
}

// operators is a fresh copy of the operators' metadata for one checkpoint.
func (ex *execution) operators() []*snapshot.Operator {
	out := make([]*snapshot.Operator, len(ex.opMeta))
	for i, op := range ex.opMeta {
		c := *op
		c.KeyedStates = slices.Clone(op.KeyedStates)
		c.OperatorStates = slices.Clone(op.OperatorStates)
		out[i] = &c
	}
	return out
}

func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pickMaxParallelism is the option, else the restored snapshot's, else
// Flink's default for the largest parallelism.
func pickMaxParallelism(opts *Options, job *Job, snap *snapshot.Snapshot) int {
	if opts.MaxParallelism > 0 {
		return opts.MaxParallelism
	}
	if snap != nil {
		for _, s := range job.Stages {
			if op, ok := snap.OperatorOfUID(s.UID); ok {
				return op.MaxParallelism
			}
		}
	}
	p := opts.Parallelism
	for _, own := range []int{job.Source.Parallelism, job.Sink.Parallelism} {
		p = max(p, own)
	}
	for _, s := range job.Stages {
		p = max(p, s.Parallelism)
	}
	return keygroup.DefaultMaxParallelism(p)
}
