package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// openRestore opens the snapshot to restore: location itself, or, when it
// is a job directory of the runtime's checkpoints, its latest one (of
// chk-N.dump files too, which no format reads as a directory); it returns
// where it read.
func openRestore(ctx context.Context, reg *snapshot.Registry, location string) (snapshot.Reader, string, error) {
	latest, lerr := LatestCheckpoint(ctx, reg.Storage, location)
	if lerr == nil {
		location = latest
	}
	r, err := reg.Open(ctx, location, snapshot.OpenOptions{})
	return r, location, err
}

// newExecution validates the job and options, restores state and builds
// every subtask; nothing runs yet.
func newExecution(ctx context.Context, job *Job, opts Options) (_ *execution, err error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	f, err := opts.Registry.Writable(opts.Format)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJob, err)
	}
	ex := &execution{job: job, opts: opts, format: f, clock: opts.Clock, committer: opts.Committer, jobID: opts.JobID, started: time.Now()}
	if ex.committer == nil {
		ex.committer = NewDigestCommitter()
	}
	if ex.jobID == "" {
		ex.jobID = newJobID()
	}
	ex.backend = opts.Backend
	if rb, ok := opts.Backend.(RocksDBStateBackend); ok {
		sess, err := rb.session(opts.Retain, opts.Registry.Storage)
		if err != nil {
			return nil, err
		}
		ex.backend, ex.incr = sess, sess
		defer func() {
			if err != nil {
				sess.close()
			}
		}()
	}
	var r snapshot.Reader
	var snap *snapshot.Snapshot
	if opts.Restore != "" {
		if r, ex.restored, err = openRestore(ctx, opts.Registry, opts.Restore); err != nil {
			return nil, fmt.Errorf("restore from %q: %w", opts.Restore, err)
		}
		defer r.Close()
		snap = r.Snapshot()
	}
	ex.maxP = pickMaxParallelism(&opts, job, snap)
	if ex.vertices, err = job.plan(opts.Parallelism, ex.maxP); err != nil {
		return nil, err
	}
	restored, err := ex.matchSnapshot(snap)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, t := range ex.stages {
				t.backend.Close()
			}
		}
	}()
	if err := ex.build(ctx, r, restored); err != nil {
		return nil, err
	}
	ex.coord.nextID = 1
	if snap != nil {
		ex.coord.nextID = snap.CheckpointID + 1
	}
	return ex, nil
}

// matchSnapshot pairs each vertex with its operator in the snapshot and
// checks Flink's restore rules.
func (ex *execution) matchSnapshot(snap *snapshot.Snapshot) ([]*snapshot.Operator, error) {
	out := make([]*snapshot.Operator, len(ex.vertices))
	if snap == nil {
		return out, nil
	}
	used := map[*snapshot.Operator]bool{}
	for i, v := range ex.vertices {
		op, ok := snap.OperatorOfUID(v.uid)
		if !ok {
			continue
		}
		if v.parallelism > ex.maxP {
			return nil, fmt.Errorf("%w: operator %q: parallelism %d exceeds the max parallelism %d", ErrIncompatibleSnapshot, v.uid, v.parallelism, ex.maxP)
		}
		out[i], used[op] = op, true
	}
	for _, op := range snap.Operators {
		if !used[op] && !ex.opts.AllowNonRestoredState && (len(op.KeyedStates) > 0 || len(op.OperatorStates) > 0) {
			return nil, fmt.Errorf("%w: the snapshot has state for operator %q, which job %q does not have (allow non-restored state to skip it)",
				ErrIncompatibleSnapshot, op.Label(), ex.job.Name)
		}
	}
	return out, nil
}

// build creates channels, subtasks and the coordinator, restoring each
// subtask's state from r.
func (ex *execution) build(ctx context.Context, r snapshot.Reader, restored []*snapshot.Operator) error {
	vs := ex.vertices
	src, sink := vs[0], vs[len(vs)-1]
	ex.coord = &coordinator{
		ex: ex, stop: make(chan struct{}), tick: make(chan struct{}, 1),
		finished: make(chan struct{}, src.parallelism), every: ex.opts.CheckpointEvery, savepointAt: ex.opts.Savepoint,
		store: &checkpointStore{reg: ex.opts.Registry, format: ex.format, retain: ex.opts.Retain},
	}
	if ex.opts.CheckpointDir != "" {
		ex.coord.store.jobDir = JobDir(ex.opts.CheckpointDir, ex.jobID)
		st, p, err := ex.opts.Registry.Storage.Resolve(ctx, ex.coord.store.jobDir)
		if err != nil {
			return err
		}
		if err := st.MkdirAll(ctx, p); err != nil {
			return fmt.Errorf("checkpoint directory: %w", err)
		}
		// Retention counts the job's earlier checkpoints too (a job
		// continued after a failure keeps its directory).
		if ex.incr == nil {
			if ex.coord.store.kept, err = listCheckpoints(ctx, ex.opts.Registry.Storage, ex.coord.store.jobDir); err != nil {
				return err
			}
		}
	}
	// edges[k][from][to] joins vertex k to vertex k+1.
	edges := make([][][]chan message, len(vs)-1)
	for k := range edges {
		from, to := vs[k], vs[k+1]
		edges[k] = make([][]chan message, from.parallelism)
		for i := range edges[k] {
			edges[k][i] = make([]chan message, to.parallelism)
			for j := range to.parallelism {
				if to.kind != sinkOp || from.parallelism != to.parallelism || i == j {
					edges[k][i][j] = make(chan message, ex.opts.ChannelCapacity)
				}
			}
		}
	}
	outputOf := func(k, i int) *output {
		to := vs[k+1]
		chans := edges[k][i]
		var route partitioner
		switch {
		case to.kind == stageOp:
			route = keyBy(to.stage.KeyBy, ex.maxP, to.parallelism)
		case vs[k].parallelism == to.parallelism:
			chans, route = []chan message{chans[i]}, forward
		default:
			route = rebalance(to.parallelism, i)
		}
		return newOutput(ctx, chans, route, ex.opts.BatchSize)
	}
	gateOf := func(k, j int) *inputGate {
		var chans []chan message
		for i := range edges[k-1] {
			if c := edges[k-1][i][j]; c != nil {
				chans = append(chans, c)
			}
		}
		return newInputGate(ctx, chans)
	}
	ex.coord.needAcks = 0
	for _, v := range vs {
		ex.coord.needAcks += v.parallelism
	}
	ex.coord.acks = make(chan ack, ex.coord.needAcks)
	if err := ex.buildSources(ctx, r, restored[0], outputOf); err != nil {
		return err
	}
	for k := 1; k < len(vs)-1; k++ {
		if err := ex.buildStage(ctx, r, restored[k], vs[k], gateOf, outputOf); err != nil {
			return err
		}
	}
	if err := ex.restoreSink(ctx, r, restored[len(vs)-1]); err != nil {
		return err
	}
	for j := range sink.parallelism {
		txns := &sinkTxns{}
		ex.coord.sinks = append(ex.coord.sinks, txns)
		ex.sinks = append(ex.sinks, &sinkTask{ex: ex, v: sink, index: j, gate: gateOf(len(vs)-1, j), txns: txns, fail: newFailer(ex.opts.Failure, sink, j, ex.coord)})
	}
	return ex.buildMetadata()
}

func (ex *execution) buildSources(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, outputOf func(k, i int) *output) error {
	v := ex.vertices[0]
	mode := orDefault(ex.job.Source.Mode, snapshot.Split)
	var restored [][]offset
	if op != nil {
		plan, err := planRestore(ctx, r, op, v.parallelism, ex.maxP)
		if err != nil {
			return err
		}
		defer plan.Close()
		for i := range v.parallelism {
			offs, err := decodeOffsets(plan.Elements(ctx, i))
			if err != nil {
				return fmt.Errorf("restore source %q: %w", v.uid, err)
			}
			restored = append(restored, offs)
		}
	}
	assigned, err := sourceAssignments(ex.job.Source.Source, mode, v.parallelism, restored)
	if err != nil {
		return err
	}
	for i, offs := range assigned {
		t := &sourceTask{ex: ex, v: v, index: i, out: outputOf(0, i), trigger: make(chan int64, 1), fail: newFailer(ex.opts.Failure, v, i, ex.coord)}
		for _, o := range offs {
			t.parts = append(t.parts, &partition{offset: o})
		}
		ex.coord.triggers = append(ex.coord.triggers, t.trigger)
		ex.sources = append(ex.sources, t)
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (ex *execution) buildStage(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, v *vertex, gateOf func(k, j int) *inputGate, outputOf func(k, i int) *output) error {
	var plan *redistribute.Assignment
	if op != nil {
		var err error
		if plan, err = planRestore(ctx, r, op, v.parallelism, ex.maxP); err != nil {
			return err
		}
		defer plan.Close()
	}
	for i := range v.parallelism {
		kgs := keygroup.RangeOf(ex.maxP, v.parallelism, i)
		info := SubtaskInfo{Operator: &snapshot.Operator{ID: v.id, UID: v.uid, Name: v.name, Parallelism: v.parallelism, MaxParallelism: ex.maxP}, Subtask: i, KeyGroups: kgs}
		be, err := ex.backend.NewKeyedBackend(info)
		if err != nil {
			return fmt.Errorf("operator %q subtask %d: state backend: %w", v.uid, i, err)
		}
		t := &stageTask{ex: ex, v: v, index: i, backend: be, fail: newFailer(ex.opts.Failure, v, i, ex.coord)}
		ex.stages = append(ex.stages, t)
		if op != nil {
			for _, ks := range op.KeyedStates {
				if err := be.RestoreDescriptor(ks); err != nil {
					return fmt.Errorf("restore operator %q subtask %d: %w", v.uid, i, err)
				}
			}
		}
		t.ctx = &Context{Operator: v.uid, Subtask: i, Parallelism: v.parallelism, MaxParallelism: ex.maxP, clock: ex.clock, backend: be}
		t.fn = v.stage.New()
		if err := t.fn.Open(t.ctx); err != nil {
			return fmt.Errorf("operator %q subtask %d: open: %w", v.uid, i, err)
		}
		t.ctx.sealed = true
		if err := be.Start(); err != nil {
			return fmt.Errorf("operator %q subtask %d: state backend: %w", v.uid, i, err)
		}
		if op != nil {
			if err := restoreKeyed(be, plan.Entries(ctx, i)); err != nil {
				return fmt.Errorf("restore operator %q subtask %d: %w", v.uid, i, err)
			}
		}
		t.gate, t.out = gateOf(v.index, i), outputOf(v.index, i)
	}
	return nil
}

func restoreKeyed(be KeyedBackend, entries snapshot.Entries) error {
	for e, err := range entries {
		if err != nil {
			return err
		}
		if err := be.Restore(&e); err != nil {
			return err
		}
	}
	return nil
}

// restoreSink commits, idempotently, the output the snapshot's sinks had
// staged but maybe not committed before the snapshot's job stopped.
func (ex *execution) restoreSink(ctx context.Context, r snapshot.Reader, op *snapshot.Operator) error {
	if op == nil {
		return nil
	}
	for e, err := range allElements(ctx, r, op) {
		if err != nil {
			return fmt.Errorf("restore sink %q: %w", op.Label(), err)
		}
		if e.State != PendingCommitsState {
			continue
		}
		var t txn
		if err := safemsgpack.Unmarshal(e.Value, &t); err != nil {
			return fmt.Errorf("restore sink %q: %w: undecodable pending commit: %v", op.Label(), snapshot.ErrCorrupt, err)
		}
		if err := ex.committer.Commit(t.ID, t.Lines); err != nil {
			return fmt.Errorf("restore sink %q: commit %q: %w", op.Label(), t.ID, err)
		}
	}
	return nil
}

// buildMetadata fixes each operator's snapshot metadata. Keyed states must
// be registered in Open, identically by every subtask.
func (ex *execution) buildMetadata() error {
	msgpackType := snapshot.Type{Name: snapshot.TypeMsgpack}
	for _, v := range ex.vertices {
		op := &snapshot.Operator{ID: v.id, UID: v.uid, Name: v.name, Parallelism: v.parallelism, MaxParallelism: ex.maxP}
		switch v.kind {
		case sourceOp:
			op.OperatorStates = []snapshot.OperatorState{{Name: OffsetsState, Mode: orDefault(ex.job.Source.Mode, snapshot.Split), ElementType: msgpackType}}
		case sinkOp:
			op.OperatorStates = []snapshot.OperatorState{{Name: PendingCommitsState, Mode: snapshot.Split, ElementType: msgpackType}}
		case stageOp:
			var first []snapshot.KeyedState
			for _, t := range ex.stages {
				if t.v != v {
					continue
				}
				var ks []snapshot.KeyedState
				for _, d := range t.backend.Descriptors() {
					ks = append(ks, d.KeyedState())
				}
				if first == nil {
					first = ks
				} else if !slices.EqualFunc(first, ks, func(a, b snapshot.KeyedState) bool { return a.Name == b.Name && a.Kind == b.Kind }) {
					return fmt.Errorf("%w: subtasks of operator %q registered different keyed states; register them in Open", ErrStateDescriptor, v.uid)
				}
			}
			op.KeyedStates = first
		}
		ex.opMeta = append(ex.opMeta, op)
	}
	return nil
}
