package tableruntime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// The internal data structures' own serializers, as state holds them
// outside a row (a DataView's keys and values, a retracting FIRST_VALUE's
// order maps), Flink 1.15 to 2.3 alike:
//   - ArrayDataSerializer, MapDataSerializer: an int length, then a
//     BinaryArrayData or BinaryMapData as a row nests them; the snapshot
//     is the Java-serialized element (key and value) types, then their
//     Java-serialized serializers.
//   - DecimalDataSerializer: the unscaled long when the precision is at
//     most 18, else an int length and the unscaled big-endian two's
//     complement bytes; the snapshot is the precision and the scale.
//   - TimestampDataSerializer: the epoch milliseconds, then, above
//     precision 3, an int of nanoseconds within the millisecond; the
//     snapshot is the precision.
//   - RawValueDataSerializer: an int length, then the bytes of the
//     serializer its composite snapshot nests.
// Their JSON is a row field's of the same type, a RAW value the value of
// its serializer.

// dataKind classifies the serializers of this file.
func dataKind(n string) string {
	if !strings.Contains(n, "table.runtime.typeutils.") {
		return ""
	}
	for _, k := range []string{"ArrayData", "MapData", "DecimalData", "TimestampData", "RawValueData"} {
		if strings.Contains(n, "typeutils."+k+"Serializer") {
			return k
		}
	}
	return ""
}

// parseTypesSnapshot reads a snapshot body of Java-serialization streams:
// types logical types, kept in s.LogicalTypes, then as many serializers.
func parseTypesSnapshot(types int, what string) typeser.SnapshotParser {
	return func(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
		r := sr.R
		for i := 0; i < 2*types && r.Err == nil; i++ {
			obj, used, _, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
			if err != nil {
				r.Err = fmt.Errorf("%s serializer snapshot: %w", what, err)
				return
			}
			r.Off += used
			if i < types {
				s.LogicalTypes = append(s.LogicalTypes, logicalTypeOf(obj, 0))
			}
		}
	}
}

// parseDecimalSnapshot reads a DecimalSerializerSnapshot: the precision,
// then the scale.
func parseDecimalSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	t := typeser.LogicalType{Class: logicalPackage + "DecimalType", Root: "DECIMAL"}
	t.Precision = sr.R.I32("decimal precision")
	t.Scale = sr.R.I32("decimal scale")
	s.LogicalTypes = []typeser.LogicalType{t}
}

// parseTimestampSnapshot reads a TimestampDataSerializerSnapshot: the
// precision.
func parseTimestampSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	t := typeser.LogicalType{Class: logicalPackage + "TimestampType", Root: "TIMESTAMP_WITHOUT_TIME_ZONE"}
	t.Precision = sr.R.I32("timestamp precision")
	s.LogicalTypes = []typeser.LogicalType{t}
}

// logicalPackage holds Flink's logical type classes.
const logicalPackage = "org.apache.flink.table.types.logical."

// dataTypes are the logical types a snapshot of kind gives its values,
// when it gives them all.
func dataTypes(s *typeser.SerializerSnapshot, kind string) ([]typeser.LogicalType, bool) {
	want := map[string]int{"ArrayData": 1, "MapData": 2, "DecimalData": 1, "TimestampData": 1}[kind]
	if len(s.LogicalTypes) != want {
		return nil, false
	}
	for _, t := range s.LogicalTypes {
		if !typeKnown(t, 0) {
			return nil, false
		}
	}
	return s.LogicalTypes, true
}

// typeKnown reports whether a logical type was read from its snapshot.
func typeKnown(t typeser.LogicalType, depth int) bool {
	if t.Root == "" || depth > maxRowDepth {
		return false
	}
	for _, n := range []*typeser.LogicalType{t.Elem, t.Key, t.Value} {
		if n != nil && !typeKnown(*n, depth+1) {
			return false
		}
	}
	for _, f := range t.Fields {
		if !typeKnown(f.Type, depth+1) {
			return false
		}
	}
	return true
}

// dataWidth is the byte width of every TimestampData of a snapshot
// (getLength: the millis, and the nanos above precision 3), or 0.
func dataWidth(s *typeser.SerializerSnapshot) int {
	if typeser.KindOf(s) != "TimestampData" {
		return 0
	}
	types, ok := dataTypes(s, "TimestampData")
	if !ok {
		return 0
	}
	if types[0].Precision <= 3 {
		return 8
	}
	return 12
}

// walkData reads one value of a serializer of this file, decoding it when
// decode is set; false where the snapshot lacks what the walk needs.
func walkData(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	kind := typeser.KindOf(s)
	if kind == "RawValueData" {
		return walkRawValue(r, s, depth, decode)
	}
	types, ok := dataTypes(s, kind)
	if !ok {
		return nil, false
	}
	at := r.Pos()
	switch kind {
	case "ArrayData", "MapData":
		b := r.Bytes32(kind)
		if !decode || r.Err != nil {
			return nil, true
		}
		var v any
		var err error
		if kind == "ArrayData" {
			v, err = binArray(b, types[0], 0)
		} else {
			v, err = binMap(b, types[0], types[1], 0)
		}
		return v, binaryErr(r, at, kind, err)
	case "DecimalData":
		if types[0].Precision <= 18 {
			u := r.I64("compact decimal")
			return decimalJSON(big.NewInt(u), types[0]), true
		}
		b := r.Bytes32("decimal")
		if !decode || r.Err != nil {
			return nil, true
		}
		return decimalJSON(signedBytes(b), types[0]), true
	case "TimestampData":
		millis := r.I64("timestamp milliseconds")
		if types[0].Precision <= 3 {
			return millis, true
		}
		nanos := r.I32("timestamp nanoseconds")
		if r.Err == nil && (nanos < 0 || nanos > maxNanoOfMillisecond) {
			r.FailAt(at+8, "timestamp's nanoseconds of its millisecond are %d, not 0 to %d", nanos, maxNanoOfMillisecond)
		}
		return map[string]any{"millisecond": millis, "nanoOfMillisecond": nanos}, true
	}
	return nil, false
}

// binaryErr puts an error of a binary structure's decoding on r: a field
// no decoder walks leaves it not decoded, anything else is damage at. It
// reports true: the value was walked.
func binaryErr(r *wire.Reader, at int64, what string, err error) bool {
	var nd *snapshot.NotDecodedError
	switch {
	case errors.As(err, &nd):
		r.Err = nd
		r.Off = len(r.Buf)
	case err != nil:
		r.FailAt(at, "%s: %v", what, err)
	}
	return true
}

// walkRawValue reads a RawValueData: an int length, then the bytes the
// nested serializer wrote, which must be exactly one of its values.
func walkRawValue(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	if len(s.Nested) != 1 {
		return nil, false
	}
	at := r.Pos() + 4
	b := r.Bytes32("RAW value")
	if r.Err != nil || !decode {
		return nil, true // its length is all a walk needs
	}
	inner := wire.NewReader(b, r.File, at)
	v := typeser.DecodeAny(inner, s.Nested[0], depth+1)
	var nd *snapshot.NotDecodedError
	switch {
	case errors.As(inner.Err, &nd):
		r.Err = nd
		r.Off = len(r.Buf)
	case inner.Err != nil:
		r.Err = inner.Err
	case inner.Remaining() != 0:
		r.FailAt(inner.Pos(), "%d bytes after the RAW value's %d", inner.Remaining(), inner.Off)
	}
	return v, true
}

func dataSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch kind := typeser.KindOf(s); kind {
	case "ArrayData", "MapData", "DecimalData", "TimestampData":
		_, ok := dataTypes(s, kind)
		return ok
	case "RawValueData":
		// Its length bounds it whatever it nests.
		return len(s.Nested) == 1
	}
	return false
}

// encodeData writes a value of a serializer of this file from the JSON
// walkData makes; it reports false for other serializers.
func encodeData(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	kind := typeser.KindOf(s)
	if kind == "RawValueData" {
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		inner, err := typeser.EncodeAny(nil, s.Nested[0], v, depth+1)
		if err != nil {
			return nil, true, err
		}
		return typeser.AppendBytes32(b, inner), true, nil
	}
	types, ok := dataTypes(s, kind)
	if !ok {
		return nil, false, nil
	}
	var p []byte
	var err error
	switch kind {
	case "ArrayData":
		elems, isArray := v.([]any)
		if !isArray {
			return nil, true, fmt.Errorf("want a JSON array, not %v", v)
		}
		p, err = binArrayBytes(types[0], elems, 0)
	case "MapData":
		p, err = binNestedBytes(typeser.LogicalType{Root: "MAP", Key: &types[0], Value: &types[1]}, v, 0)
	case "DecimalData":
		return encodeDecimal(b, types[0], v)
	case "TimestampData":
		return encodeTimestamp(b, types[0], v)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return typeser.AppendBytes32(b, p), true, nil
}

// encodeDecimal writes a DecimalData: the unscaled long, or its bytes.
func encodeDecimal(b []byte, t typeser.LogicalType, v any) ([]byte, bool, error) {
	unscaled, err := decimalOf(t, v)
	if err != nil {
		return nil, true, err
	}
	if t.Precision <= 18 {
		if !unscaled.IsInt64() {
			return nil, true, fmt.Errorf("decimal %v exceeds precision %d", v, t.Precision)
		}
		return binary.BigEndian.AppendUint64(b, uint64(unscaled.Int64())), true, nil
	}
	return typeser.AppendBytes32(b, twosComplement(unscaled)), true, nil
}

// encodeTimestamp writes a TimestampData: the millis, then the nanos above
// precision 3.
func encodeTimestamp(b []byte, t typeser.LogicalType, v any) ([]byte, bool, error) {
	millis, nanos, err := timestampOf(t, v)
	if err != nil {
		return nil, true, err
	}
	b = binary.BigEndian.AppendUint64(b, uint64(millis))
	if t.Precision <= 3 {
		return b, true, nil
	}
	return binary.BigEndian.AppendUint32(b, uint32(nanos)), true, nil
}
