package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/statesql"
)

// A query's limits: it returns no more rows than a page of entries (and
// runs no longer than an answer may take to write, Limits.WriteTimeout),
// and DuckDB holds little memory and spills little beside what the server
// bounds itself, since any client may send a query.
const (
	maxSQLRows   = maxPage
	sqlMemory    = 64 << 20
	sqlTempBytes = 1 << 30
	sqlThreads   = 2
)

// sqlEngine is the one DuckDB the SQL page queries, over every snapshot,
// started by the first query and kept until the server closes.
type sqlEngine struct {
	once     sync.Once
	engine   *statesql.Engine
	readers  []snapshot.Reader
	warnings []string
	err      error
}

func (s *Server) sqlRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/sql", s.sql)
	m.HandleFunc("GET /sql", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(asset("sql.html"))
	})
}

// start opens readers of its own on every snapshot and starts DuckDB
// over them; state the snapshots hold but stateutil cannot read is left
// out, and said in the warnings.
func (e *sqlEngine) start(s *Server) {
	var snaps []statesql.Snapshot
	ctx := context.Background()
	for _, src := range s.snapshots {
		if src.err != nil {
			e.err = fmt.Errorf("snapshot %d (%s): %w", src.id, src.location, src.err)
			return
		}
		r, err := s.cfg.Registry.Open(ctx, src.location, s.cfg.Open)
		if err != nil {
			e.err = err
			return
		}
		e.readers = append(e.readers, r)
		r, dropped := snapshot.WithoutUnreadable(r)
		for _, d := range dropped {
			e.warnings = append(e.warnings, fmt.Sprintf("snapshot %d: left out unreadable %s", src.id, d))
		}
		snaps = append(snaps, statesql.Snapshot{Reader: r, Location: src.location})
	}
	e.engine, e.err = statesql.Open(ctx, snaps, statesql.Options{Codecs: s.cfg.Registry.Codecs,
		MemoryLimit: sqlMemory, TempLimit: sqlTempBytes, Threads: sqlThreads})
	if e.err == nil {
		e.warnings = append(e.warnings, e.engine.Warnings...)
	}
}

func (e *sqlEngine) close() error {
	var errs []error
	if e.engine != nil {
		errs = append(errs, e.engine.Close())
	}
	for _, r := range e.readers {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// SQLResult is the answer of GET /api/sql: the columns, and the rows as
// arrays of the columns' values (as stateutil sql -o json writes them).
type SQLResult struct {
	Columns []statesql.Column `json:"columns"`
	Rows    []jsonRow         `json:"rows"`
	// Truncated says the query had more rows than the answer holds.
	Truncated bool     `json:"truncated"`
	Warnings  []string `json:"warnings"`
}

// jsonRow is one row, encoded.
type jsonRow []byte

func (r jsonRow) MarshalJSON() ([]byte, error) { return r, nil }

// sql answers GET /api/sql?q=QUERY[&limit=N]: one SELECT over the
// snapshots (snapshot N's tables in catalog sN; with one snapshot, its
// tables need no prefix), within the write timeout and maxSQLRows.
func (s *Server) sql(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("q")
	limit, err := intParam(r, "limit", maxSQLRows)
	switch {
	case err != nil:
		s.answer(w, nil, err)
		return
	case strings.TrimSpace(query) == "":
		s.answer(w, nil, badRequestf("q must be a SQL statement"))
		return
	case limit == 0:
		limit = maxSQLRows
	}
	e := &s.sqlState
	e.once.Do(func() { e.start(s) })
	if e.err != nil {
		s.fail(w, e.err)
		return
	}
	res := &SQLResult{Rows: []jsonRow{}, Warnings: append([]string{}, e.warnings...)}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Limits.WriteTimeout)
	defer cancel()
	err = s.withHeavy(ctx, func() error {
		return e.engine.Query(ctx, query, func(cols []statesql.Column) error {
			res.Columns = cols
			return nil
		}, func(values []any) error {
			if len(res.Rows) == limit {
				res.Truncated = true
				return statesql.ErrStop
			}
			row := []byte{'['}
			for i, v := range values {
				if i > 0 {
					row = append(row, ',')
				}
				row = res.Columns[i].AppendJSON(row, v)
			}
			res.Rows = append(res.Rows, append(row, ']'))
			return nil
		})
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && err != nil {
		err = badRequestf("the query ran longer than %s, the most a query may", s.cfg.Limits.WriteTimeout)
	}
	s.answer(w, res, err)
}
