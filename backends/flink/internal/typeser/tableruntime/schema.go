package tableruntime

import (
	"strconv"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// tableSchema describes a RowData's values (binRow's): a changelog row of
// its fields f0, f1, ... by their logical types. The planner's other
// serializers are left to JSON.
func tableSchema(s *typeser.SerializerSnapshot, _ int) (snapshot.Schema, bool) {
	if typeser.KindOf(s) != "RowData" || len(s.LogicalTypes) == 0 {
		return snapshot.Schema{}, false
	}
	names := make([]string, len(s.LogicalTypes))
	for i := range names {
		names[i] = "f" + strconv.Itoa(i)
	}
	row := rowSchema(names, s.LogicalTypes, 0)
	row.Partial = true // a RAW field of a class no serializer here walks is not decoded
	return row, true
}

// rowSchema is a ROW's: its kind, then its fields.
func rowSchema(names []string, types []typeser.LogicalType, depth int) snapshot.Schema {
	fields := []snapshot.Schema{{Kind: snapshot.SchemaString}}
	for _, t := range types {
		fields = append(fields, logicalSchema(t, depth+1))
	}
	row := typeser.Struct(append([]string{snapshot.RowKindField}, names...), fields)
	row.RowKind = true
	return row
}

// logicalRoots are the logical types binField decodes as scalars.
var logicalRoots = map[string]snapshot.SchemaKind{
	"BOOLEAN": snapshot.SchemaBool, "TINYINT": snapshot.SchemaInt8, "SMALLINT": snapshot.SchemaInt16,
	"INTEGER": snapshot.SchemaInt32, "DATE": snapshot.SchemaInt32, "TIME_WITHOUT_TIME_ZONE": snapshot.SchemaInt32,
	"INTERVAL_YEAR_MONTH": snapshot.SchemaInt32, "BIGINT": snapshot.SchemaInt64, "INTERVAL_DAY_TIME": snapshot.SchemaInt64,
	"FLOAT": snapshot.SchemaFloat32, "DOUBLE": snapshot.SchemaFloat64, "CHAR": snapshot.SchemaString,
	"VARCHAR": snapshot.SchemaString, "BINARY": snapshot.SchemaBytes, "VARBINARY": snapshot.SchemaBytes, "NULL": snapshot.SchemaNull,
}

// logicalSchema is the schema of a field of logical type t as binField
// decodes it: a DECIMAL as its exact text; what is not known here as JSON.
func logicalSchema(t typeser.LogicalType, depth int) snapshot.Schema {
	if kind, ok := logicalRoots[t.Root]; ok {
		return snapshot.Schema{Kind: kind}
	}
	if t.Root == "DECIMAL" {
		return snapshot.Schema{Kind: snapshot.SchemaString}
	}
	if depth > 16 {
		return snapshot.Schema{Kind: snapshot.SchemaJSON}
	}
	switch t.Root {
	case "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
		if t.Precision <= 3 {
			return snapshot.Schema{Kind: snapshot.SchemaInt64}
		}
		return typeser.Struct([]string{"millisecond", "nanoOfMillisecond"}, []snapshot.Schema{{Kind: snapshot.SchemaInt64}, {Kind: snapshot.SchemaInt32}})
	case "ARRAY":
		if t.Elem != nil {
			elem := logicalSchema(*t.Elem, depth+1)
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem}
		}
	case "MAP", "MULTISET":
		key, value := t.Key, t.Value
		if t.Root == "MULTISET" {
			key, value = t.Elem, &typeser.LogicalType{Root: "INTEGER"}
		}
		if key != nil && value != nil {
			entry := typeser.Struct([]string{"key", "value"}, []snapshot.Schema{logicalSchema(*key, depth+1), logicalSchema(*value, depth+1)})
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &entry}
		}
	case "ROW":
		names := make([]string, len(t.Fields))
		types := make([]typeser.LogicalType, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		return rowSchema(names, types, depth)
	case "RAW":
		return typeser.Struct([]string{"class", "bytes"}, []snapshot.Schema{{Kind: snapshot.SchemaString}, {Kind: snapshot.SchemaBytes}})
	}
	return snapshot.Schema{Kind: snapshot.SchemaJSON}
}
