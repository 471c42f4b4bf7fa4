package cmd

import (
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/stateutil/stateutil/statesql"
)

// resultWriter prints a query's result: its columns, then its rows.
type resultWriter interface {
	head(cols []statesql.Column) error
	row(values []any) error
	end() error
}

func newResultWriter(format string, w io.Writer) resultWriter {
	switch format {
	case "json":
		return &jsonResult{w: w}
	case "csv":
		return &csvResult{w: csv.NewWriter(w)}
	}
	return &tableResult{w: w}
}

// tableResult holds the rows, then prints them as one table.
type tableResult struct {
	w    io.Writer
	cols []statesql.Column
	rows [][]string
}

func (t *tableResult) head(cols []statesql.Column) error { t.cols = cols; return nil }

func (t *tableResult) row(values []any) error {
	r := make([]string, len(values))
	for i, v := range values {
		if v == nil {
			r[i] = "NULL"
			continue
		}
		r[i] = cellText(v, t.cols[i].JSON)
	}
	t.rows = append(t.rows, r)
	return nil
}

func (t *tableResult) end() error {
	header := make([]string, len(t.cols))
	for i, c := range t.cols {
		header[i] = c.Name
	}
	if err := table(t.w, header, t.rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(t.w, "(%s)\n", plural(len(t.rows), "row"))
	return err
}

// csvResult writes a header and a row each, NULL as nothing.
type csvResult struct {
	w    *csv.Writer
	cols []statesql.Column
}

func (c *csvResult) head(cols []statesql.Column) error {
	c.cols = cols
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.Name
	}
	return c.w.Write(names)
}

func (c *csvResult) row(values []any) error {
	r := make([]string, len(values))
	for i, v := range values {
		if v != nil {
			r[i] = cellText(v, c.cols[i].JSON)
		}
	}
	return c.w.Write(r)
}

func (c *csvResult) end() error {
	c.w.Flush()
	return c.w.Error()
}

// jsonResult writes a JSON array of one object a row, a line each, as the
// rows come.
type jsonResult struct {
	w    io.Writer
	cols []statesql.Column
	n    int
	b    []byte
}

func (j *jsonResult) head(cols []statesql.Column) error { j.cols = cols; return nil }

func (j *jsonResult) row(values []any) error {
	j.b = j.b[:0]
	if j.n == 0 {
		j.b = append(j.b, "[\n"...)
	} else {
		j.b = append(j.b, ",\n"...)
	}
	j.n++
	j.b = append(j.b, '{')
	for i, v := range values {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.b = statesql.AppendJSON(j.b, j.cols[i].Name)
		j.b = append(j.b, ':')
		j.b = j.cols[i].AppendJSON(j.b, v)
	}
	j.b = append(j.b, '}')
	_, err := j.w.Write(j.b)
	return err
}

func (j *jsonResult) end() error {
	end := "\n]\n"
	if j.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}

// cellText is a value as a table or CSV cell shows it: text and numbers
// as themselves, bytes as 0x-prefixed hex, times in RFC 3339, anything
// nested as its JSON.
func cellText(v any, isJSON bool) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, *big.Int:
		return fmt.Sprint(x)
	}
	return string(statesql.AppendJSON(nil, v))
}
