package runtime

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// pending is the one checkpoint in flight.
type pending struct {
	id       int64
	kind     snapshot.Kind
	location string // "" = not persisted
	writer   snapshot.Writer
	ops      []*snapshot.Operator // this checkpoint's copy of the operators
	final    bool
	// sync: an incremental checkpoint of the whole job; subtasks pause
	// from their barrier until resume is closed.
	sync    bool
	resume  chan struct{}
	acked   int
	openErr error // creating the writer failed; fixed before the barrier goes out
	err     error // first failed acknowledgement; the coordinator's alone
	started time.Time
}

type ack struct {
	id  int64
	err error
}

// coordinator triggers checkpoints, collects acknowledgements, commits
// checkpoints and then the sinks' output, and ends the job with a final
// checkpoint once every source is exhausted.
type coordinator struct {
	ex       *execution
	mu       sync.Mutex // guards inflight and writer calls that are not per subtask
	inflight *pending
	nextID   int64
	needAcks int

	triggers []chan int64  // one per source subtask
	stop     chan struct{} // closed when the final checkpoint completed
	acks     chan ack
	tick     chan struct{}
	finished chan struct{}

	// settled is the newest checkpoint completed or failed; settledCh is
	// closed (and replaced) whenever it moves.
	settled   atomic.Int64
	settledMu sync.Mutex
	settledCh chan struct{}

	records     atomic.Int64
	every       int64
	store       *checkpointStore
	sinks       []*sinkTxns
	completed   int
	failed      int
	last        string
	durations   []time.Duration
	incremental []IncrementalCheckpoint
	savepointAt string
}

// settle records that checkpoint id completed or failed.
func (c *coordinator) settle(id int64) {
	c.settledMu.Lock()
	defer c.settledMu.Unlock()
	if id > c.settled.Load() {
		c.settled.Store(id)
	}
	if c.settledCh != nil {
		close(c.settledCh)
		c.settledCh = nil
	}
}

// awaitSettled waits until checkpoint id completed or failed.
func (c *coordinator) awaitSettled(ctx context.Context, id int64) error {
	for {
		c.settledMu.Lock()
		if c.settled.Load() >= id {
			c.settledMu.Unlock()
			return nil
		}
		if c.settledCh == nil {
			c.settledCh = make(chan struct{})
		}
		ch := c.settledCh
		c.settledMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// countRecord is called by sources per record; every N records it asks
// for a checkpoint.
func (c *coordinator) countRecord() {
	n := c.records.Add(1)
	if c.every > 0 && n%c.every == 0 {
		select {
		case c.tick <- struct{}{}:
		default:
		}
	}
}

// run is the coordinator's loop; it returns when the final checkpoint
// completed or the job failed.
func (c *coordinator) run(ctx context.Context) error {
	var timer <-chan time.Time
	if iv := c.ex.opts.CheckpointInterval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		timer = t.C
	}
	var progress <-chan time.Time
	if c.ex.opts.Progress != nil {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		progress = t.C
	}
	finished, finalTriggered := 0, false
	for {
		if c.inflight == nil && finished == len(c.triggers) && !finalTriggered {
			finalTriggered = true
			kind, loc := snapshot.Checkpoint, c.store.location(c.nextID)
			if c.savepointAt != "" {
				kind, loc = snapshot.Savepoint, c.savepointAt
			}
			c.trigger(ctx, kind, loc, true)
		}
		select {
		case <-ctx.Done():
			// The checkpoint in flight is aborted by the execution once no
			// subtask can still be writing to it.
			return context.Cause(ctx)
		case <-c.tick:
			if c.inflight == nil && !finalTriggered {
				c.trigger(ctx, snapshot.Checkpoint, c.store.location(c.nextID), false)
			}
		case <-timer:
			if c.inflight == nil && !finalTriggered {
				c.trigger(ctx, snapshot.Checkpoint, c.store.location(c.nextID), false)
			}
		case <-progress:
			c.ex.reportProgress()
		case <-c.finished:
			finished++
		case a := <-c.acks:
			p := c.inflight
			if p == nil || a.id != p.id {
				return fmt.Errorf("acknowledgement of unknown checkpoint %d", a.id)
			}
			p.acked++
			p.err = cmp.Or(p.err, a.err)
			if p.acked < c.needAcks {
				continue
			}
			if err := c.complete(ctx, p); err != nil {
				return err
			}
			if p.final {
				close(c.stop)
				return nil
			}
		}
	}
}

// trigger starts checkpoint nextID: creates its writer and injects its
// barrier at every source subtask.
func (c *coordinator) trigger(ctx context.Context, kind snapshot.Kind, location string, final bool) {
	p := &pending{id: c.nextID, kind: kind, location: location, final: final, started: time.Now(), ops: c.ex.operators()}
	c.nextID++
	if p.sync = c.ex.incr != nil && kind == snapshot.Checkpoint && location != ""; p.sync {
		p.resume = make(chan struct{})
	} else if location != "" {
		w, err := c.ex.opts.Registry.Create(ctx, c.ex.format, location, snapshot.WriteOptions{Force: kind == snapshot.Checkpoint})
		if err != nil {
			p.openErr = fmt.Errorf("checkpoint %d: %w", p.id, err)
		}
		p.writer = w
	}
	c.mu.Lock()
	c.inflight = p
	c.mu.Unlock()
	for _, t := range c.triggers {
		t <- p.id
	}
}

// snapshotSubtask lets one subtask write its share of checkpoint id and
// acknowledges it. A write error fails the checkpoint, not the task. For
// an incremental checkpoint it returns the channel to wait on, after
// forwarding the barrier, before touching state again.
func (c *coordinator) snapshotSubtask(ctx context.Context, id int64, v *vertex, index int, write func(snapshot.SubtaskWriter) error) (<-chan struct{}, error) {
	c.mu.Lock()
	p := c.inflight
	if p == nil || p.id != id {
		c.mu.Unlock()
		return nil, fmt.Errorf("barrier of unknown checkpoint %d", id)
	}
	var sw snapshot.SubtaskWriter = nopSubtaskWriter{}
	var err error
	op := p.ops[v.index]
	kgs := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, index)
	switch {
	case p.sync:
		sw, err = c.ex.incr.subtaskWriter(op, index, kgs)
	case p.writer != nil && p.openErr == nil:
		sw, err = p.writer.Subtask(ctx, op, index, kgs)
	}
	resume := p.resume
	c.mu.Unlock()
	if err == nil {
		err = write(sw)
		err = cmp.Or(err, sw.Close())
	}
	if err != nil {
		err = fmt.Errorf("checkpoint %d, operator %q subtask %d: %w", id, v.uid, index, err)
	}
	select {
	case c.acks <- ack{id: id, err: err}:
		return resume, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// await blocks until an incremental checkpoint released the subtasks.
func await(ctx context.Context, resume <-chan struct{}) error {
	if resume == nil {
		return nil
	}
	select {
	case <-resume:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// complete commits an acknowledged checkpoint (metadata last), retains the
// newest ones, and commits the sinks' output staged up to it. A failed
// checkpoint is aborted and leaves nothing that looks complete.
func (c *coordinator) complete(ctx context.Context, p *pending) error {
	defer c.settle(p.id)
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	if p.resume != nil {
		defer close(p.resume)
	}
	err := cmp.Or(p.openErr, p.err)
	var inc *IncrementalCheckpoint
	if err == nil && p.sync {
		inc, err = c.ex.incr.checkpoint(context.WithoutCancel(ctx), c.ex.opts.CheckpointDir, c.ex.jobID, p.id)
	}
	if err == nil && p.writer != nil {
		s := &snapshot.Snapshot{
			JobID: c.ex.jobID, CheckpointID: p.id, Kind: p.kind, Created: c.ex.clock.Now().UTC(),
			Operators: p.ops, Properties: map[string]string{"job": c.ex.job.Name, "written-by": "stateutil runtime"},
		}
		// Commit must not be interrupted halfway by the job's cancellation.
		err = p.writer.Commit(context.WithoutCancel(ctx), s)
	}
	if err != nil {
		if p.writer != nil {
			_ = p.writer.Abort(context.WithoutCancel(ctx))
		}
		c.failed++
		if p.final {
			return fmt.Errorf("final checkpoint: %w", err)
		}
		c.ex.logf("checkpoint %d failed: %v", p.id, err)
		return nil
	}
	if p.location != "" {
		c.completed++
		c.last = p.location
		c.durations = append(c.durations, time.Since(p.started))
		if inc != nil {
			c.incremental = append(c.incremental, *inc)
		}
		if p.kind == snapshot.Checkpoint && !p.sync {
			if err := c.store.completed(ctx, p.location); err != nil {
				c.ex.logf("discarding old checkpoints: %v", err)
			}
		}
	}
	if p.kind == snapshot.Savepoint && !p.final {
		return nil // savepoints commit no side effects; the next checkpoint does
	}
	for _, s := range c.sinks {
		if err := s.commit(c.ex.committer, p.id); err != nil {
			return fmt.Errorf("committing output of checkpoint %d: %w", p.id, err)
		}
	}
	return nil
}

// abort discards the checkpoint in flight when the job failed; call it
// only after every subtask stopped.
func (c *coordinator) abort(ctx context.Context) {
	c.mu.Lock()
	p := c.inflight
	c.inflight = nil
	c.mu.Unlock()
	if p == nil {
		return
	}
	if p.writer != nil {
		_ = p.writer.Abort(context.WithoutCancel(ctx))
	}
	if p.resume != nil {
		close(p.resume)
	}
}
