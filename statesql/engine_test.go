package statesql

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

const example = "../testdata/memory/example.dump"

// openExample starts an engine over the example snapshot.
func openExample(t *testing.T, opts Options) *Engine {
	t.Helper()
	reg := snapshot.NewRegistry(storage.NewRegistry())
	memory.Register(reg)
	r, err := reg.Open(context.Background(), example, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	opts.Codecs = reg.Codecs
	e, err := Open(context.Background(), []Snapshot{{Reader: r, Location: example}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// rows runs a query and returns its rows.
func rows(t *testing.T, e *Engine, query string) ([]Column, [][]any, error) {
	t.Helper()
	var cols []Column
	var out [][]any
	err := e.Query(context.Background(), query, func(c []Column) error { cols = c; return nil }, func(v []any) error {
		out = append(out, append([]any(nil), v...))
		return nil
	})
	return cols, out, err
}

// A query reaches nothing but the snapshot: files are neither read nor
// written, no database is attached, no extension installed or loaded, no
// setting changed, no table made. Each is refused as the user's error.
func TestRefusesEverythingButReadingState(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(dir, "written")
	e := openExample(t, Options{})
	for name, query := range map[string]string{
		"read_csv":         "SELECT * FROM read_csv('/etc/passwd')",
		"read_csv own":     "SELECT * FROM read_csv('" + secret + "')",
		"read_text":        "SELECT * FROM read_text('/etc/hostname')",
		"read_blob":        "SELECT * FROM read_blob('/etc/passwd')",
		"read_parquet":     "SELECT * FROM read_parquet('/etc/passwd')",
		"read_json":        "SELECT * FROM read_json('" + secret + "')",
		"glob":             "SELECT * FROM glob('/etc/*')",
		"file by name":     "SELECT * FROM '" + secret + "'",
		"http":             "SELECT * FROM read_csv('http://127.0.0.1:1/x.csv')",
		"attach file":      "ATTACH '" + written + ".db' AS other",
		"attach memory":    "ATTACH ':memory:' AS other",
		"detach":           "DETACH s0",
		"install":          "INSTALL httpfs",
		"load":             "LOAD httpfs",
		"force install":    "FORCE INSTALL json",
		"copy to":          "COPY (SELECT 1) TO '" + written + ".csv'",
		"copy parquet":     "COPY (SELECT 1) TO '" + written + ".parquet' (FORMAT parquet)",
		"export":           "EXPORT DATABASE '" + written + "'",
		"set":              "SET enable_external_access = true",
		"reset":            "RESET lock_configuration",
		"pragma":           "PRAGMA memory_limit='8GB'",
		"create table":     "CREATE TABLE t AS SELECT 1",
		"create secret":    "CREATE SECRET (TYPE s3, KEY_ID 'a', SECRET 'b')",
		"insert":           "INSERT INTO operators VALUES (1)",
		"call":             "CALL dbgen(sf = 0.01)",
		"two statements":   "SELECT 1; SELECT 2",
		"hidden statement": "SELECT 1; COPY (SELECT 1) TO '" + written + ".csv'",
		"use":              "USE memory",
		"checkpoint":       "CHECKPOINT",
	} {
		t.Run(name, func(t *testing.T) {
			_, got, err := rows(t, e, query)
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("%s: got rows %v, error %v; want it refused", query, got, err)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("queries wrote into %s: %v", dir, entries)
	}
	// The engine still answers.
	if _, got, err := rows(t, e, `SELECT count(*) FROM "word-counter"."count"`); err != nil || got[0][0] != int64(40) {
		t.Errorf("after the refusals: %v, %v", got, err)
	}
}

// A SQL error names where in the query it is, counting lines and columns
// of the query as written, also where DuckDB shows a cut excerpt of a
// long line.
func TestErrorPosition(t *testing.T) {
	e := openExample(t, Options{})
	long := "SELECT " + strings.Repeat("key, ", 40) + "nope FROM \"word-counter\".\"count\""
	for _, c := range []struct {
		query        string
		line, column int
	}{
		{"SELECT * FROM nope", 1, 15},
		{"SELECT 1,\n  nope(2)", 2, 3},
		{"SELEC 1", 1, 1},
		{long, 1, strings.Index(long, "nope") + 1},
	} {
		_, _, err := rows(t, e, c.query)
		var qe *QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("%q: %v, want a QueryError", c.query, err)
		}
		if qe.Line != c.line || qe.Column != c.column {
			t.Errorf("%q: error at line %d column %d, want %d, %d (%v)", c.query, qe.Line, qe.Column, c.line, c.column, err)
		}
	}
}

// Columns are typed by the codecs' schemas: stateutil's strings and
// int64s as VARCHAR and BIGINT, msgpack documents as JSON; a map state's
// entries and a list's elements are rows of their own; a TTL is a
// timestamp.
func TestTypedColumns(t *testing.T) {
	e := openExample(t, Options{})
	for table, want := range map[string]string{
		`"word-counter"."count"`:             "key VARCHAR, key_group INTEGER, subtask INTEGER, namespace VARCHAR, value BIGINT",
		`"word-counter"."by-source"`:         "key VARCHAR, key_group INTEGER, subtask INTEGER, namespace VARCHAR, map_key VARCHAR, map_value BIGINT, ttl_expires_at TIMESTAMP",
		`"word-counter"."recent"`:            "key VARCHAR, key_group INTEGER, subtask INTEGER, namespace VARCHAR, value BIGINT, ttl_expires_at TIMESTAMP",
		`"word-counter"."mean-length"`:       "key VARCHAR, key_group INTEGER, subtask INTEGER, namespace VARCHAR, value JSON",
		`"rules"."user-total"`:               "key BIGINT, key_group INTEGER, subtask INTEGER, namespace VARCHAR, value BIGINT",
		`"kafka-source"."partition-offsets"`: "subtask INTEGER, mode VARCHAR, value JSON",
	} {
		_, got, err := rows(t, e, "SELECT column_name || ' ' || column_type FROM (DESCRIBE "+table+")")
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, r := range got {
			cols = append(cols, r[0].(string))
		}
		if s := strings.Join(cols, ", "); s != want {
			t.Errorf("%s: %s\nwant %s", table, s, want)
		}
	}
}

// A query that stops early (LIMIT) ends the scans it started, and the
// engine answers the next query.
func TestEarlyStop(t *testing.T) {
	e := openExample(t, Options{Threads: 2})
	for range 3 {
		if _, got, err := rows(t, e, `SELECT key FROM "word-counter"."recent" LIMIT 1`); err != nil || len(got) != 1 {
			t.Fatalf("LIMIT 1: %v, %v", got, err)
		}
	}
	stopped := 0
	err := e.Query(context.Background(), `SELECT * FROM "word-counter"."by-source"`, func([]Column) error { return nil }, func([]any) error {
		stopped++
		return ErrStop
	})
	if err != nil || stopped != 1 {
		t.Fatalf("stopped after %d rows: %v", stopped, err)
	}
	if _, got, err := rows(t, e, `SELECT count(*) FROM "word-counter"."by-source"`); err != nil || got[0][0] != int64(62) {
		t.Fatalf("after stopping: %v, %v", got, err)
	}
}

// blockingReader yields each subtask's first entry, then waits until
// the read is cancelled and fails with why.
type blockingReader struct {
	snapshot.Reader
	reading chan struct{}
	once    sync.Once
}

func (b *blockingReader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		for e, err := range b.Reader.Entries(ctx, op, subtask, kgs) {
			if err != nil || !yield(e, nil) {
				return
			}
			break
		}
		b.once.Do(func() { close(b.reading) })
		<-ctx.Done()
		yield(snapshot.Entry{}, ctx.Err())
	}
}

// A query whose context ends while it reads state stops, and says why;
// the engine answers the next query.
func TestQueryCancelled(t *testing.T) {
	reg := snapshot.NewRegistry(storage.NewRegistry())
	memory.Register(reg)
	r, err := reg.Open(context.Background(), example, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	br := &blockingReader{Reader: r, reading: make(chan struct{})}
	e, err := Open(context.Background(), []Snapshot{{Reader: br, Location: example}}, Options{Codecs: reg.Codecs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("asked to stop")
	done := make(chan error, 1)
	go func() {
		done <- e.Query(ctx, `SELECT count(*) FROM "word-counter"."count"`, func([]Column) error { return nil }, func([]any) error { return nil })
	}()
	<-br.reading
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("cancelled query: %v, want %v", err, stop)
	}
	if _, got, err := rows(t, e, "SELECT 42"); err != nil || got[0][0] != int32(42) {
		t.Fatalf("after a cancelled query: %v, %v", got, err)
	}
}
