package memory

import (
	"bytes"
	"context"
	"fmt"

	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Create starts a memory dump at location. The dump is held in memory
// (that is the format) and written in one atomic step on Commit.
func Create(ctx context.Context, st storage.Storage, path string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	location := st.URI(path)
	if _, err := st.Stat(ctx, path); err == nil && !opts.Force {
		return nil, fmt.Errorf("%w: %q already exists (use --force to replace it)", storage.ErrExist, location)
	}
	capBytes := opts.StateSizeCap
	if capBytes <= 0 {
		capBytes = DefaultStateSizeCap
	}
	return &writer{st: st, path: path, location: location, cap: capBytes}, nil
}

// writer is safe for concurrent use; each subtaskWriter is used by one
// goroutine at a time.
type writer struct {
	st       storage.Storage
	path     string
	location string
	cap      int64
	ledger   ledger.Ledger[subtaskState]
}

func (w *writer) Subtask(_ context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	if _, err := w.ledger.Start(op, index, kgs); err != nil {
		return nil, fmt.Errorf("memory writer: %w", err)
	}
	states := make(map[string]int, len(op.KeyedStates))
	for i, s := range op.KeyedStates {
		states[s.Name] = i
	}
	sw := &subtaskWriter{w: w, op: op, index: index, cap: w.cap, states: states, meta: snapshot.Subtask{Index: index, KeyGroups: kgs}}
	sw.meta.Keyed.Known, sw.meta.Operator.Known = true, true
	return sw, nil
}

func (w *writer) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	states, err := w.ledger.Commit(s)
	if err != nil {
		return fmt.Errorf("memory writer: %w", err)
	}
	s.Format = Name
	data, err := encodeIndexed(s, states)
	if err != nil {
		return err
	}
	return storage.WriteFile(ctx, w.st, w.path, data)
}

func (w *writer) Abort(context.Context) error {
	w.ledger.Abort()
	return nil
}

type subtaskWriter struct {
	w      *writer
	op     *snapshot.Operator
	index  int
	cap    int64
	size   int64
	states map[string]int
	state  subtaskState
	meta   snapshot.Subtask
	closed bool
}

func (w *subtaskWriter) grow(n int64) error {
	w.size += n
	if w.size > w.cap {
		return fmt.Errorf("%w: operator %q subtask %d holds more than %d bytes of state (the memory format's cap is %d bytes; raise it with --max-state-size or use the filesystem or rocksdb format)",
			snapshot.ErrTooLarge, w.op.Label(), w.index, w.size, w.cap)
	}
	return nil
}

func (w *subtaskWriter) Entry(e *snapshot.Entry) error {
	si, ok := w.states[e.State]
	if !ok {
		return fmt.Errorf("operator %q has no keyed state %q", w.op.Label(), e.State)
	}
	if !w.meta.KeyGroups.Contains(e.KeyGroup) {
		return fmt.Errorf("operator %q subtask %d: key group %d is outside its range %v", w.op.Label(), w.index, e.KeyGroup, w.meta.KeyGroups)
	}
	stats := w.meta.KeyGroupStats
	if n := len(stats); n > 0 && stats[n-1].KeyGroup > e.KeyGroup {
		return fmt.Errorf("operator %q subtask %d: key group %d after %d (entries must come in key-group order)", w.op.Label(), w.index, e.KeyGroup, stats[n-1].KeyGroup)
	}
	if err := w.grow(e.Size()); err != nil {
		return err
	}
	c := e.Clone()
	w.state.Entries = append(w.state.Entries, entry{KeyGroup: c.KeyGroup, State: si, Key: c.Key, Namespace: c.Namespace, UserKey: c.UserKey, Value: c.Value, ExpiresAt: c.ExpiresAt})
	if n := len(stats); n == 0 || stats[n-1].KeyGroup != e.KeyGroup {
		w.meta.KeyGroupStats = append(stats, snapshot.KeyGroupStat{KeyGroup: e.KeyGroup})
	}
	last := &w.meta.KeyGroupStats[len(w.meta.KeyGroupStats)-1]
	last.Entries++
	last.Bytes += e.Size()
	w.meta.Keyed.Entries++
	w.meta.Keyed.Bytes += e.Size()
	return nil
}

func (w *subtaskWriter) Element(state string, value []byte) error {
	if _, ok := w.op.OperatorStateByName(state); !ok {
		return fmt.Errorf("operator %q has no operator state %q", w.op.Label(), state)
	}
	if err := w.grow(int64(len(value))); err != nil {
		return err
	}
	i := len(w.state.Lists) - 1
	for i >= 0 && w.state.Lists[i].State != state {
		i--
	}
	if i < 0 {
		w.state.Lists = append(w.state.Lists, elementList{State: state})
		i = len(w.state.Lists) - 1
	}
	w.state.Lists[i].Values = append(w.state.Lists[i].Values, bytes.Clone(value))
	if w.meta.OperatorElements == nil {
		w.meta.OperatorElements = snapshot.ElementCounts{}
	}
	w.meta.OperatorElements[state]++
	w.meta.Operator.Entries++
	w.meta.Operator.Bytes += int64(len(value))
	return nil
}

func (w *subtaskWriter) Raw(raw snapshot.RawState) error {
	if err := w.grow(int64(len(raw.Keyed) + len(raw.Operator))); err != nil {
		return err
	}
	w.state.RawKeyed, w.state.RawOperator = raw.Keyed, raw.Operator
	w.meta.RawKeyedBytes, w.meta.RawOperatorBytes = int64(len(raw.Keyed)), int64(len(raw.Operator))
	return nil
}

func (w *subtaskWriter) Close() error {
	if w.closed {
		return fmt.Errorf("operator %q subtask %d closed twice", w.op.Label(), w.index)
	}
	w.closed = true
	meta := w.meta
	w.w.ledger.Finish(w.op, w.index, &meta, w.state)
	return nil
}
