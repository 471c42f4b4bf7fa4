package tableruntime

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// The Table runtime's RowData: its serializer snapshot lists each field's
// logical type (a Java-serialized LogicalType) and serializer; a value is
// an int length and a BinaryRowData: a header byte and null bits padded to
// 8-byte words, one 8-byte little-endian slot per field, then the
// variable-length part that slots point into. Arrays (BinaryArrayData) and
// maps (BinaryMapData, two arrays) nest the same way, their offsets
// relative to their own start.

// parseRowDataSnapshot reads a RowDataSerializerSnapshot (version 3+): a
// field count, each field's logical type, then the nested snapshots.
func parseRowDataSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	r := sr.R
	if s.Version < 3 {
		r.Fail("RowData serializer snapshot version %d", s.Version)
		return
	}
	n := r.Count32(4, "RowData field count")
	s.LogicalTypes = make([]typeser.LogicalType, 0, n) // a row of no fields has its types: none
	for i := 0; i < n && r.Err == nil; i++ {
		obj, used, classes, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
		if err != nil {
			r.Err = err
			return
		}
		r.Off += used
		t := logicalTypeOf(obj, 0)
		if t.Class == "" && len(classes) > 0 {
			t.Class = classes[0]
		}
		s.LogicalTypes = append(s.LogicalTypes, t)
	}
	k := sr.NestedSnapshots(s, cont, depth)
	if r.Err == nil && k != n {
		r.Fail("RowData snapshot with %d logical types and %d serializers", n, k)
	}
}

// javaObjectsSnapshot parses a snapshot body of n Java-serialization
// streams (ArrayData's: element type and serializer; MapData's: key and
// value types and serializers).
func javaObjectsSnapshot(n int, what string) func(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	return func(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
		r := sr.R
		for i := 0; i < n && r.Err == nil; i++ {
			_, used, _, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
			if err != nil {
				r.Err = fmt.Errorf("%s serializer snapshot: %w", what, err)
				return
			}
			r.Off += used
		}
	}
}

// intsSnapshot parses a snapshot body of n ints.
func intsSnapshot(n int, what string) func(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	return func(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
		for i := 0; i < n; i++ {
			sr.R.I32(what)
		}
	}
}

// logicalTypeOf reads a walked Java LogicalType object. What it does not
// recognise keeps an empty Root, and its values are not decoded.
func logicalTypeOf(v any, depth int) typeser.LogicalType {
	o, ok := v.(*javaser.Object)
	if !ok || depth > maxRowDepth {
		return typeser.LogicalType{}
	}
	t := typeser.LogicalType{Class: o.Class}
	if e, ok := o.Field("typeRoot").(*javaser.Enum); ok {
		t.Root = e.Constant
	}
	t.Precision, _ = o.Field("precision").(int32)
	t.Scale, _ = o.Field("scale").(int32)
	sub := func(name string) *typeser.LogicalType {
		c := logicalTypeOf(o.Field(name), depth+1)
		return &c
	}
	switch t.Root {
	case "ARRAY", "MULTISET":
		t.Elem = sub("elementType")
	case "MAP":
		t.Key, t.Value = sub("keyType"), sub("valueType")
	case "ROW":
		fields, ok := javaListElements(o.Field("fields"), 0)
		if !ok {
			t.Root = "" // a list class this walk does not know
		}
		for _, f := range fields {
			fo, ok := f.(*javaser.Object)
			name, _ := fo.Field("name").(string)
			if !ok {
				t.Root = ""
				break
			}
			t.Fields = append(t.Fields, typeser.RowField{Name: name, Type: logicalTypeOf(fo.Field("type"), depth+1)})
		}
	case "RAW":
		if c, ok := o.Field("clazz").(*javaser.Class); ok {
			t.RawClass = c.Name
		}
		if c, ok := o.Field("serializer").(*javaser.Object); ok {
			t.RawSerializer = c.Class
		}
	}
	return t
}

// javaListElements are the elements of a serialized ArrayList, or of the
// unmodifiable view of one that RowType keeps.
func javaListElements(v any, depth int) ([]any, bool) {
	o, ok := v.(*javaser.Object)
	if !ok || depth > 2 {
		return nil, false
	}
	switch o.Class {
	case "java.util.ArrayList":
		var out []any
		for _, a := range o.Annotations {
			if _, isBlock := a.([]byte); !isBlock {
				out = append(out, a)
			}
		}
		return out, true
	case "java.util.Collections$UnmodifiableRandomAccessList", "java.util.Collections$UnmodifiableList":
		return javaListElements(o.Field("list"), depth+1)
	}
	return nil, false
}

// maxRowDepth bounds rows, arrays and maps nested in each other.
const maxRowDepth = 16

// decodeRowData decodes one BinaryRowData of the snapshot's field types.
func decodeRowData(r *wire.Reader, s *typeser.SerializerSnapshot) any {
	at := r.Pos()
	row := r.Bytes32("RowData")
	if r.Err != nil {
		return nil
	}
	v, err := binRow(row, s.LogicalTypes, nil, 0)
	var nd *snapshot.NotDecodedError
	switch {
	case errors.As(err, &nd):
		r.Err = nd
		r.Off = len(r.Buf)
	case err != nil:
		r.FailAt(at, "RowData: %v", err)
	}
	return v
}

// maxNanoOfMillisecond is the most nanoseconds Flink's TimestampData holds
// within its millisecond.
const maxNanoOfMillisecond = 999_999

// errOutside is the damage error of a slot pointing outside its container.
func errOutside(what string, size int) error {
	return fmt.Errorf("%s points outside its %d bytes", what, size)
}

// binRow decodes a BinaryRowData: a list of its fields' values, or, where
// names are given (a ROW type's fields), an object by name.
func binRow(row []byte, types []typeser.LogicalType, names []string, depth int) (any, error) {
	if depth > maxRowDepth {
		return nil, fmt.Errorf("rows nested deeper than %d", maxRowDepth)
	}
	n := len(types)
	nullBits := rowNullBytes(n)
	if len(row) < nullBits+8*n {
		return nil, fmt.Errorf("row of %d bytes cannot hold %d fields", len(row), n)
	}
	list := make([]any, n)
	for i, t := range types {
		if bit := i + 8; row[bit/8]&(1<<(bit%8)) != 0 {
			continue
		}
		v, err := binField(row, nullBits+8*i, t, depth)
		if err != nil {
			return nil, fieldErr(err, fmt.Sprintf("field %d (%s)", i, t.Short()))
		}
		list[i] = v
	}
	var v any = list
	if names != nil {
		obj := make(map[string]any, n)
		for i, name := range names {
			obj[name] = list[i]
		}
		v = obj
	}
	return typeser.WithRowKind(row[0], v)
}

// fieldErr says where a damage error is; a not-decoded one passes as is.
func fieldErr(err error, where string) error {
	if errors.Is(err, snapshot.ErrNotDecoded) {
		return err
	}
	return fmt.Errorf("%s: %w", where, err)
}

// rowNullBytes is the size of a row's header and null bits.
func rowNullBytes(arity int) int { return ((arity + 63 + 8) / 64) * 8 }

// binField decodes the value of type t whose fixed-size part is at
// buf[off:], in the container buf (a row or an array) its offsets are
// relative to.
func binField(buf []byte, off int, t typeser.LogicalType, depth int) (any, error) {
	size := fixedSize(t.Root)
	if off < 0 || off+size > len(buf) {
		return nil, errOutside("slot", len(buf))
	}
	slot := buf[off : off+size]
	switch t.Root {
	case "BOOLEAN":
		return slot[0] != 0, nil
	case "TINYINT":
		return int8(slot[0]), nil
	case "SMALLINT":
		return int16(binary.LittleEndian.Uint16(slot)), nil
	case "INTEGER", "DATE", "TIME_WITHOUT_TIME_ZONE", "INTERVAL_YEAR_MONTH":
		return int32(binary.LittleEndian.Uint32(slot)), nil
	case "BIGINT", "INTERVAL_DAY_TIME":
		return int64(binary.LittleEndian.Uint64(slot)), nil
	case "FLOAT":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(slot))), nil
	case "DOUBLE":
		return math.Float64frombits(binary.LittleEndian.Uint64(slot)), nil
	case "CHAR", "VARCHAR":
		b, err := variablePart(buf, slot)
		return string(b), err
	case "BINARY", "VARBINARY":
		b, err := variablePart(buf, slot)
		return "0x" + hex.EncodeToString(b), err
	case "DECIMAL":
		return binDecimal(buf, slot, t)
	case "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
		u := binary.LittleEndian.Uint64(slot)
		if t.Precision <= 3 {
			return int64(u), nil
		}
		at := int(u >> 32)
		if at+8 > len(buf) {
			return nil, errOutside("timestamp", len(buf))
		}
		// Flink's TimestampData holds the nanoseconds within a millisecond.
		if nanos := uint32(u); nanos > maxNanoOfMillisecond {
			return nil, fmt.Errorf("timestamp's nanoseconds of its millisecond are %d, over %d", nanos, maxNanoOfMillisecond)
		}
		return map[string]any{"millisecond": int64(binary.LittleEndian.Uint64(buf[at:])), "nanoOfMillisecond": int32(uint32(u))}, nil
	case "ARRAY", "MULTISET", "MAP", "ROW":
		b, err := offsetPart(buf, slot)
		if err != nil {
			return nil, err
		}
		return binNested(b, t, depth+1)
	case "NULL":
		return nil, nil
	case "RAW":
		if t.RawSerializer == dataViewPlaceholder {
			b, err := variablePart(buf, slot)
			return map[string]any{"class": t.RawClass, "bytes": "0x" + hex.EncodeToString(b)}, err
		}
	}
	class := t.Class
	if t.RawClass != "" {
		class += "<" + t.RawClass + ">"
	}
	return nil, &snapshot.NotDecodedError{Serializer: rowDataSerializer, ValueClass: class}
}

// dataViewPlaceholder is the serializer of the RAW field that stands in an
// aggregate's accumulator for a DataView kept in state of its own (a
// DISTINCT aggregate's MapView): such a field is its class and the bytes
// written, which hold nothing of the view.
const dataViewPlaceholder = "org.apache.flink.table.dataview.NullSerializer"

// rowDataSerializer is the serializer a not-decoded RowData field names.
const rowDataSerializer = "org.apache.flink.table.runtime.typeutils.RowDataSerializer"

// binNested decodes an ARRAY, MULTISET, MAP or ROW from its bytes.
func binNested(b []byte, t typeser.LogicalType, depth int) (any, error) {
	switch t.Root {
	case "ARRAY":
		return binArray(b, *t.Elem, depth)
	case "ROW":
		types := make([]typeser.LogicalType, len(t.Fields))
		names := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			types[i], names[i] = f.Type, f.Name
		}
		return binRow(b, types, names, depth)
	}
	key, value := t.Key, t.Value
	if t.Root == "MULTISET" {
		key, value = t.Elem, &typeser.LogicalType{Class: "IntType", Root: "INTEGER"}
	}
	return binMap(b, *key, *value, depth)
}

// binMap decodes a BinaryMapData: an int, the key array's size, the key
// array, the value array; as a list of [key, value] pairs in their order.
func binMap(b []byte, kt, vt typeser.LogicalType, depth int) (any, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("map of %d bytes", len(b))
	}
	ks := int64(int32(binary.LittleEndian.Uint32(b)))
	if ks < 0 || 4+ks > int64(len(b)) {
		return nil, fmt.Errorf("map key array of %d bytes in %d", ks, len(b))
	}
	keys, err := binArray(b[4:4+ks], kt, depth)
	if err != nil {
		return nil, fieldErr(err, "map keys")
	}
	values, err := binArray(b[4+ks:], vt, depth)
	if err != nil {
		return nil, fieldErr(err, "map values")
	}
	if len(keys) != len(values) {
		return nil, fmt.Errorf("map of %d keys and %d values", len(keys), len(values))
	}
	out := make([]any, len(keys))
	for i := range keys {
		out[i] = []any{keys[i], values[i]}
	}
	return out, nil
}

// binArray decodes a BinaryArrayData: an int count, null bits padded to
// 4-byte words, the elements' fixed-size parts, then the variable part.
func binArray(b []byte, et typeser.LogicalType, depth int) ([]any, error) {
	if depth > maxRowDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d", maxRowDepth)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("array of %d bytes", len(b))
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	size := int64(fixedSize(et.Root))
	if n < 0 || arrayHeaderBytes(n)+n*size > int64(len(b)) {
		return nil, fmt.Errorf("array of %d bytes cannot hold %d elements", len(b), n)
	}
	head := int(arrayHeaderBytes(n))
	out := make([]any, n)
	for i := 0; i < int(n); i++ {
		if b[4+i/8]&(1<<(i%8)) != 0 {
			continue
		}
		v, err := binField(b, head+i*int(size), et, depth)
		if err != nil {
			return nil, fieldErr(err, fmt.Sprintf("element %d", i))
		}
		out[i] = v
	}
	return out, nil
}

// arrayHeaderBytes is the count and null bits of an array of n elements.
func arrayHeaderBytes(n int64) int64 { return 4 + (n+31)/32*4 }

// fixedSize is the size of a value's fixed part in an array (in a row,
// every slot is 8 bytes and these are its first bytes).
func fixedSize(root string) int {
	switch root {
	case "BOOLEAN", "TINYINT":
		return 1
	case "SMALLINT":
		return 2
	case "INTEGER", "FLOAT", "DATE", "TIME_WITHOUT_TIME_ZONE", "INTERVAL_YEAR_MONTH":
		return 4
	}
	return 8
}

// binDecimal decodes a DECIMAL: the unscaled long in the slot when its
// precision is at most 18, else the unscaled big-endian two's complement
// bytes at the offset and size the slot holds.
func binDecimal(buf, slot []byte, t typeser.LogicalType) (any, error) {
	var unscaled *big.Int
	if t.Precision <= 18 {
		unscaled = big.NewInt(int64(binary.LittleEndian.Uint64(slot)))
	} else {
		b, err := offsetPart(buf, slot)
		if err != nil {
			return nil, err
		}
		if len(b) > 16 {
			return nil, fmt.Errorf("decimal of %d bytes", len(b))
		}
		unscaled = new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	}
	return json.Number(decimalText(unscaled, int(t.Scale))), nil
}

// decimalText writes unscaled / 10^scale with scale digits after the point.
func decimalText(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if scale <= 0 {
		return sign + digits + strings.Repeat("0", -scale)
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

// variablePart returns the bytes of a string or binary field: inline in
// its slot when short (the slot's top bit set, its length in the top
// byte), else at the offset and size the slot holds.
func variablePart(buf, slot []byte) ([]byte, error) {
	if slot[7]&0x80 != 0 {
		n := int(slot[7] & 0x7f)
		if n > 7 {
			return nil, fmt.Errorf("inline bytes of length %d", n)
		}
		return slot[:n], nil
	}
	return offsetPart(buf, slot)
}

// offsetPart is the part of buf at the offset (high word) and size (low
// word) of a slot.
func offsetPart(buf, slot []byte) ([]byte, error) {
	u := binary.LittleEndian.Uint64(slot)
	off, size := int64(u>>32), int64(uint32(u))
	if off+size > int64(len(buf)) {
		return nil, errOutside(fmt.Sprintf("offset %d size %d", off, size), len(buf))
	}
	return buf[off : off+size], nil
}
