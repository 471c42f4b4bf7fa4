// Command duckdbquery runs one SQL statement on a plain in-memory DuckDB
// (the Go driver stateutil embeds, with its defaults: files may be read)
// and prints the result as tab-separated lines. It is make bench's
// "duckdb": the baseline that reads dump's JSON lines with read_json.
//
//	stateutil dump SNAP -o jsonl | duckdbquery "SELECT ... FROM read_json('/dev/stdin', format = 'newline_delimited') ..."
package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: duckdbquery QUERY")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "duckdbquery:", err)
		os.Exit(1)
	}
}

func run(query string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range values {
			if i > 0 {
				out.WriteByte('\t')
			}
			fmt.Fprint(out, v)
		}
		out.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return out.Flush()
}
