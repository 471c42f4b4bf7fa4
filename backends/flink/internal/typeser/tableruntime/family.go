package tableruntime

import (
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Family is the Table runtime's serializers (flink-table-runtime, and the
// DataView serializers of flink-table-common): RowData (rowdata.go,
// rowdata_encode.go), the planner's others (planner.go), the data
// structures' own (data.go), the accumulators' collections and views
// (views.go) and the operators' (operators.go).
var Family = &typeser.Family{
	Name: "table",
	Kind: tableKind,
	Snapshots: map[string]typeser.SnapshotParser{
		"RowDataSerializer$RowDataSerializerSnapshot":             parseRowDataSnapshot,
		"ExternalSerializer$ExternalSerializerSnapshot":           parseExternalSnapshot,
		"SortedMapSerializerSnapshot":                             parseSortedMapSnapshot,
		"ArrayDataSerializer$ArrayDataSerializerSnapshot":         parseTypesSnapshot(1, "ArrayData"),
		"MapDataSerializer$MapDataSerializerSnapshot":             parseTypesSnapshot(2, "MapData"),
		"DecimalDataSerializer$DecimalSerializerSnapshot":         parseDecimalSnapshot,
		"TimestampDataSerializer$TimestampDataSerializerSnapshot": parseTimestampSnapshot,
		"LinkedListSerializer$LinkedListSerializerSnapshot":       parseLinkedListSnapshot,
		"BinaryRowDataSerializer$BinaryRowDataSerializerSnapshot": parseBinaryRowSnapshot,
		"RowDataKeySerializerSnapshot":                            parseRowDataKeySnapshot,
	},
	Exprs: map[string]typeser.ExprLeaf{
		"external": {Class: "table.runtime.typeutils.ExternalSerializer$ExternalSerializerSnapshot"},
		// RowData whose snapshot is not at hand: its values are walked, not decoded.
		"rowdata":      {Class: "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"},
		"sortedmap":    {Class: "table.runtime.typeutils.SortedMapSerializerSnapshot"},
		"stringdata":   {Class: "table.runtime.typeutils.StringDataSerializer$StringDataSerializerSnapshot"},
		"rawvaluedata": {Class: "table.runtime.typeutils.RawValueDataSerializer$RawValueDataSerializerSnapshot"},
		"dataviewnull": {Class: "org.apache.flink.table.dataview.NullSerializer$NullSerializerSnapshot"},
		"listview":     {Class: "org.apache.flink.table.dataview.ListViewSerializerSnapshot"},
		"mapview":      {Class: "org.apache.flink.table.dataview.MapViewSerializerSnapshot"},
		"nullawaremap": {Class: "org.apache.flink.table.dataview.NullAwareMapSerializerSnapshot"},
		"countwindow":  {Class: "table.runtime.operators.window.CountWindow$Serializer$CountWindowSerializerSnapshot"},
		"sortedlong":   {Class: "table.runtime.operators.sink.SortedLongSerializer$SortedLongSerializerSnapshot"},
	},
	Expr:   tableTypeExpr,
	Walk:   walkTable,
	Schema: tableSchema,
	Sized:  tableSized,
	Widths: map[string]int{"CountWindow": 8, "SortedLong": 8, "NullView": 1},
	Width:  tableWidth,
	Encode: encodeTable,
	Hash:   hashBinaryRow,
	Notes: map[string]string{
		"BinaryRow": "its snapshot records no field types: walked by its length, not decoded",
		"RowData":   "decoded by the fields' logical types its snapshot records",
	},
}

// tableKind classifies the Table runtime's serializers.
func tableKind(n string) string {
	switch {
	case strings.Contains(n, "typeutils.RowDataSerializer"):
		return "RowData"
	case strings.HasPrefix(n, "org.apache.flink.table.runtime.typeutils.BinaryRowDataSerializer"):
		return "BinaryRow"
	}
	for _, kind := range []func(string) string{plannerKind, dataKind, viewKind, operatorKind} {
		if k := kind(n); k != "" {
			return k
		}
	}
	return ""
}

// exprWords are the type expression words of the kinds whose snapshot is
// all their values need beside their nested serializers'.
var exprWords = map[string]string{
	"StringData": "stringdata", "RawValueData": "rawvaluedata", "NullView": "dataviewnull",
	"ListView": "listview", "MapView": "mapview", "NullAwareMap": "nullawaremap",
	"CountWindow": "countwindow", "SortedLong": "sortedlong", "External": "external", "SortedMap": "sortedmap",
}

// snapshotWords are the type expression words of the kinds whose values
// need their snapshot's bytes (logical types, flags), which the type keeps.
var snapshotWords = map[string]string{
	"RowData": "rowdata", "ArrayData": "arraydata", "MapData": "mapdata", "DecimalData": "decimaldata",
	"TimestampData": "timestampdata", "LinkedList": "linkedlist", "WindowKey": "windowkey",
	"SqnNode": "sqnnode", "MetaSqnInfo": "metasqninfo", "RowSqnInfo": "rowsqninfo", "RowDataKey": "rowdatakey",
}

func tableTypeExpr(s *typeser.SerializerSnapshot, kind string, nested func() string) (string, bool) {
	word, ok := exprWords[kind]
	if !ok {
		word, ok = snapshotWords[kind]
	}
	switch {
	case !ok:
		return "", false
	case len(s.Nested) > 0 && kind != "RowData":
		return word + "(" + nested() + ")", true
	}
	return word, true
}

// A RowData (and a BinaryRowData) is an int length and the row's bytes,
// so its values are walked whatever the snapshot says of their fields;
// decoding them needs the fields' logical types (nil: the snapshot does
// not give them; empty: a row of no fields).
func walkTable(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	switch typeser.KindOf(s) {
	case "RowData", "BinaryRow":
		if !decode {
			r.Bytes32("RowData")
			return nil, true
		}
		if s.LogicalTypes == nil || typeser.KindOf(s) == "BinaryRow" {
			return nil, false
		}
		return decodeRowData(r, s), true
	}
	for _, walk := range []func(*wire.Reader, *typeser.SerializerSnapshot, int, bool) (any, bool){walkPlanner, walkData, walkView, walkOperator} {
		if v, ok := walk(r, s, depth, decode); ok || r.Err != nil {
			return v, ok
		}
	}
	return nil, false
}

func tableSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch typeser.KindOf(s) {
	case "RowData", "BinaryRow":
		return true
	}
	return plannerSized(s, depth) || dataSized(s, depth) || viewSized(s, depth) || operatorSized(s, depth)
}

// tableWidth is the byte width of every value of s where it hangs on the
// snapshot: a TimestampData's precision, the serializer an
// ExternalSerializer wraps.
func tableWidth(s *typeser.SerializerSnapshot) int {
	if typeser.KindOf(s) == "External" && len(s.Nested) == 1 {
		return max(typeser.FixedLength(s.Nested[0]), 0)
	}
	return dataWidth(s)
}

func encodeTable(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	if typeser.KindOf(s) == "RowData" {
		if s.LogicalTypes == nil {
			return nil, false, nil
		}
		b, err := encodeRowData(b, s, v)
		return b, true, err
	}
	for _, encode := range []func([]byte, *typeser.SerializerSnapshot, any, int) ([]byte, bool, error){encodePlanner, encodeData, encodeView, encodeOperator} {
		if out, ok, err := encode(b, s, v, depth); ok {
			return out, true, err
		}
	}
	return nil, false, nil
}
