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

	sub  int // the subtask being read, an index of op.Subtasks
	next func() (snapshot.Element, error, bool)
	stop func()
}

func (s *operatorSource) ColumnInfos() []duckdb.ColumnInfo     { return s.infos }
func (s *operatorSource) Cardinality() *duckdb.CardinalityInfo { return nil }
func (s *operatorSource) Init()                                { s.q = s.e.running() }

func (s *operatorSource) FillRow(row duckdb.Row) (bool, error) {
	for {
		if s.next == nil {
			if s.sub >= len(s.op.Subtasks) {
				return false, nil
			}
			sub := s.op.Subtasks[s.sub]
			next, stop := pull2(iter.Seq2[snapshot.Element, error](s.r.Elements(s.q.ctx, s.op, sub.Index)))
			s.next, s.stop = next, stop
			s.q.onEnd(stop)
		}
		el, err, ok := s.next()
		if !ok {
			s.stop()
			s.next = nil
			s.sub++
			continue
		}
		if err != nil {
			return false, s.q.fail(fmt.Errorf("operator %q subtask %d: %w", s.op.Label(), s.op.Subtasks[s.sub].Index, err))
		}
		if el.State != s.st.Name {
			continue
		}
		if err := duckdb.SetRowValue(row, 0, int32(el.Subtask)); err != nil {
			return false, err
		}
		if err := duckdb.SetRowValue(row, 1, string(s.st.Mode)); err != nil {
			return false, err
		}
		if err := s.value.set(row, 2, el.Value); err != nil {
			return false, s.q.fail(fmt.Errorf("operator %q state %q subtask %d: %w", s.op.Label(), s.st.Name, el.Subtask, err))
		}
		return true, nil
	}
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
