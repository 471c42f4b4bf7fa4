package snapshot

import "fmt"

// Schema describes the values a codec decodes, so that they can be held
// in typed columns (stateutil sql, dump -o parquet) rather than as JSON
// text: a scalar, a struct of named fields, a list, a map, any JSON value,
// or bytes that never decode.
type Schema struct {
	Kind SchemaKind
	// Fields are a struct's, in order. A decoded struct is a
	// map[string]any by field name, or a []any by position (a tuple).
	Fields []Field
	// Elem is a list's elements and a map's values; Key a map's keys,
	// which decode as the text of a JSON object's keys.
	Elem, Key *Schema
	// Partial says that some well-formed values of the type do not decode
	// to the schema (a POJO's subclass, a class under Kryo) but come as a
	// NotDecoded, to be kept beside the typed column.
	Partial bool
	// Class is the class of the values a SchemaUndecoded type holds.
	Class string
	// RowKind says a struct is a changelog row, whose first field,
	// "row_kind", is its kind: such a row decodes as the other fields
	// alone (an INSERT), or as {"@rowkind": KIND, "@row": fields}.
	RowKind bool
}

// RowKindField names the first field of a struct schema with RowKind.
const RowKindField = "row_kind"

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Schema Schema
}

// SchemaKind is the shape of a schema's values.
type SchemaKind uint8

// The kinds of Schema. The integers and floats decode as any Go integer
// or float; SchemaBytes as a []byte or "0x"-prefixed hex text.
const (
	SchemaJSON      SchemaKind = iota // any JSON value
	SchemaNull                        // only null (a void namespace)
	SchemaBool                        // bool
	SchemaInt8                        // 8-bit integer
	SchemaInt16                       // 16-bit integer
	SchemaInt32                       // 32-bit integer
	SchemaInt64                       // 64-bit integer
	SchemaFloat32                     // 32-bit float
	SchemaFloat64                     // 64-bit float
	SchemaString                      // UTF-8 text (also a decimal's exact text as a json.Number, a date's number)
	SchemaBytes                       // a byte string
	SchemaStruct                      // named fields
	SchemaList                        // elements of one schema
	SchemaMap                         // keys and values of one schema each
	SchemaUndecoded                   // never decoded: every value is a NotDecoded
)

// Describer is implemented by a codec that knows the schema of the values
// it decodes.
type Describer interface {
	Schema() Schema
}

// Schema is the schema of type t's values: its codec's, where the codec
// describes them; any JSON value, maybe not decoded, where it does not;
// and for a type no codec knows, bytes that are never decoded.
func (c *Codecs) Schema(t Type) Schema {
	codec, err := c.Codec(t)
	if err != nil {
		return Schema{Kind: SchemaUndecoded, Class: t.String()}
	}
	if d, ok := codec.(Describer); ok {
		return d.Schema()
	}
	return Schema{Kind: SchemaJSON, Partial: true}
}

// Leaf schemas.
var (
	schemaString = Schema{Kind: SchemaString}
	schemaInt32  = Schema{Kind: SchemaInt32}
	schemaInt64  = Schema{Kind: SchemaInt64}
	schemaBytes  = Schema{Kind: SchemaBytes}
	schemaJSON   = Schema{Kind: SchemaJSON}
	schemaNull   = Schema{Kind: SchemaNull}
)

func (stringCodec) Schema() Schema { return schemaString }
func (bytesCodec) Schema() Schema  { return schemaBytes }
func (msgpackCodec) Schema() Schema {
	return schemaJSON
}
func (jsonCodec) Schema() Schema { return schemaJSON }
func (voidCodec) Schema() Schema { return schemaNull }

func (c fixedWidth) Schema() Schema {
	if c.width == 4 {
		return schemaInt32
	}
	return schemaInt64
}

// String renders the schema as a SQL-like type, for messages and tests.
func (s Schema) String() string {
	switch s.Kind {
	case SchemaStruct:
		out := "struct("
		for i, f := range s.Fields {
			if i > 0 {
				out += ", "
			}
			out += f.Name + " " + f.Schema.String()
		}
		return out + ")"
	case SchemaList:
		return "list(" + s.Elem.String() + ")"
	case SchemaMap:
		return "map(" + s.Key.String() + ", " + s.Elem.String() + ")"
	case SchemaUndecoded:
		return "undecoded(" + s.Class + ")"
	}
	if int(s.Kind) < len(schemaKindNames) {
		return schemaKindNames[s.Kind]
	}
	return fmt.Sprintf("kind(%d)", s.Kind)
}

var schemaKindNames = []string{
	SchemaJSON: "json", SchemaNull: "null", SchemaBool: "bool", SchemaInt8: "int8", SchemaInt16: "int16",
	SchemaInt32: "int32", SchemaInt64: "int64", SchemaFloat32: "float32", SchemaFloat64: "float64",
	SchemaString: "string", SchemaBytes: "bytes",
}
