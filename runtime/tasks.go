package runtime

import (
	"context"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/snapshot"
)

// failer counts a subtask's records and fails at the injected one (see
// Failure).
type failer struct {
	at, seen int64 // at = 0: never
	// after is Failure.AfterCheckpoint; passed is set once the subtask
	// forwarded that checkpoint's barrier.
	after  int64
	passed bool
	coord  *coordinator
}

func newFailer(f *Failure, v *vertex, index int, coord *coordinator) failer {
	if f == nil || f.Operator != v.uid || f.Subtask != index {
		return failer{}
	}
	return failer{at: f.AtRecord, after: f.AfterCheckpoint, coord: coord}
}

// next is called before each record.
func (f *failer) next(ctx context.Context, v *vertex, index int) error {
	if f.passed {
		return f.failAfter(ctx, v, index)
	}
	if f.at == 0 {
		return nil
	}
	f.seen++
	if f.seen == f.at {
		return fmt.Errorf("%w: operator %q subtask %d at record %d", ErrInjectedFailure, v.uid, index, f.at)
	}
	return nil
}

// barrier is called once the subtask forwarded checkpoint id's barrier.
func (f *failer) barrier(id int64) {
	if f.after > 0 && id >= f.after {
		f.passed = true
	}
}

// end is called at the end of the subtask's input.
func (f *failer) end(ctx context.Context, v *vertex, index int) error {
	if f.passed {
		return f.failAfter(ctx, v, index)
	}
	return nil
}

func (f *failer) failAfter(ctx context.Context, v *vertex, index int) error {
	if err := f.coord.awaitSettled(ctx, f.after); err != nil {
		return err
	}
	return fmt.Errorf("%w: operator %q subtask %d after checkpoint %d", ErrInjectedFailure, v.uid, index, f.after)
}

// partition is one source partition a subtask reads.
type partition struct {
	offset
	reader SourceReader
	done   bool
}

type sourceTask struct {
	ex      *execution
	v       *vertex
	index   int
	parts   []*partition
	out     *output
	trigger chan int64
	fail    failer
}

func (t *sourceTask) run(ctx context.Context) error {
	defer func() {
		for _, p := range t.parts {
			if p.reader != nil {
				p.reader.Close()
			}
		}
	}()
	src := t.ex.job.Source.Source
	for _, p := range t.parts {
		r, err := src.Open(ctx, p.Partition, p.Offset)
		if err != nil {
			return fmt.Errorf("source %q subtask %d: partition %d: %w", t.v.uid, t.index, p.Partition, err)
		}
		p.reader = r
	}
	emit := t.out.Collect
	var emitErr error
	flat := t.ex.job.Source.FlatMap
	collect := func(r Record) {
		if emitErr == nil {
			emitErr = emit(r)
		}
	}
	next, live, notified := 0, len(t.parts), false
	for {
		select {
		case id := <-t.trigger:
			if err := t.barrier(ctx, id); err != nil {
				return err
			}
			continue
		default:
		}
		if live == 0 {
			if !notified {
				notified = true
				t.ex.coord.finished <- struct{}{}
			}
			select {
			case id := <-t.trigger:
				if err := t.barrier(ctx, id); err != nil {
					return err
				}
				continue
			case <-t.ex.coord.stop:
				return t.out.broadcast(message{end: true})
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		for t.parts[next%len(t.parts)].done {
			next++
		}
		p := t.parts[next%len(t.parts)]
		next++
		rec, off, ok, err := p.reader.Next()
		if err != nil {
			return fmt.Errorf("source %q subtask %d: %w", t.v.uid, t.index, err)
		}
		if !ok {
			p.done = true
			live--
			continue
		}
		if err := t.fail.next(ctx, t.v, t.index); err != nil {
			return err
		}
		p.Offset = off
		if flat != nil {
			flat(rec, collect)
		} else {
			collect(rec)
		}
		if emitErr != nil {
			return emitErr
		}
		t.ex.coord.countRecord()
	}
}

// barrier snapshots the partitions' offsets and forwards the barrier.
func (t *sourceTask) barrier(ctx context.Context, id int64) error {
	offsets := make([]any, len(t.parts))
	for i, p := range t.parts {
		offsets[i] = &p.offset
	}
	resume, err := t.ex.coord.snapshotSubtask(ctx, id, t.v, t.index, func(sw snapshot.SubtaskWriter) error {
		return writeElements(sw, OffsetsState, offsets)
	})
	if err != nil {
		return err
	}
	if err := t.out.broadcast(message{barrier: id}); err != nil {
		return err
	}
	if err := await(ctx, resume); err != nil {
		return err
	}
	t.fail.barrier(id)
	return nil
}

type stageTask struct {
	ex      *execution
	v       *vertex
	index   int
	gate    *inputGate
	out     *output
	fn      KeyedFunction
	ctx     *Context
	backend KeyedBackend
	fail    failer
}

func (t *stageTask) run(ctx context.Context) error {
	for {
		ev, err := t.gate.nextEvent()
		if err != nil {
			return err
		}
		switch {
		case ev.end:
			if err := t.fail.end(ctx, t.v, t.index); err != nil {
				return err
			}
			if err := t.ex.collectDigest(ctx, t.v, t.backend); err != nil {
				return err
			}
			return t.out.broadcast(message{end: true})
		case ev.barrier != 0:
			now := t.ex.clock.Now().UnixMilli()
			resume, err := t.ex.coord.snapshotSubtask(ctx, ev.barrier, t.v, t.index, func(sw snapshot.SubtaskWriter) error {
				return t.backend.Snapshot(ctx, sw, now)
			})
			if err != nil {
				return err
			}
			if err := t.out.broadcast(message{barrier: ev.barrier}); err != nil {
				return err
			}
			if err := await(ctx, resume); err != nil {
				return err
			}
			t.fail.barrier(ev.barrier)
		default:
			for _, r := range ev.records {
				if err := t.fail.next(ctx, t.v, t.index); err != nil {
					return err
				}
				t.ctx.setKey(r.Key, r.kg)
				err := t.fn.Process(t.ctx, r, t.out)
				t.ctx.clearKey()
				if err != nil {
					return fmt.Errorf("operator %q subtask %d, key %q: %w", t.v.uid, t.index, r.Key, err)
				}
			}
		}
	}
}

type sinkTask struct {
	ex    *execution
	v     *vertex
	index int
	gate  *inputGate
	txns  *sinkTxns
	lines []string
	fail  failer
}

func (t *sinkTask) run(ctx context.Context) error {
	format := t.ex.job.Sink.Format
	for {
		ev, err := t.gate.nextEvent()
		if err != nil {
			return err
		}
		switch {
		case ev.end:
			return t.fail.end(ctx, t.v, t.index)
		case ev.barrier != 0:
			id := ev.barrier
			staged := t.txns.stage(txn{ID: fmt.Sprintf("%s/%s/%d/chk-%d", t.ex.jobID, t.v.uid, t.index, id), Checkpoint: id, Lines: t.lines})
			t.lines = nil
			pending := make([]any, len(staged))
			for i := range staged {
				pending[i] = &staged[i]
			}
			resume, err := t.ex.coord.snapshotSubtask(ctx, id, t.v, t.index, func(sw snapshot.SubtaskWriter) error {
				return writeElements(sw, PendingCommitsState, pending)
			})
			if err != nil {
				return err
			}
			if err := await(ctx, resume); err != nil {
				return err
			}
			t.fail.barrier(id)
		default:
			for _, r := range ev.records {
				if err := t.fail.next(ctx, t.v, t.index); err != nil {
					return err
				}
				t.lines = append(t.lines, format(r))
			}
		}
	}
}

// writeElements stores values, msgpack-encoded, as the elements of an
// operator list state.
func writeElements(sw snapshot.SubtaskWriter, state string, values []any) error {
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			return err
		}
		if err := sw.Element(state, b); err != nil {
			return err
		}
	}
	return nil
}
