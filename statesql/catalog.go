package statesql

import (
	"context"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
)

// catalogTables are the tables describing a snapshot, in its main schema.
var catalogTables = []string{"operators", "states", "key_groups"}

// catalogColumn is a column of a catalog table. costly columns are
// computed (by scanning state where the metadata lacks figures) only when
// a query reads them.
type catalogColumn struct {
	name   string
	t      duckdb.TypeInfo
	costly bool
}

var catalogColumns = map[string][]catalogColumn{
	// The columns of Flink's savepoint_metadata table function, and
	// inspect's figures.
	"operators": {
		{"operator", typeVarchar, false}, {"checkpoint_id", typeBigint, false}, {"operator_name", typeVarchar, false},
		{"operator_uid", typeVarchar, false}, {"operator_uid_hash", typeVarchar, false},
		{"operator_parallelism", typeInteger, false}, {"operator_max_parallelism", typeInteger, false},
		{"operator_coordinator_state_size_in_bytes", typeBigint, false}, {"operator_total_size_in_bytes", typeBigint, true},
		{"keyed_entries", typeBigint, true}, {"keyed_bytes", typeBigint, true},
		{"operator_elements", typeBigint, false}, {"operator_bytes", typeBigint, false}, {"unreadable", typeBoolean, false},
	},
	"states": {
		{"operator", typeVarchar, false}, {"state", typeVarchar, false}, {"kind", typeVarchar, false}, {"mode", typeVarchar, false},
		{"key_type", typeVarchar, false}, {"namespace_type", typeVarchar, false}, {"user_key_type", typeVarchar, false},
		{"value_type", typeVarchar, false}, {"ttl", typeVarchar, false}, {"ttl_ms", typeBigint, false},
		{"table_name", typeVarchar, false}, {"entries", typeBigint, true}, {"bytes", typeBigint, true},
	},
	"key_groups": {
		{"operator", typeVarchar, false}, {"key_group", typeInteger, false}, {"subtask", typeInteger, false},
		{"entries", typeBigint, false}, {"bytes", typeBigint, false},
	},
}

// catalogSource is one catalog table, its rows made when the scan starts.
type catalogSource struct {
	e     *Engine
	q     *query
	snap  int
	table string
	rows  [][]any
	made  bool
}

func (s *catalogSource) ColumnInfos() []duckdb.ColumnInfo {
	var out []duckdb.ColumnInfo
	for _, c := range catalogColumns[s.table] {
		out = append(out, duckdb.ColumnInfo{Name: c.name, T: c.t})
	}
	return out
}

func (s *catalogSource) Cardinality() *duckdb.CardinalityInfo { return nil }
func (s *catalogSource) Init()                                { s.q = s.e.running() }

func (s *catalogSource) FillRow(row duckdb.Row) (bool, error) {
	if !s.made {
		costly := false
		for i, c := range catalogColumns[s.table] {
			costly = costly || (c.costly && row.IsProjected(i))
		}
		rows, err := s.e.catalogRows(s.q.ctx, s.snap, s.table, costly)
		if err != nil {
			return false, s.q.fail(err)
		}
		s.rows, s.made = rows, true
	}
	if len(s.rows) == 0 {
		return false, nil
	}
	for i, v := range s.rows[0] {
		if err := row.SetRowValue(i, v); err != nil {
			return false, err
		}
	}
	s.rows = s.rows[1:]
	return true, nil
}

// bindCatalog binds stateutil_catalog(snapshot, table).
func (e *Engine) bindCatalog(_ context.Context, _ map[string]any, args ...any) (duckdb.RowTableSource, error) {
	i, _ := args[0].(int32)
	table, _ := args[1].(string)
	if i < 0 || int(i) >= len(e.snaps) {
		return nil, fmt.Errorf("no snapshot %d (there are %d)", i, len(e.snaps))
	}
	if catalogColumns[table] == nil {
		return nil, fmt.Errorf("no catalog table %q (tables: operators, states, key_groups)", table)
	}
	return &catalogSource{e: e, snap: int(i), table: table}, nil
}

// catalogRows makes the rows of a catalog table of snapshot snap; costly
// says whether to compute its costly columns (else NULL).
func (e *Engine) catalogRows(ctx context.Context, snap int, table string, costly bool) ([][]any, error) {
	src := e.snaps[snap]
	switch table {
	case "operators":
		return e.operatorRows(ctx, src, costly)
	case "states":
		return e.stateRows(ctx, snap, src, costly)
	}
	return keyGroupRows(ctx, src)
}

// schemaOf is the schema name of op in src.
func (src *source) schemaOf(op *snapshot.Operator) string {
	for name, o := range src.ops {
		if o == op {
			return name
		}
	}
	return op.Label()
}

func (e *Engine) operatorRows(ctx context.Context, src *source, costly bool) ([][]any, error) {
	s := src.Reader.Snapshot()
	var sum *report.Summary
	if costly {
		var err error
		if sum, err = report.Summarize(ctx, src.Location, src.Reader, false); err != nil {
			return nil, err
		}
	}
	var rows [][]any
	for i, op := range s.Operators {
		var elements, bytes, raw int64
		unreadable := false
		for _, sub := range op.Subtasks {
			elements += sub.Operator.Entries
			bytes += sub.Operator.Bytes
			raw += sub.RawKeyedBytes + sub.RawOperatorBytes
			unreadable = unreadable || len(sub.Unreadable) > 0
		}
		var total, keyedEntries, keyedBytes any
		if sum != nil {
			o := sum.Operators[i]
			total, keyedEntries, keyedBytes = o.KeyedBytes+o.OperatorBytes+raw, o.KeyedEntries, o.KeyedBytes
		}
		// NULL where the reader cannot tell; the size counts in the total.
		var coordinator any
		if cs, ok := src.Reader.(snapshot.CoordinatorSizer); ok {
			if n, ok := cs.CoordinatorStateBytes(op); ok {
				coordinator = n
				if t, ok := total.(int64); ok {
					total = t + n
				}
			}
		}
		rows = append(rows, []any{
			src.schemaOf(op), s.CheckpointID, nullIfEmpty(op.Name), nullIfEmpty(op.UID), op.ID,
			int32(op.Parallelism), int32(op.MaxParallelism), coordinator, total, keyedEntries, keyedBytes, elements, bytes, unreadable,
		})
	}
	return rows, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func typeText(t snapshot.Type) any {
	if t.IsZero() {
		return nil
	}
	return t.String()
}

func (e *Engine) stateRows(ctx context.Context, snap int, src *source, costly bool) ([][]any, error) {
	var counts map[*snapshot.Operator]map[string]*snapshot.Stats
	if costly {
		var err error
		if counts, err = stateStats(ctx, src.Reader); err != nil {
			return nil, err
		}
	}
	var rows [][]any
	for _, op := range src.Reader.Snapshot().Operators {
		schema := src.schemaOf(op)
		stats := func(name string) (any, any) {
			if counts == nil {
				return nil, nil
			}
			st := counts[op][name]
			if st == nil {
				return int64(0), int64(0)
			}
			return st.Entries, st.Bytes
		}
		for _, k := range op.KeyedStates {
			var ttl, ttlMS any
			if k.TTL != nil {
				ttl = k.TTL.String()
				if !k.TTL.Unknown {
					ttlMS = k.TTL.TTLMillis
				}
			}
			name, _ := e.tableName(snap, op, k.Name, false)
			entries, bytes := stats(k.Name)
			rows = append(rows, []any{schema, k.Name, string(k.Kind), nil, typeText(k.KeyType), typeText(k.NamespaceType),
				typeText(k.UserKeyType), typeText(k.ValueType), ttl, ttlMS, nullIfEmpty(name), entries, bytes})
		}
		for _, o := range op.OperatorStates {
			name, _ := e.tableName(snap, op, o.Name, true)
			entries, bytes := stats("\x00" + o.Name)
			rows = append(rows, []any{schema, o.Name, "operator", string(o.Mode), nil, nil, nil, typeText(o.ElementType),
				nil, nil, nullIfEmpty(name), entries, bytes})
		}
	}
	return rows, nil
}

// stateStats counts each state's entries (a list's elements, a map's
// entries) and their bytes by reading them all; operator states' names
// are prefixed with a NUL, which no keyed state's name holds.
func stateStats(ctx context.Context, r snapshot.Reader) (map[*snapshot.Operator]map[string]*snapshot.Stats, error) {
	out := map[*snapshot.Operator]map[string]*snapshot.Stats{}
	for _, op := range r.Snapshot().Operators {
		m := map[string]*snapshot.Stats{}
		out[op] = m
		add := func(name string, bytes int64) {
			st := m[name]
			if st == nil {
				st = &snapshot.Stats{Known: true}
				m[name] = st
			}
			st.Entries++
			st.Bytes += bytes
		}
		for _, sub := range op.Subtasks {
			if len(op.KeyedStates) > 0 {
				for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
					}
					add(e.State, e.Size())
				}
			}
			if len(op.OperatorStates) > 0 {
				for el, err := range r.Elements(ctx, op, sub.Index) {
					if err != nil {
						return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
					}
					add("\x00"+el.State, int64(len(el.Value)))
				}
			}
		}
	}
	return out, nil
}

func keyGroupRows(ctx context.Context, src *source) ([][]any, error) {
	kg, err := report.KeyGroupDistribution(ctx, src.Location, src.Reader, "")
	if err != nil {
		return nil, err
	}
	byID := map[string]*snapshot.Operator{}
	for _, op := range src.Reader.Snapshot().Operators {
		byID[op.ID] = op
	}
	var rows [][]any
	for _, o := range kg.Operators {
		schema := src.schemaOf(byID[o.ID])
		for _, g := range o.KeyGroups {
			rows = append(rows, []any{schema, int32(g.KeyGroup), int32(g.Subtask), g.Entries, g.Bytes})
		}
	}
	return rows, nil
}

// registerFunctions registers the table functions the views read.
func (e *Engine) registerFunctions() error {
	integer, varchar := typeInteger, typeVarchar
	three := duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{integer, varchar, varchar}}
	if err := duckdb.RegisterTableUDF(e.conn, "stateutil_keyed", duckdb.ParallelRowTableFunction{
		Config: three, BindArgumentsContext: e.bindKeyed,
	}); err != nil {
		return err
	}
	if err := duckdb.RegisterTableUDF(e.conn, "stateutil_operator_state", duckdb.RowTableFunction{
		Config: three, BindArgumentsContext: e.bindOperatorState,
	}); err != nil {
		return err
	}
	return duckdb.RegisterTableUDF(e.conn, "stateutil_catalog", duckdb.RowTableFunction{
		Config:               duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{integer, varchar}},
		BindArgumentsContext: e.bindCatalog,
	})
}
