package statesql

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// QueryError is a query that cannot run: bad SQL, a name no table has, a
// statement that is not a SELECT. It is the user's to correct. Line and
// Column (from 1) are where in the query DuckDB found the error, 0 when it
// did not say.
type QueryError struct {
	Message      string
	Line, Column int
}

func (e *QueryError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("sql: %s (at line %d, column %d)", e.Message, e.Line, e.Column)
	}
	return "sql: " + e.Message
}

// caret finds DuckDB's pointer at an error: "LINE n: text" and under it
// spaces and a caret.
var caret = regexp.MustCompile(`(?m)^LINE (\d+): (.*)\n( *)\^`)

// queryError turns a DuckDB error of query text into a QueryError, its
// position a line and column of text.
func queryError(text string, err error) error {
	msg := err.Error()
	var de *duckdb.Error
	if errors.As(err, &de) {
		msg = de.Msg
	}
	msg = strings.TrimPrefix(msg, "database/sql/driver: ")
	qe := &QueryError{}
	if m := caret.FindStringSubmatchIndex(msg); m != nil {
		line, _ := strconv.Atoi(msg[m[2]:m[3]])
		shown := msg[m[4]:m[5]]
		col := (m[7] - m[6]) - len("LINE : ") - (m[3] - m[2]) // the caret's place in shown
		qe.Line, qe.Column = line, locate(text, line, shown, col)
		msg = msg[:m[0]]
	}
	qe.Message = strings.Join(strings.Fields(msg), " ")
	return qe
}

// locate is the column (from 1) in line of text that DuckDB's excerpt
// shown points at with its caret at col (from 0): DuckDB shows a long line
// cut, with "..." where it cut.
func locate(text string, line int, shown string, col int) int {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		return col + 1
	}
	full := lines[line-1]
	trimmed := strings.TrimPrefix(shown, "...")
	cut := len(shown) - len(trimmed)
	trimmed = strings.TrimSuffix(trimmed, "...")
	start := strings.Index(full, trimmed)
	if start < 0 {
		return col + 1
	}
	return start + col - cut + 1
}
