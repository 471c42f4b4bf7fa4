package statesql

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// AppendJSON appends v, one of a row's values, as JSON: a JSON column's
// text as it is, anything else as the package-level AppendJSON writes it.
func (c Column) AppendJSON(b []byte, v any) []byte {
	if s, ok := v.(string); ok && c.JSON {
		return append(b, s...)
	}
	return AppendJSON(b, v)
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}

// AppendJSON appends v, a value of a query's result as Query gives it, as JSON: bytes
// as 0x-prefixed hex (as dump shows them), times in RFC 3339, a map's
// entries as an object in its order (keys that are not text as their
// JSON), floats that JSON has no number for as strings.
func AppendJSON(b []byte, v any) []byte {
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
		return AppendJSON(b, float64(x))
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, *big.Int:
		return fmt.Append(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, e)
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
			b = AppendJSON(b, x[k])
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
				key = string(AppendJSON(nil, k))
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			b = AppendJSON(b, values[i])
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
