package statesql

import (
	"context"
	"fmt"
	"iter"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/snapshot"
)

// operatorSource scans one operator state's table: subtask, mode and
// value, an element a row, subtask by subtask, in list order.
type operatorSource struct {
	e     *Engine
	q     *query
	r     snapshot.Reader
	op    *snapshot.Operator
	st    *snapshot.OperatorState
	value *decoded
	infos []duckdb.ColumnInfo

	sub   int // the subtask being read, an index of op.Subtasks
	next  func() (*elementBatch, bool)
	stop  func()
	err   error // the subtask's read error, once next says no more
	batch *elementBatch
	at    int // the batch's next element
}

// elementBatch is the state's elements copied out of the reader and handed
// to DuckDB's thread a batch at a time, as keyed records are
// (recordBatch): the subtask's elements of other states stay on the
// reading goroutine.
type elementBatch struct {
	subtasks []int
	ends     []int // where each element's value ends in bytes
	bytes    []byte
}

func (b *elementBatch) add(el snapshot.Element) {
	b.bytes = append(b.bytes, el.Value...)
	b.subtasks = append(b.subtasks, el.Subtask)
	b.ends = append(b.ends, len(b.bytes))
}

func (b *elementBatch) full() bool { return len(b.ends) >= batchRecords || len(b.bytes) >= batchBytes }

func (b *elementBatch) value(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.bytes[start:b.ends[i]:b.ends[i]]
}

func (b *elementBatch) reset() {
	b.subtasks, b.ends, b.bytes = b.subtasks[:0], b.ends[:0], b.bytes[:0]
}

func (s *operatorSource) ColumnInfos() []duckdb.ColumnInfo     { return s.infos }
func (s *operatorSource) Cardinality() *duckdb.CardinalityInfo { return nil }
func (s *operatorSource) Init()                                { s.q = s.e.running() }

func (s *operatorSource) FillRow(row duckdb.Row) (bool, error) {
	for s.batch == nil || s.at >= len(s.batch.ends) {
		if s.next == nil {
			if s.sub >= len(s.op.Subtasks) {
				return false, nil
			}
			s.start()
		}
		b, ok := s.next()
		if !ok {
			s.stop()
			s.next, s.batch = nil, nil
			if s.err != nil {
				return false, s.q.fail(fmt.Errorf("operator %q subtask %d: %w", s.op.Label(), s.op.Subtasks[s.sub].Index, s.err))
			}
			s.sub++
			continue
		}
		s.batch, s.at = b, 0
	}
	i := s.at
	s.at++
	subtask := s.batch.subtasks[i]
	if err := duckdb.SetRowValue(row, 0, int32(subtask)); err != nil {
		return false, err
	}
	if err := duckdb.SetRowValue(row, 1, string(s.st.Mode)); err != nil {
		return false, err
	}
	if err := s.value.set(row, 2, s.batch.value(i)); err != nil {
		return false, s.q.fail(fmt.Errorf("operator %q state %q subtask %d: %w", s.op.Label(), s.st.Name, subtask, err))
	}
	return true, nil
}

// start reads the next subtask's elements on a goroutine of their own,
// which fills a batch again only once DuckDB's thread asks for the next.
func (s *operatorSource) start() {
	sub := s.op.Subtasks[s.sub]
	s.err = nil
	batches := func(yield func(*elementBatch) bool) {
		b := &elementBatch{}
		for el, err := range s.r.Elements(s.q.ctx, s.op, sub.Index) {
			if err != nil {
				s.err = err
				break
			}
			if el.State != s.st.Name {
				continue
			}
			b.add(el)
			if b.full() {
				if !yield(b) {
					return
				}
				b.reset()
			}
		}
		if len(b.ends) > 0 {
			yield(b)
		}
	}
	next, stop := pull(iter.Seq[*elementBatch](batches))
	s.next, s.stop = next, stop
	s.q.onEnd(stop)
}

// bindOperatorState binds stateutil_operator_state(snapshot, operator, state).
func (e *Engine) bindOperatorState(_ context.Context, _ map[string]any, args ...any) (duckdb.RowTableSource, error) {
	src, op, err := e.resolve(args)
	if err != nil {
		return nil, err
	}
	name := args[2].(string)
	st, ok := op.OperatorStateByName(name)
	if !ok {
		return nil, fmt.Errorf("operator %q has no operator state %q", op.Label(), name)
	}
	value, err := e.types.newDecoded(e.codecs, "value", st.ElementType)
	if err != nil {
		return nil, err
	}
	infos := append([]duckdb.ColumnInfo{{Name: "subtask", T: typeInteger}, {Name: "mode", T: typeVarchar}}, value.infos()...)
	return &operatorSource{e: e, r: src.Reader, op: op, st: st, value: value, infos: infos}, nil
}
