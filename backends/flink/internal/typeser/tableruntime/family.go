package tableruntime

import (
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Family is the Table runtime's serializers (flink-table-runtime):
// RowData (rowdata.go, rowdata_encode.go) and the others its operators'
// state holds (planner.go).
var Family = &typeser.Family{
	Name: "table",
	Kind: tableKind,
	Snapshots: map[string]typeser.SnapshotParser{
		"RowDataSerializer$RowDataSerializerSnapshot":   parseRowDataSnapshot,
		"ExternalSerializer$ExternalSerializerSnapshot": parseExternalSnapshot,
		"SortedMapSerializerSnapshot":                   parseSortedMapSnapshot,
		// The snapshots RowData's nest.
		"ArrayDataSerializer$ArrayDataSerializerSnapshot":         javaObjectsSnapshot(2, "ArrayData"),
		"MapDataSerializer$MapDataSerializerSnapshot":             javaObjectsSnapshot(4, "MapData"),
		"DecimalDataSerializer$DecimalSerializerSnapshot":         intsSnapshot(2, "decimal precision and scale"),
		"TimestampDataSerializer$TimestampDataSerializerSnapshot": intsSnapshot(1, "timestamp precision"),
	},
	Exprs: map[string]typeser.ExprLeaf{
		"external": {Class: "table.runtime.typeutils.ExternalSerializer$ExternalSerializerSnapshot"},
		// RowData whose snapshot is not at hand: its values are walked, not decoded.
		"rowdata":    {Class: "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"},
		"sortedmap":  {Class: "table.runtime.typeutils.SortedMapSerializerSnapshot"},
		"stringdata": {Class: "table.runtime.typeutils.StringDataSerializer$StringDataSerializerSnapshot"},
	},
	Expr:   tableTypeExpr,
	Walk:   walkTable,
	Schema: tableSchema,
	Sized:  tableSized,
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
	return plannerKind(n)
}

func tableTypeExpr(s *typeser.SerializerSnapshot, kind string, nested func() string) (string, bool) {
	switch kind {
	case "RowData":
		return "rowdata", true
	case "StringData":
		return "stringdata", true
	case "External", "SortedMap":
		if len(s.Nested) > 0 {
			return strings.ToLower(kind) + "(" + nested() + ")", true
		}
	}
	return "", false
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
	return walkPlanner(r, s, depth, decode)
}

func tableSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch typeser.KindOf(s) {
	case "RowData", "BinaryRow":
		return true
	}
	return plannerSized(s, depth)
}

func encodeTable(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	if typeser.KindOf(s) == "RowData" {
		if s.LogicalTypes == nil {
			return nil, false, nil
		}
		b, err := encodeRowData(b, s, v)
		return b, true, err
	}
	return encodePlanner(b, s, v, depth)
}
