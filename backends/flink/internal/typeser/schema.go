package typeser

import (
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
)

// Schema describes the values Decode gives (snapshot.Describer): their
// serializers' shapes, flink-core's here and the families' by their
// Schema, any JSON value where neither says.
func (c Codec) Schema() snapshot.Schema {
	if c.S == nil {
		return snapshot.Schema{Kind: snapshot.SchemaBytes}
	}
	return SchemaOf(c.S, 0)
}

// Leaf schemas of flink-core's serializers, by kind.
var leafSchemas = map[string]snapshot.SchemaKind{
	"Long": snapshot.SchemaInt64, "Integer": snapshot.SchemaInt32, "Short": snapshot.SchemaInt16, "Byte": snapshot.SchemaInt8,
	"Boolean": snapshot.SchemaBool, "Double": snapshot.SchemaFloat64, "Float": snapshot.SchemaFloat32,
	"String": snapshot.SchemaString, "Char": snapshot.SchemaString, "byte[]": snapshot.SchemaBytes,
	"VoidNamespace": snapshot.SchemaNull, "GlobalWindow": snapshot.SchemaString,
	// Big numbers as their exact text, java.time values as their ISO
	// text, dates as their milliseconds (temporal.go).
	"BigInteger": snapshot.SchemaString, "BigDecimal": snapshot.SchemaString,
	"Instant": snapshot.SchemaString, "LocalDate": snapshot.SchemaString, "LocalTime": snapshot.SchemaString,
	"LocalDateTime": snapshot.SchemaString, "Date": snapshot.SchemaInt64, "SqlDate": snapshot.SchemaInt64,
	"SqlTime": snapshot.SchemaInt64,
}

// anyJSON is the schema of values no serializer here describes; such a
// value may also be one that was not decoded.
var anyJSON = snapshot.Schema{Kind: snapshot.SchemaJSON, Partial: true}

// SchemaOf is the schema of the values DecodeAny gives for s.
func SchemaOf(s *SerializerSnapshot, depth int) snapshot.Schema {
	if s == nil || depth > 16 {
		return anyJSON
	}
	nested := func(i int) snapshot.Schema { return SchemaOf(s.Nested[i], depth+1) }
	k := KindOf(s)
	if kind, ok := leafSchemas[k]; ok {
		return snapshot.Schema{Kind: kind}
	}
	switch k {
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "StringValue", "NullValue", "CopyableValue", "Value", "Void":
		return valueTypeSchema(s, k)
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return nested(0)
		}
	case "SqlTimestamp": // [milliseconds, nanos]
		long := snapshot.Schema{Kind: snapshot.SchemaInt64}
		return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &long}
	case "TimeWindow":
		long := snapshot.Schema{Kind: snapshot.SchemaInt64}
		return Struct([]string{"start", "end"}, []snapshot.Schema{long, long})
	case "IntEnum":
		if len(s.Constants) == 0 {
			return snapshot.Schema{Kind: snapshot.SchemaInt32}
		}
		return snapshot.Schema{Kind: snapshot.SchemaString}
	case "Pojo":
		if len(s.Fields) == len(s.Nested) {
			fields := make([]snapshot.Schema, len(s.Nested))
			for i := range s.Nested {
				fields[i] = nested(i)
			}
			st := Struct(s.Fields, fields)
			st.Partial = true // a subclass's fields are written by a serializer of its own
			return st
		}
	case "Row", "Tuple":
		if len(s.Nested) > 0 {
			var names []string
			var fields []snapshot.Schema
			withKind := k == "Row" && rowKindBits(s) > 0
			if withKind { // a changelog row, as RowData's: its kind first
				names, fields = []string{snapshot.RowKindField}, []snapshot.Schema{{Kind: snapshot.SchemaString}}
			}
			for i := range s.Nested {
				names, fields = append(names, "f"+strconv.Itoa(i)), append(fields, nested(i))
			}
			st := Struct(names, fields)
			st.RowKind = withKind
			return st
		}
	case "GenericArray", "List", "Set":
		if len(s.Nested) == 1 {
			elem := nested(0)
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem, Partial: elem.Partial}
		}
	case "Timer":
		if len(s.Nested) == 2 {
			return Struct([]string{"timestamp", "key", "namespace"}, []snapshot.Schema{{Kind: snapshot.SchemaInt64}, nested(0), nested(1)})
		}
	case "TTL":
		if a, b, tsFirst, ok := ttlParts(s); ok {
			if !tsFirst {
				a, b = b, a
			}
			return Struct([]string{"last_access", "value"}, []snapshot.Schema{SchemaOf(a, depth+1), SchemaOf(b, depth+1)})
		}
	case "Option":
		if len(s.Nested) == 1 {
			inner := nested(0)
			inner.Partial = true // Some(null) is not decoded
			return inner
		}
	case "Nullable":
		if len(s.Nested) == 1 {
			return nested(0)
		}
	case "Union":
		if len(s.Nested) == 2 {
			return Struct(unionSides[:], []snapshot.Schema{nested(0), nested(1)})
		}
	case "Either":
		if len(s.Nested) == 2 {
			return Struct([]string{"left", "right"}, []snapshot.Schema{nested(0), nested(1)})
		}
	case "Entry":
		if len(s.Nested) == 2 {
			return Struct([]string{"key", "value"}, []snapshot.Schema{nested(0), nested(1)})
		}
	case "Broadcast":
		if len(s.Nested) == 2 {
			entry := Struct([]string{"key", "value"}, []snapshot.Schema{nested(0), nested(1)})
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &entry, Partial: entry.Partial}
		}
	case "Map":
		if len(s.Nested) == 2 {
			key, value := nested(0), nested(1)
			return snapshot.Schema{Kind: snapshot.SchemaMap, Key: &key, Elem: &value, Partial: key.Partial || value.Partial}
		}
	default:
		if f := familyOf(s); f != nil {
			if f.Schema != nil {
				if sc, ok := f.Schema(s, depth); ok {
					return sc
				}
			}
			break
		}
		if e, ok := strings.CutPrefix(k, "Array:"); ok {
			elem := SchemaOf(elementSnapshot(e), depth+1)
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem}
		}
	}
	return anyJSON
}

// Struct is the schema of a struct of the named fields, Partial where
// one of them is.
func Struct(names []string, fields []snapshot.Schema) snapshot.Schema {
	st := snapshot.Schema{Kind: snapshot.SchemaStruct}
	for i, f := range fields {
		st.Fields = append(st.Fields, snapshot.Field{Name: names[i], Schema: f})
		st.Partial = st.Partial || f.Partial
	}
	return st
}
