// Package statesql answers SQL over snapshots on an embedded DuckDB: each
// state is a table streamed from the snapshot's reader as a query scans
// it (never copied first), its keys and values in typed columns built
// from the serializers' schemas, beside catalog tables of the snapshot's
// operators, states and key groups. The engine reaches no file, network
// or extension: a query reads state and nothing else.
package statesql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/snapshot"
)

// Snapshot is one snapshot to query, opened by the caller, who closes it
// after the engine.
type Snapshot struct {
	Reader snapshot.Reader
	// Location is where it was read from, as the user named it.
	Location string
}

// Options tune the engine.
type Options struct {
	Codecs *snapshot.Codecs
	// MemoryLimit bounds DuckDB's memory in bytes (0: DefaultMemoryLimit);
	// past it, sorts and aggregates spill to a directory under TempDir.
	MemoryLimit int64
	// Threads is how many threads a query runs on (0: GOMAXPROCS).
	Threads int
	// TempLimit bounds the bytes DuckDB spills to its temporary directory
	// (0: DefaultTempLimit).
	TempLimit int64
	// TempDir is where the spill directory is made ("": os.TempDir).
	TempDir string
	// Ordered has a keyed state's table read on one thread, so that its
	// rows come in dump's order.
	Ordered bool
}

// DefaultMemoryLimit is DuckDB's memory limit unless Options says.
const DefaultMemoryLimit = 256 << 20

// DefaultTempLimit is what DuckDB may spill unless Options says.
const DefaultTempLimit = 100 << 30

// Engine runs queries over snapshots, one at a time.
type Engine struct {
	snaps   []*source
	codecs  *snapshot.Codecs
	threads int
	types   types
	db      *sql.DB
	conn    *sql.Conn
	dir     string // private: DuckDB's spill directory and parquet files
	ordered bool
	// Warnings are what Open could not name as a table (see Open).
	Warnings []string

	mu  sync.Mutex            // one query at a time
	cur atomic.Pointer[query] // the query running, for the table functions
}

// source is one snapshot as the engine sees it: its schema (DuckDB's
// catalog) name and its operators by the schema names they have.
type source struct {
	Snapshot
	catalog string
	ops     map[string]*snapshot.Operator // by schema name
	tables  []table
}

// table is one state's table.
type table struct {
	schema, name string // as created
	op           *snapshot.Operator
	state        string
	operator     bool // an operator state, not a keyed one
}

// Open starts DuckDB over the snapshots: snapshot i is the catalog
// "si" (s0, s1, ...), in which keyed state state of operator op is the
// table "op"."state" (op being the operator's uid, else its name, else its
// id) and operator state likewise; the catalog tables operators, states
// and key_groups are in its main schema. With one snapshot, s0 is the
// default catalog, so "op"."state" needs no prefix. A state whose table
// name another state of the operator took already (DuckDB's names ignore
// case) gets none: Warnings says which, and stateutil_keyed and
// stateutil_operator_state still read it.
func Open(ctx context.Context, snaps []Snapshot, opts Options) (*Engine, error) {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	limit := opts.MemoryLimit
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	dir, err := os.MkdirTemp(opts.TempDir, "stateutil-sql-")
	if err != nil {
		return nil, err
	}
	e := &Engine{codecs: opts.Codecs, threads: threads, dir: dir, ordered: opts.Ordered}
	temp := opts.TempLimit
	if temp <= 0 {
		temp = DefaultTempLimit
	}
	if err := e.open(ctx, limit, temp); err != nil {
		e.Close()
		return nil, err
	}
	for i, s := range snaps {
		e.snaps = append(e.snaps, &source{Snapshot: s, catalog: fmt.Sprintf("s%d", i)})
	}
	if err := e.register(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// settings lock DuckDB down before any query: no file, network or
// extension, and settings no query can change.
var settings = []string{
	"SET enable_external_access = false",
	"SET autoinstall_known_extensions = false",
	"SET autoload_known_extensions = false",
	"SET allow_community_extensions = false",
	"SET lock_configuration = true",
}

func (e *Engine) open(ctx context.Context, limit, temp int64) error {
	dsn := fmt.Sprintf("?threads=%d&memory_limit=%dB&max_temp_directory_size=%dB&allow_unsigned_extensions=false&autoinstall_known_extensions=false&autoload_known_extensions=false",
		e.threads, limit, temp)
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return fmt.Errorf("starting DuckDB: %w", err)
	}
	e.db = sql.OpenDB(connector)
	if e.conn, err = e.db.Conn(ctx); err != nil {
		return fmt.Errorf("starting DuckDB: %w", err)
	}
	// Past its memory limit DuckDB spills to the spill directory; the
	// only files a statement may write are Parquet's, in the out directory.
	for _, q := range []string{
		"SET temp_directory = " + literal(filepath.Join(e.dir, "spill")),
		"SET allowed_directories = [" + literal(filepath.Join(e.dir, "out")+string(filepath.Separator)) + "]",
	} {
		if _, err := e.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("starting DuckDB: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(e.dir, "out"), 0o700); err != nil {
		return err
	}
	var stmt driver.Stmt
	if err := e.conn.Raw(func(c any) error {
		stmt, err = c.(*duckdb.Conn).Prepare("SELECT NULL::JSON")
		return err
	}); err != nil {
		return fmt.Errorf("starting DuckDB: %w", err)
	}
	defer stmt.Close()
	e.types.json, err = stmt.(*duckdb.Stmt).ColumnTypeInfo(0)
	return err
}

// register makes the table functions, the catalogs and their views, then
// locks DuckDB down.
func (e *Engine) register(ctx context.Context) error {
	if err := e.registerFunctions(); err != nil {
		return err
	}
	var ddl []string
	for i, s := range e.snaps {
		ddl = append(ddl, "ATTACH ':memory:' AS "+s.catalog)
		for _, name := range catalogTables {
			ddl = append(ddl, fmt.Sprintf("CREATE VIEW %s.main.%s AS SELECT * FROM stateutil_catalog(%d, %s)", s.catalog, name, i, literal(name)))
		}
		e.Warnings = append(e.Warnings, s.name()...)
		for _, schema := range s.schemas() {
			ddl = append(ddl, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s.%s", s.catalog, ident(schema)))
		}
		for _, t := range s.tables {
			fn := "stateutil_keyed"
			if t.operator {
				fn = "stateutil_operator_state"
			}
			ddl = append(ddl, fmt.Sprintf("CREATE VIEW %s.%s.%s AS SELECT * FROM %s(%d, %s, %s)",
				s.catalog, ident(t.schema), ident(t.name), fn, i, literal(t.schema), literal(t.state)))
		}
	}
	if len(e.snaps) == 1 {
		ddl = append(ddl, "USE s0")
	}
	for _, q := range append(ddl, settings...) {
		if _, err := e.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("setting up DuckDB (%s): %w", q, err)
		}
	}
	return nil
}

// name gives s's operators schema names and their states table names,
// and returns what it could not name.
func (s *source) name() []string {
	var warnings []string
	s.ops = map[string]*snapshot.Operator{}
	labels := map[string]int{}
	for _, op := range s.Snapshot.Reader.Snapshot().Operators {
		labels[strings.ToLower(op.Label())]++
	}
	taken := map[string]bool{}
	for _, name := range catalogTables {
		taken["main."+name] = true
	}
	for _, op := range s.Snapshot.Reader.Snapshot().Operators {
		schema := op.Label()
		if labels[strings.ToLower(schema)] > 1 {
			schema = op.ID // names need not be unique; ids are
		}
		s.ops[schema] = op
		add := func(state string, operator bool) {
			key := strings.ToLower(schema + "." + state)
			if taken[key] {
				warnings = append(warnings, fmt.Sprintf("%s: state %q of operator %q has no table of its own (the name %s.%s is taken); read it with %s",
					s.catalog, state, schema, ident(schema), ident(state), readCall(s.catalog, schema, state, operator)))
				return
			}
			taken[key] = true
			s.tables = append(s.tables, table{schema: schema, name: state, op: op, state: state, operator: operator})
		}
		for _, k := range op.KeyedStates {
			add(k.Name, false)
		}
		for _, o := range op.OperatorStates {
			add(o.Name, true)
		}
	}
	return warnings
}

// readCall is the table function call that reads a state.
func readCall(catalog, schema, state string, operator bool) string {
	fn := "stateutil_keyed"
	if operator {
		fn = "stateutil_operator_state"
	}
	return fmt.Sprintf("%s(%s, %s, %s)", fn, strings.TrimPrefix(catalog, "s"), literal(schema), literal(state))
}

// schemas are the schemas s's tables are in.
func (s *source) schemas() []string {
	var out []string
	seen := map[string]bool{"main": true}
	for _, t := range s.tables {
		if k := strings.ToLower(t.schema); !seen[k] {
			seen[k] = true
			out = append(out, t.schema)
		}
	}
	return out
}

// From is what a query names the table of a state of operator op of
// snapshot snap by: its qualified name, or where it has none the table
// function call that reads it.
func (e *Engine) From(snap int, op *snapshot.Operator, state string, operator bool) string {
	if name, ok := e.tableName(snap, op, state, operator); ok {
		return name
	}
	s := e.snaps[snap]
	return readCall(s.catalog, s.schemaOf(op), state, operator)
}

// tableName is the qualified name of a state's table; ok is false when
// it has none.
func (e *Engine) tableName(snap int, op *snapshot.Operator, state string, operator bool) (string, bool) {
	s := e.snaps[snap]
	for _, t := range s.tables {
		if t.op == op && t.state == state && t.operator == operator {
			name := ident(t.schema) + "." + ident(t.name)
			if len(e.snaps) > 1 {
				name = s.catalog + "." + name
			}
			return name, true
		}
	}
	return "", false
}

// Close stops DuckDB and removes its spill directory.
func (e *Engine) Close() error {
	var errs []error
	if e.conn != nil {
		errs = append(errs, e.conn.Close())
	}
	if e.db != nil {
		errs = append(errs, e.db.Close())
	}
	errs = append(errs, os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// ident quotes a SQL identifier.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// literal quotes a SQL string.
func literal(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// Column is one column of a query's result.
type Column struct {
	Name string `json:"name"`
	// Type is DuckDB's name of its type.
	Type string `json:"type"`
	// JSON says its values are JSON text: a JSON column, or a struct, a
	// list or a map holding JSON, as DuckDB's to_json renders it.
	JSON bool `json:"json,omitempty"`
}

// holdsJSON reports a type that is JSON or holds JSON.
func holdsJSON(info duckdb.TypeInfo) bool {
	if info.Alias() == "JSON" {
		return true
	}
	switch d := info.Details().(type) {
	case *duckdb.ListDetails:
		return holdsJSON(d.Child)
	case *duckdb.ArrayDetails:
		return holdsJSON(d.Child)
	case *duckdb.MapDetails:
		return holdsJSON(d.Key) || holdsJSON(d.Value)
	case *duckdb.StructDetails:
		for _, e := range d.Entries {
			if holdsJSON(e.Info()) {
				return true
			}
		}
	case *duckdb.UnionDetails:
		for _, m := range d.Members {
			if holdsJSON(m.Type) {
				return true
			}
		}
	}
	return false
}

// trimStatement drops the semicolons and blanks that end a statement.
func trimStatement(text string) string {
	return strings.TrimRight(strings.TrimSpace(text), "; \t\r\n")
}

// ErrStop, returned by Query's callback, ends the query early without
// error.
var ErrStop = errors.New("stop")

// query is what the table functions of the running query share.
type query struct {
	ctx   context.Context
	mu    sync.Mutex
	err   error    // the first error a table function met
	stops []func() // what ends the scans left open
}

// fail records the first error a table function met, which the query
// returns rather than DuckDB's rendering of it.
func (q *query) fail(err error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
	}
	return err
}

// running is the query the table functions run for. (DuckDB binds a
// view's table function when the view is made, too, with none running.)
func (e *Engine) running() *query {
	if q := e.cur.Load(); q != nil {
		return q
	}
	return &query{ctx: context.Background()}
}

func (q *query) onEnd(stop func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stops = append(q.stops, stop)
}

func (q *query) end() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, stop := range q.stops {
		stop()
	}
	q.stops = nil
}

// Query runs one SQL statement, a SELECT (or EXPLAIN of one), calls cols
// with its result's columns, then row with each row: the values as the
// DuckDB driver gives them (nil for NULL; structs as map[string]any,
// lists as []any, maps as duckdb.OrderedMap). A statement of another kind
// or a SQL error is a *QueryError; an error reading the state is that
// error.
func (e *Engine) Query(ctx context.Context, text string, cols func([]Column) error, row func(values []any) error) error {
	return e.exclusive(ctx, func(ctx context.Context, c *duckdb.Conn) error { return e.run(ctx, c, text, cols, row) })
}

// exclusive runs fn as the one query running, its scans ended and its
// first read error returned when it returns.
func (e *Engine) exclusive(ctx context.Context, fn func(context.Context, *duckdb.Conn) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &query{ctx: ctx}
	e.cur.Store(q)
	defer e.cur.Store(nil)
	defer q.end()
	err := e.conn.Raw(func(c any) error { return fn(ctx, c.(*duckdb.Conn)) })
	switch {
	case ctx.Err() != nil && (err != nil || q.err != nil):
		return context.Cause(ctx)
	case q.err != nil:
		return q.err
	}
	return err
}

// allowed are the statements a query may be: nothing that changes the
// catalog, the settings or anything outside.
var allowed = map[duckdb.StmtType]bool{duckdb.STATEMENT_TYPE_SELECT: true, duckdb.STATEMENT_TYPE_EXPLAIN: true}

func (e *Engine) run(ctx context.Context, c *duckdb.Conn, text string, head func([]Column) error, row func([]any) error) error {
	stmt, err := prepare(c, text)
	if err != nil {
		return err
	}
	defer func() { stmt.Close() }() // the statement run, maybe a wrapped one
	// The driver reads JSON as encoding/json does, a long as a float:
	// columns that hold JSON are read as their JSON text instead.
	var asText []string
	json := map[string]bool{}
	if n, err := stmt.ColumnCount(); err == nil {
		for i := range n {
			info, err1 := stmt.ColumnTypeInfo(i)
			name, err2 := stmt.ColumnName(i)
			switch {
			case err1 != nil || err2 != nil || !holdsJSON(info):
			case info.Alias() == "JSON": // its text as written
				asText = append(asText, fmt.Sprintf("%s::VARCHAR AS %s", ident(name), ident(name)))
				json[name] = true
			default:
				asText = append(asText, fmt.Sprintf("to_json(%s)::VARCHAR AS %s", ident(name), ident(name)))
				json[name] = true
			}
		}
	}
	if len(asText) > 0 {
		if err := stmt.Close(); err != nil {
			return err
		}
		wrapped := "SELECT * REPLACE (" + strings.Join(asText, ", ") + ") FROM (" + trimStatement(text) + "\n)"
		if stmt, err = prepare(c, wrapped); err != nil {
			return err
		}
	}
	rows, err := stmt.QueryContext(ctx, nil)
	if err != nil {
		return queryError(text, err)
	}
	defer rows.Close()
	names := rows.Columns()
	cols := make([]Column, len(names))
	typed, _ := rows.(driver.RowsColumnTypeDatabaseTypeName)
	for i, n := range names {
		cols[i].Name, cols[i].JSON = n, json[n]
		if typed != nil {
			cols[i].Type = typed.ColumnTypeDatabaseTypeName(i)
		}
	}
	if err := head(cols); err != nil {
		return err
	}
	dest := make([]driver.Value, len(names))
	values := make([]any, len(names))
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return queryError(text, err)
		}
		for i, v := range dest {
			values[i] = v
		}
		if err := row(values); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// prepare prepares text, one statement of a kind a query may be.
func prepare(c *duckdb.Conn, text string) (*duckdb.Stmt, error) {
	if strings.TrimSpace(strings.Trim(strings.TrimSpace(text), ";")) == "" {
		return nil, &QueryError{Message: "empty query"}
	}
	ds, err := c.Prepare(text)
	if err != nil {
		if strings.Contains(err.Error(), "multi-statement") {
			return nil, &QueryError{Message: "one statement at a time, please"}
		}
		return nil, queryError(text, err)
	}
	stmt := ds.(*duckdb.Stmt)
	kind, err := stmt.StatementType()
	if err == nil && !allowed[kind] {
		err = &QueryError{Message: "only SELECT (and EXPLAIN) statements run here: the state is read-only"}
	}
	if err != nil {
		stmt.Close()
		return nil, err
	}
	return stmt, nil
}

// Parquet runs one SELECT statement and writes its result to w as a
// Parquet file; it returns the rows written. Errors are Query's.
func (e *Engine) Parquet(ctx context.Context, text string, w io.Writer) (int64, error) {
	text = trimStatement(text)
	out := filepath.Join(e.dir, "out", "result.parquet")
	defer os.Remove(out)
	var n int64
	err := e.exclusive(ctx, func(ctx context.Context, c *duckdb.Conn) error {
		stmt, err := prepare(c, text)
		if err != nil {
			return err
		}
		if kind, _ := stmt.StatementType(); kind != duckdb.STATEMENT_TYPE_SELECT {
			err = &QueryError{Message: "only a SELECT statement's result is written as Parquet"}
		}
		stmt.Close()
		if err != nil {
			return err
		}
		// text is one SELECT statement: nothing in it ends the parentheses.
		res, err := c.ExecContext(ctx, "COPY ("+text+"\n) TO "+literal(out)+" (FORMAT parquet)", nil)
		if err != nil {
			return queryError(text, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	f, err := os.Open(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return n, err
}
