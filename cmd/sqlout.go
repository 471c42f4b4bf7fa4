package cmd

import (
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"

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
		j.b = appendJSONString(j.b, j.cols[i].Name)
		j.b = append(j.b, ':')
		if s, ok := v.(string); ok && j.cols[i].JSON {
			j.b = append(j.b, s...)
			continue
		}
		j.b = appendJSONValue(j.b, v)
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
	return string(appendJSONValue(nil, v))
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}

// appendJSONValue appends v, as the DuckDB driver gives it, as JSON: bytes
// as 0x-prefixed hex (as dump shows them), times in RFC 3339, a map's
// entries as an object in its order (keys that are not text as their
// JSON), floats that JSON has no number for as strings.
func appendJSONValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendJSONString(b, x)
	case []byte:
		return appendJSONString(b, "0x"+hex.EncodeToString(x))
	case bool:
		return strconv.AppendBool(b, x)
	case time.Time:
		return appendJSONString(b, x.UTC().Format(time.RFC3339Nano))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return appendJSONString(b, strconv.FormatFloat(x, 'g', -1, 64))
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case float32:
		return appendJSONValue(b, float64(x))
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, *big.Int:
		return fmt.Append(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONValue(b, e)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONValue(b, x[k])
		}
		return append(b, '}')
	case duckdb.OrderedMap:
		b = append(b, '{')
		values := x.Values()
		for i, k := range x.Keys() {
			if i > 0 {
				b = append(b, ',')
			}
			key, ok := k.(string)
			if !ok {
				key = string(appendJSONValue(nil, k))
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			b = appendJSONValue(b, values[i])
		}
		return append(b, '}')
	case fmt.Stringer: // decimals, intervals, UUIDs
		return appendJSONString(b, x.String())
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return appendJSONString(b, fmt.Sprint(v))
	}
	return append(b, enc...)
}
