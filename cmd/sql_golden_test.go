package cmd

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/duckdb/duckdb-go/v2"
)

func TestGoldenSQL(t *testing.T) {
	types := flinkSnapshot(t, "2.3.0", "types-hashmap-canonical")
	cases := map[string][]string{
		"sql-value":              {"sql", example, "-e", `SELECT key, key_group, value FROM "word-counter"."count" ORDER BY key LIMIT 5`},
		"sql-map-json":           {"sql", example, "-e", `SELECT * FROM "word-counter"."by-source" WHERE key IN ('word-1', 'word-10') ORDER BY key, map_key`, "-o", "json"},
		"sql-json-values":        {"sql", example, "-e", `SELECT key, value FROM "word-counter"."mean-length" ORDER BY key LIMIT 3`, "-o", "csv"},
		"sql-operators":          {"sql", example, "-e", "SELECT * FROM operators", "-o", "csv"},
		"sql-states":             {"sql", example, "-e", "SELECT operator, state, kind, mode, value_type, ttl, table_name, entries, bytes FROM states"},
		"sql-key-groups":         {"sql", example, "-e", "SELECT operator, sum(entries) AS entries, count(*) AS key_groups FROM key_groups GROUP BY ALL ORDER BY ALL"},
		"sql-group-by":           {"sql", example, "-e", `SELECT subtask, count(*) AS keys, sum(value) AS total FROM "word-counter"."count" GROUP BY subtask ORDER BY subtask`},
		"sql-empty-json":         {"sql", example, "-e", `SELECT * FROM "word-counter"."count" WHERE false`, "-o", "json"},
		"sql-two":                {"sql", example, "../testdata/memory/maxp4096.dump", "-e", `SELECT a.key, a.value AS a, b.value AS b FROM s0."word-counter"."count" a JOIN s1."word-counter"."count" b USING (key) WHERE a.value <> b.value ORDER BY key LIMIT 3`},
		"sql-flink":              {"sql", types, "-e", `SELECT state, kind, value_type FROM states ORDER BY state`},
		"sql-bad-table":          {"sql", example, "-e", "SELECT *\nFROM nope"},
		"sql-syntax":             {"sql", example, "-e", "SELECT key FORM x"},
		"sql-read-file":          {"sql", example, "-e", "SELECT * FROM read_csv('/etc/passwd')"},
		"sql-not-select":         {"sql", example, "-e", "CREATE TABLE t AS SELECT 1"},
		"sql-two-stmts":          {"sql", example, "-e", "SELECT 1; SELECT 2"},
		"sql-no-args":            {"sql"},
		"sql-missing":            {"sql", "../testdata/nope.dump", "-e", "SELECT 1"},
		"sql-parquet-dest":       {"sql", example, "-e", "SELECT 1", "-o", "parquet"},
		"dump-parquet-two":       {"dump", example, "-o", "parquet", "--output", "x.parquet"},
		"dump-parquet-no-output": {"dump", example, "--state", "count", "-o", "parquet"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			runGoldenReplacing(t, name, strings.NewReplacer(types, "FLINK").Replace, args...)
		})
	}
}

// dump -o parquet writes stateutil sql's table of the state: DuckDB and
// Apache Arrow's Parquet reader both read back from the file the rows
// that stateutil sql returns, in dump's order, with the same columns.
func TestGoldenDumpParquet(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, state string }{
		{"dump-parquet-map", "by-source"}, {"dump-parquet-json", "mean-length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".parquet")
			runGoldenReplacing(t, c.name, strings.NewReplacer(out, "OUT").Replace,
				"dump", example, "--operator", "word-counter", "--state", c.state, "-o", "parquet", "--output", out)
			got := readParquetDuckDB(t, out)
			want := mustRun(t, "sql", example, "-e", `SELECT * FROM "word-counter"."`+c.state+`"`, "-o", "csv")
			// DuckDB reads the JSON column's text back as VARCHAR,
			// which CSV shows alike; rows come in dump's order.
			sqlOrder := readCSVKeys(want)
			if fileOrder := readCSVKeys(got); !equalMultiset(fileOrder, sqlOrder) || !keyGroupOrder(got) {
				t.Errorf("rows read back:\n%s\nwant (stateutil sql, any order; the file in key-group order):\n%s", got, want)
			}
			checkArrowReads(t, out, got)
			goldenText(t, c.name+"-rows", got)
		})
	}
}

// readParquetDuckDB reads a Parquet file with a DuckDB of its own, as
// CSV text.
func readParquetDuckDB(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM read_parquet(?)", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	b.WriteString(strings.Join(cols, ",") + "\n")
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			if v != nil {
				cells[i] = csvCell(cellText(v, false))
			}
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// csvCell quotes a cell as encoding/csv would.
func csvCell(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") || strings.HasPrefix(s, " ") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// readCSVKeys is the rows of CSV text, header dropped.
func readCSVKeys(text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	return lines[1:]
}

func equalMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, x := range a {
		n[x]++
	}
	for _, x := range b {
		n[x]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return true
}

// keyGroupOrder reports rows (CSV with key_group the second column) in
// ascending key-group order, as dump writes them.
func keyGroupOrder(text string) bool {
	last := -1
	for _, line := range readCSVKeys(text) {
		var kg int
		fields := strings.SplitN(line, ",", 3)
		if len(fields) < 3 {
			return false
		}
		if _, err := fmt.Sscan(fields[1], &kg); err != nil || kg < last {
			return false
		}
		last = kg
	}
	return true
}

// checkArrowReads reads the file with Apache Arrow's Parquet reader and
// compares its columns' names and the key, key_group and subtask columns
// with DuckDB's reading (CSV text).
func checkArrowReads(t *testing.T, path, duck string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow reads %s: %v", path, err)
	}
	defer table.Release()
	lines := strings.Split(strings.TrimSuffix(duck, "\n"), "\n")
	var names []string
	for _, fld := range table.Schema().Fields() {
		names = append(names, fld.Name)
	}
	if got := strings.Join(names, ","); got != lines[0] {
		t.Errorf("arrow reads columns %s, DuckDB %s", got, lines[0])
	}
	if int(table.NumRows()) != len(lines)-1 {
		t.Fatalf("arrow reads %d rows, DuckDB %d", table.NumRows(), len(lines)-1)
	}
	var rows []string
	for i := range int(table.NumRows()) {
		rows = append(rows, fmt.Sprintf("%s,%s,%s", cellOf(t, table.Column(0), i), cellOf(t, table.Column(1), i), cellOf(t, table.Column(2), i)))
	}
	for i, r := range rows {
		if !strings.HasPrefix(lines[i+1], r+",") {
			t.Errorf("row %d: arrow reads %s, DuckDB %s", i, r, lines[i+1])
		}
	}
}

// cellOf is row i of a column of strings or int32s, as text.
func cellOf(t *testing.T, c *arrow.Column, i int) string {
	for _, chunk := range c.Data().Chunks() {
		if i >= chunk.Len() {
			i -= chunk.Len()
			continue
		}
		switch a := chunk.(type) {
		case *array.String:
			return a.Value(i)
		case *array.Int32:
			return fmt.Sprint(a.Value(i))
		}
		t.Fatalf("column %s is %T", c.Name(), chunk)
	}
	t.Fatalf("column %s has no row %d", c.Name(), i)
	return ""
}

// A Flink state's typed columns survive the trip through Parquet: a
// POJO's and an Avro record's structs read back, row for row, as
// stateutil sql gives them.
func TestDumpParquetFlinkStructs(t *testing.T) {
	snap := flinkSnapshot(t, "2.3.0", "types-hashmap-canonical")
	for _, state := range []string{"pojo", "avro", "tuple3"} {
		out := filepath.Join(t.TempDir(), state+".parquet")
		mustRun(t, "dump", snap, "--operator", "keyed", "--state", state, "-o", "parquet", "--output", out)
		got := readParquetDuckDB(t, out)
		want := mustRun(t, "sql", snap, "-e", `SELECT * FROM "keyed"."`+state+`"`, "-o", "csv")
		if !equalMultiset(readCSVKeys(got), readCSVKeys(want)) || strings.Count(got, "\n") < 20 {
			t.Errorf("%s read back:\n%.1500s\nwant (stateutil sql):\n%.1500s", state, got, want)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		table, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		f.Close()
		if err != nil {
			t.Fatalf("arrow reads %s: %v", out, err)
		}
		if col := table.Schema().Field(4); col.Name != "value" || col.Type.ID() != arrow.STRUCT || int(table.NumRows()) != strings.Count(got, "\n")-1 {
			t.Errorf("%s: arrow reads %d rows, column %s of %s", state, table.NumRows(), col.Name, col.Type)
		}
		table.Release()
	}
}
