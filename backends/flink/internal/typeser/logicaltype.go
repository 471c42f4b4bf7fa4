package typeser

import "strings"

// LogicalType is a field's SQL type, as far as decoding needs it.
type LogicalType struct {
	Class string `json:"class"` // e.g. org.apache.flink.table.types.logical.BigIntType
	// Root is the LogicalTypeRoot constant (VARCHAR, TIMESTAMP_WITHOUT_TIME_ZONE, ...).
	Root      string `json:"root,omitempty"`
	Precision int32  `json:"precision,omitempty"`
	Scale     int32  `json:"scale,omitempty"`
	// Elem is an ARRAY's or MULTISET's element type, Key and Value a MAP's.
	Elem  *LogicalType `json:"element,omitempty"`
	Key   *LogicalType `json:"key,omitempty"`
	Value *LogicalType `json:"value,omitempty"`
	// Fields are a ROW's fields, with their names.
	Fields []RowField `json:"fields,omitempty"`
	// RawClass is the class a RAW type holds, RawSerializer the class of
	// the serializer that writes it.
	RawClass      string `json:"rawClass,omitempty"`
	RawSerializer string `json:"rawSerializer,omitempty"`
}

// RowField is one named field of a ROW type.
type RowField struct {
	Name string      `json:"name"`
	Type LogicalType `json:"type"`
}

// Short is the type's class without its package ("BigIntType").
func (t LogicalType) Short() string { return t.Class[strings.LastIndex(t.Class, ".")+1:] }
