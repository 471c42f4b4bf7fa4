package statesql

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/internal/nonfinite"
	"github.com/stateutil/stateutil/snapshot"
)

// errMisfit is a decoded value that is not of its column's schema.
var errMisfit = errors.New("value does not fit its column's type")

// types builds DuckDB column types from schemas. JSON's type is DuckDB's
// JSON alias, which no constructor of the driver makes: it comes from a
// prepared statement.
type types struct {
	json duckdb.TypeInfo
}

func mustType(t duckdb.Type) duckdb.TypeInfo {
	info, err := duckdb.NewTypeInfo(t)
	if err != nil {
		panic(err) // only primitive types are passed
	}
	return info
}

var (
	typeVarchar   = mustType(duckdb.TYPE_VARCHAR)
	typeBlob      = mustType(duckdb.TYPE_BLOB)
	typeInteger   = mustType(duckdb.TYPE_INTEGER)
	typeBigint    = mustType(duckdb.TYPE_BIGINT)
	typeBoolean   = mustType(duckdb.TYPE_BOOLEAN)
	typeTimestamp = mustType(duckdb.TYPE_TIMESTAMP)
)

// scalarTypes are the DuckDB types of the scalar schemas.
var scalarTypes = map[snapshot.SchemaKind]duckdb.TypeInfo{
	snapshot.SchemaNull: typeVarchar, snapshot.SchemaBool: typeBoolean,
	snapshot.SchemaInt8: mustType(duckdb.TYPE_TINYINT), snapshot.SchemaInt16: mustType(duckdb.TYPE_SMALLINT),
	snapshot.SchemaInt32: typeInteger, snapshot.SchemaInt64: typeBigint,
	snapshot.SchemaFloat32: mustType(duckdb.TYPE_FLOAT), snapshot.SchemaFloat64: mustType(duckdb.TYPE_DOUBLE),
	snapshot.SchemaString: typeVarchar, snapshot.SchemaBytes: typeBlob,
}

// undecodedType is the struct a value that was not decoded is kept as.
func undecodedType() duckdb.TypeInfo {
	class, _ := duckdb.NewStructEntry(typeVarchar, "class")
	b, _ := duckdb.NewStructEntry(typeBlob, "bytes")
	info, err := duckdb.NewStructInfo(class, b)
	if err != nil {
		panic(err)
	}
	return info
}

// of is the DuckDB type of s's values.
func (t *types) of(s snapshot.Schema) (duckdb.TypeInfo, error) {
	if info, ok := scalarTypes[s.Kind]; ok {
		return info, nil
	}
	switch s.Kind {
	case snapshot.SchemaJSON:
		return t.json, nil
	case snapshot.SchemaUndecoded:
		return undecodedType(), nil
	case snapshot.SchemaStruct:
		if len(s.Fields) == 0 { // DuckDB has no empty struct
			return t.json, nil
		}
		entries := make([]duckdb.StructEntry, len(s.Fields))
		for i, f := range s.Fields {
			info, err := t.of(f.Schema)
			if err != nil {
				return nil, err
			}
			if entries[i], err = duckdb.NewStructEntry(info, f.Name); err != nil {
				return nil, err
			}
		}
		return duckdb.NewStructInfo(entries[0], entries[1:]...)
	case snapshot.SchemaList:
		elem, err := t.of(*s.Elem)
		if err != nil {
			return nil, err
		}
		return duckdb.NewListInfo(elem)
	case snapshot.SchemaMap:
		key, err := t.of(*s.Key)
		if err != nil {
			return nil, err
		}
		value, err := t.of(*s.Elem)
		if err != nil {
			return nil, err
		}
		return duckdb.NewMapInfo(key, value)
	}
	return nil, fmt.Errorf("schema %s has no SQL type", s)
}

// convert turns a decoded value of schema s into what the driver writes
// to a column of s's type; errMisfit where it is not of s.
func convert(s *snapshot.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch s.Kind {
	case snapshot.SchemaJSON:
		return jsonOf(v)
	case snapshot.SchemaNull:
		return nil, errMisfit
	case snapshot.SchemaBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case snapshot.SchemaInt8, snapshot.SchemaInt16, snapshot.SchemaInt32, snapshot.SchemaInt64:
		return integer(s.Kind, v)
	case snapshot.SchemaFloat32, snapshot.SchemaFloat64:
		return float(v)
	case snapshot.SchemaString:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number: // a decimal, as its exact text
			return x.String(), nil
		case int32, int64: // a date or time out of range, as its number
			return fmt.Sprint(x), nil
		}
	case snapshot.SchemaBytes:
		return blob(v)
	case snapshot.SchemaStruct:
		if len(s.Fields) == 0 {
			return jsonOf(v)
		}
		return structOf(s, v)
	case snapshot.SchemaList:
		if list, ok := v.([]any); ok {
			out := make([]any, len(list))
			for i, x := range list {
				var err error
				if out[i], err = convert(s.Elem, x); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	case snapshot.SchemaMap:
		return mapOf(s, v)
	case snapshot.SchemaUndecoded:
		if nd, ok := v.(snapshot.NotDecoded); ok {
			return undecoded(nd), nil
		}
	}
	return nil, errMisfit
}

// undecoded is a NotDecoded as its struct.
func undecoded(nd snapshot.NotDecoded) map[string]any {
	return map[string]any{"class": nd.Class, "bytes": nd.Bytes}
}

func jsonOf(v any) (any, error) {
	if _, ok := v.(snapshot.NotDecoded); ok {
		return nil, errMisfit
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %w", errMisfit, err)
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n")), nil
}

// integerBits are the bits of the integer schemas.
var integerBits = map[snapshot.SchemaKind]uint{snapshot.SchemaInt8: 8, snapshot.SchemaInt16: 16, snapshot.SchemaInt32: 32, snapshot.SchemaInt64: 64}

func integer(kind snapshot.SchemaKind, v any) (any, error) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int16:
		n = int64(x)
	case int8:
		n = int64(x)
	case int:
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case json.Number:
		var err error
		if n, err = strconv.ParseInt(x.String(), 10, 64); err != nil {
			return nil, errMisfit
		}
	default:
		return nil, errMisfit
	}
	bits := integerBits[kind]
	if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
		return nil, errMisfit
	}
	return n, nil
}

func float(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, errMisfit
		}
		return f, nil
	case string:
		if f, ok := nonfinite.Parse(x); ok {
			return f, nil
		}
	}
	return nil, errMisfit
}

func blob(v any) (any, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		if h, ok := strings.CutPrefix(x, "0x"); ok {
			if b, err := hex.DecodeString(h); err == nil {
				return b, nil
			}
		}
	}
	return nil, errMisfit
}

// structOf takes a struct decoded as an object by field name or as a
// list by position (a tuple, a row).
func structOf(s *snapshot.Schema, v any) (any, error) {
	if s.RowKind {
		return changelogRow(s, v)
	}
	out := make(map[string]any, len(s.Fields))
	switch x := v.(type) {
	case map[string]any:
		for name := range x {
			if !slices.ContainsFunc(s.Fields, func(f snapshot.Field) bool { return f.Name == name }) {
				return nil, errMisfit
			}
		}
		for i := range s.Fields {
			c, err := convert(&s.Fields[i].Schema, x[s.Fields[i].Name])
			if err != nil {
				return nil, err
			}
			out[s.Fields[i].Name] = c
		}
	case []any:
		if len(x) != len(s.Fields) {
			return nil, errMisfit
		}
		for i := range s.Fields {
			c, err := convert(&s.Fields[i].Schema, x[i])
			if err != nil {
				return nil, err
			}
			out[s.Fields[i].Name] = c
		}
	default:
		return nil, errMisfit
	}
	return out, nil
}

// changelogRow takes a row of a kind: its fields alone (an INSERT), or
// {"@rowkind": KIND, "@row": fields}.
func changelogRow(s *snapshot.Schema, v any) (any, error) {
	if len(s.Fields) == 0 || s.Fields[0].Name != snapshot.RowKindField {
		return nil, errMisfit
	}
	kind := any("INSERT")
	if m, ok := v.(map[string]any); ok && len(m) == 2 && m["@rowkind"] != nil && m["@row"] != nil {
		kind, v = m["@rowkind"], m["@row"]
	}
	rest := *s
	rest.RowKind, rest.Fields = false, s.Fields[1:]
	if len(rest.Fields) == 0 {
		return map[string]any{snapshot.RowKindField: kind}, nil
	}
	out, err := structOf(&rest, v)
	if err != nil {
		return nil, err
	}
	row := out.(map[string]any)
	row[snapshot.RowKindField] = kind
	return row, nil
}

// mapOf takes a map decoded as an object, its keys as text: a key of a
// schema other than a string is the JSON text of its value.
func mapOf(s *snapshot.Schema, v any) (any, error) {
	x, ok := v.(map[string]any)
	if !ok {
		return nil, errMisfit
	}
	var m duckdb.OrderedMap
	for _, k := range slices.Sorted(maps.Keys(x)) {
		var key any = k
		if s.Key.Kind != snapshot.SchemaString {
			dec := json.NewDecoder(strings.NewReader(k))
			dec.UseNumber()
			if err := dec.Decode(&key); err != nil {
				return nil, errMisfit
			}
		}
		ck, err := convert(s.Key, key)
		if err != nil || ck == nil {
			return nil, errMisfit
		}
		cv, err := convert(s.Elem, x[k])
		if err != nil {
			return nil, err
		}
		m.Set(ck, cv)
	}
	return m, nil
}
