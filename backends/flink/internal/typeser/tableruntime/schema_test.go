package tableruntime

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/vectorfile"
	"github.com/stateutil/stateutil/snapshot"
)

// Every value real Flink wrote with a Table runtime serializer fits the
// schema its snapshot gives (stateutil sql's column types): typed where
// the serializer says what its values are, and a value that is not
// decoded only where the schema allows for one.
func TestTableVectorsFitTheirSchema(t *testing.T) {
	typed := map[string]bool{}
	for _, v := range readVectors(t) {
		s := snapshotOf(t, v)
		schema := typeser.SchemaOf(s, 0)
		if schema.Kind != snapshot.SchemaJSON {
			typed[v.Name] = true
		}
		for i, val := range v.Values {
			got, err := typeser.Codec{S: s}.Decode(vectorfile.Unhex(t, val.Bytes))
			where := v.Version + " " + v.Name + " value " + strconv.Itoa(i)
			switch {
			case errors.Is(err, snapshot.ErrNotDecoded):
				if !schema.Partial {
					t.Errorf("%s: not decoded, but its schema %s says every value decodes", where, schema)
				}
			case err != nil:
				t.Errorf("%s: %v", where, err)
			default:
				if path, ok := fits(schema, got); !ok {
					text, _ := json.Marshal(got)
					t.Errorf("%s: %s does not fit its schema %s at %s", where, text, schema, path)
				}
			}
		}
	}
	// Only a BinaryRowData, whose snapshot records no field types, is
	// left to JSON.
	for _, name := range []string{"array-bigint", "map-varchar-int", "decimal-compact", "decimal-wide", "timestamp-9",
		"raw-long", "linkedlist-mask", "dataview-null", "listview", "nullawaremap", "countwindow", "sqn-metasqninfo"} {
		if !typed[name] {
			t.Errorf("%s: values left to JSON", name)
		}
	}
}

// fits reports whether a decoded value v is of schema s as stateutil sql
// takes it, and where it is not.
func fits(s snapshot.Schema, v any) (string, bool) {
	if v == nil {
		return "", true
	}
	ok := false
	switch s.Kind {
	case snapshot.SchemaJSON:
		return "", true
	case snapshot.SchemaBool:
		_, ok = v.(bool)
	case snapshot.SchemaInt8, snapshot.SchemaInt16, snapshot.SchemaInt32, snapshot.SchemaInt64:
		switch x := v.(type) {
		case int8, int16, int32, int64:
			ok = true
		case json.Number:
			_, err := x.Int64()
			ok = err == nil
		}
	case snapshot.SchemaFloat32, snapshot.SchemaFloat64:
		switch v.(type) {
		case float32, float64, json.Number:
			ok = true
		}
	case snapshot.SchemaString:
		switch v.(type) {
		case string, json.Number:
			ok = true
		}
	case snapshot.SchemaBytes:
		text, isText := v.(string)
		ok = isText && strings.HasPrefix(text, "0x")
	case snapshot.SchemaList:
		list, isList := v.([]any)
		for i := 0; isList && i < len(list); i++ {
			if path, ok := fits(*s.Elem, list[i]); !ok {
				return "[" + strconv.Itoa(i) + "]" + path, false
			}
		}
		ok = isList
	case snapshot.SchemaMap: // keys are a JSON object's, as text
		m, isMap := v.(map[string]any)
		for k, x := range m {
			if path, ok := fits(*s.Elem, x); !ok {
				return "[" + k + "]" + path, false
			}
		}
		ok = isMap
	case snapshot.SchemaStruct:
		return fitsStruct(s, v)
	}
	if !ok {
		return ": " + s.String(), false
	}
	return "", true
}

// fitsStruct is fits for a struct: its fields by name or by position, a
// changelog row maybe of another kind than INSERT.
func fitsStruct(s snapshot.Schema, v any) (string, bool) {
	fields := s.Fields
	if s.RowKind {
		_, row, err := typeser.RowKindOf(v)
		if err != nil {
			return ": " + err.Error(), false
		}
		v, fields = row, fields[1:]
	}
	switch x := v.(type) {
	case map[string]any:
		for name := range x {
			if !slices.ContainsFunc(fields, func(f snapshot.Field) bool { return f.Name == name }) {
				return "." + name + ": no field of " + s.String(), false
			}
		}
		for _, f := range fields {
			if path, ok := fits(f.Schema, x[f.Name]); !ok {
				return "." + f.Name + path, false
			}
		}
		return "", true
	case []any:
		if len(x) != len(fields) {
			return ": not the fields of " + s.String(), false
		}
		for i, f := range fields {
			if path, ok := fits(f.Schema, x[i]); !ok {
				return "." + f.Name + path, false
			}
		}
		return "", true
	}
	return ": " + s.String(), false
}
