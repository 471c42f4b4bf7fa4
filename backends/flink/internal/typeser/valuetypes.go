package typeser

import (
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// flink-core's serializers of Flink's own Value types
// (org.apache.flink.types), and of java.lang.Void:
//
//   - BooleanValueSerializer ... StringValueSerializer write the value as
//     its own write method does: a boolean, a byte, a char, a double, a
//     float, an int, a long or a short as DataOutput writes them, and a
//     StringValue as its length, then each UTF-16 unit, as variable-length
//     ints (7 bits a byte, low bits first); unlike StringSerializer's, the
//     length is not one more and there is no null.
//   - NullValueSerializer writes nothing.
//   - CopyableValueSerializer and ValueSerializer record the value's class
//     (GenericTypeSerializerSnapshot: its name) and let the value write
//     itself: Flink's own classes as above, except that NullValue writes a
//     false boolean. A user's class writes whatever its write method
//     writes, which stateutil does not decode.
//   - VoidSerializer writes one 0 byte for the only value, null.
//
// As JSON: booleans, numbers (a float widened as Java widens it), a
// CharValue a one-character string, a StringValue a string, NullValue and
// Void null.

// typesPackage is where Flink keeps its Value types.
const typesPackage = "org.apache.flink.types."

// flinkValues are the Value types of typesPackage whose layout stateutil
// knows, by simple name: each is also the kind of its serializer.
var flinkValues = map[string]bool{
	"BooleanValue": true, "ByteValue": true, "CharValue": true, "DoubleValue": true, "FloatValue": true,
	"IntValue": true, "LongValue": true, "ShortValue": true, "StringValue": true, "NullValue": true,
}

// valueWidths are the getLength of each Value serializer's values
// (NullValue's 0 is FixedLength's).
var valueWidths = map[string]int{
	"BooleanValue": 1, "ByteValue": 1, "CharValue": 2, "DoubleValue": 8, "FloatValue": 4,
	"IntValue": 4, "LongValue": 8, "ShortValue": 2,
}

// valueBoxed are the serializers of the boxed primitives that write each
// Value type's bytes (made once: a snapshot keeps its kind once worked
// out).
var valueBoxed = func() map[string]*SerializerSnapshot {
	out := map[string]*SerializerSnapshot{}
	for value, boxed := range map[string]string{
		"BooleanValue": "Boolean", "ByteValue": "Byte", "CharValue": "Char", "DoubleValue": "Double",
		"FloatValue": "Float", "IntValue": "Integer", "LongValue": "Long", "ShortValue": "Short",
	} {
		out[value] = elementSnapshot(boxed)
	}
	return out
}()

// valueHashes are what the hashCode of each Value type adds to its boxed
// primitive's (LongValue's and DoubleValue's constants).
var valueHashes = map[string]int32{"LongValue": 43, "DoubleValue": 31}

// valueSchemas are the schemas of the values of each kind.
var valueSchemas = map[string]snapshot.SchemaKind{
	"BooleanValue": snapshot.SchemaBool, "ByteValue": snapshot.SchemaInt8, "CharValue": snapshot.SchemaString,
	"DoubleValue": snapshot.SchemaFloat64, "FloatValue": snapshot.SchemaFloat32, "IntValue": snapshot.SchemaInt32,
	"LongValue": snapshot.SchemaInt64, "ShortValue": snapshot.SchemaInt16, "StringValue": snapshot.SchemaString,
	"NullValue": snapshot.SchemaNull, "Void": snapshot.SchemaNull,
}

// runtimePackage is where CopyableValueSerializer and ValueSerializer are.
const runtimePackage = "org.apache.flink.api.java.typeutils.runtime."

// Kinds of the serializers that let a value write itself.
const (
	kindCopyableValue = "CopyableValue"
	kindValue         = "Value"
)

// valueKind classifies a class name of these serializers or their
// snapshots.
func valueKind(n string) string {
	if simple, ok := strings.CutPrefix(n, basePackage); ok {
		simple, _, _ = strings.Cut(simple, "$")
		if k, ok := strings.CutSuffix(simple, "Serializer"); ok && flinkValues[k] {
			return k
		}
		return ""
	}
	for _, k := range []string{kindCopyableValue, kindValue} {
		serializer := runtimePackage + k + "Serializer"
		if n == serializer || n == serializer+"$"+k+"SerializerSnapshot" || n == serializer+"$"+k+"SerializerConfigSnapshot" {
			return k
		}
	}
	return ""
}

// valueLayout is the kind whose layout values of s have: the kind itself
// for the Value serializers, the value's class for the two that record
// it ("" for a class not Flink's), and whether a NullValue writes its
// boolean.
func valueLayout(s *SerializerSnapshot, kind string) (layout string, nullWritten bool) {
	if kind != kindCopyableValue && kind != kindValue {
		return kind, false
	}
	simple, ok := strings.CutPrefix(s.TypeClass, typesPackage)
	if !ok || !flinkValues[simple] {
		return "", false
	}
	return simple, true
}

// valueTypeWidth is FixedLength of a Value serializer: CopyableValueSerializer's
// is its class's binary length, ValueSerializer's never fixed.
func valueTypeWidth(s *SerializerSnapshot, kind string) int {
	layout, nullWritten := valueLayout(s, kind)
	switch {
	case kind == kindValue || layout == "":
		return -1
	case layout == "NullValue" && nullWritten:
		return 1
	case layout == "NullValue":
		return 0
	case valueWidths[layout] > 0:
		return valueWidths[layout]
	}
	return -1
}

// parseGenericTypeSnapshot reads a GenericTypeSerializerSnapshot: the
// class of the values.
func parseGenericTypeSnapshot(sr *SnapReader, s *SerializerSnapshot, cont ContFunc, depth int) {
	s.TypeClass = sr.R.UTF("value class")
}

func decodeValueType(r *wire.Reader, s *SerializerSnapshot, kind string) any {
	layout, nullWritten := valueLayout(s, kind)
	switch layout {
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue":
		return DecodeAny(r, valueBoxed[layout], 1)
	case "StringValue":
		return readStringValueType(r)
	case "NullValue":
		if nullWritten {
			// NullValue.write writes false (its read reads past any byte).
			readZero(r, "NullValue")
		}
		return nil
	case "Void":
		readZero(r, "Void")
		return nil
	}
	// A user's Value class writes itself.
	NotDecoded(r, s)
	return nil
}

// readZero reads the one 0 byte written for a value of what.
func readZero(r *wire.Reader, what string) {
	at := r.Pos()
	if b := r.U8(what); r.Err == nil && b != 0 {
		r.FailAt(at, "%s byte %d, Flink writes 0", what, b)
	}
}

// readStringValueType reads StringValue.write's form: the length, then the
// UTF-16 units, as variable-length ints (no null, and the length is not
// one more, unlike StringSerializer's).
func readStringValueType(r *wire.Reader) any {
	n := ReadVarUint(r, "StringValue length")
	if r.Err != nil {
		return nil
	}
	return readUTF16(r, n, "StringValue")
}

func encodeValueType(b []byte, s *SerializerSnapshot, kind string, v any) ([]byte, error) {
	layout, nullWritten := valueLayout(s, kind)
	switch layout {
	case "BooleanValue", "ByteValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "CharValue":
		return EncodeAny(b, valueBoxed[layout], v, 1)
	case "StringValue":
		text, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, not %v", v)
		}
		units := utf16.Encode([]rune(text))
		return appendUTF16(AppendVarUint(b, uint64(len(units))), units), nil
	case "NullValue", "Void":
		if v != nil {
			return nil, fmt.Errorf("want null, not %v", v)
		}
		if layout == "Void" || nullWritten {
			return append(b, 0), nil
		}
		return b, nil
	}
	return nil, fmt.Errorf("values of the user class %s %w", s.TypeClass, ErrNoEncoder)
}

// hashValueType is the Java hashCode of one Value key (ok false for a
// user's class): the boxed primitive's, but for BooleanValue's 1 or 0
// and what valueHashes add; a StringValue's is its String's.
func hashValueType(r *wire.Reader, s *SerializerSnapshot, kind string) (int32, bool) {
	layout, _ := valueLayout(s, kind)
	switch layout {
	case "BooleanValue":
		if r.Bool("BooleanValue") {
			return 1, true
		}
		return 0, true
	case "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue":
		h, err := hashAny(r, valueBoxed[layout], 1)
		return h + valueHashes[layout], err == nil
	case "StringValue":
		text, _ := readStringValueType(r).(string)
		return keygroup.HashString(text), true
	case "NullValue":
		decodeValueType(r, s, kind)
		return 53, true
	}
	return 0, false
}

// valueTypeSchema is the schema of the values of a Value serializer.
func valueTypeSchema(s *SerializerSnapshot, kind string) snapshot.Schema {
	layout, _ := valueLayout(s, kind)
	if k, ok := valueSchemas[layout]; ok {
		return snapshot.Schema{Kind: k}
	}
	return anyJSON
}

// valueExprs are the type expressions of the Value serializers that need
// nothing but their class: the Value class's name, and java.lang.Void.
func valueExprs() map[string]string {
	out := map[string]string{"java.lang.Void": basePackage + "VoidSerializer$VoidSerializerSnapshot"}
	for k := range flinkValues {
		out[typesPackage+k] = basePackage + k + "Serializer$" + k + "SerializerSnapshot"
	}
	return out
}

// valueTypeExpr is the type expression of a Value serializer; "bytes"
// for those that record a class (their snapshot carries it).
func valueTypeExpr(kind string) string {
	switch {
	case kind == "Void":
		return "java.lang.Void"
	case flinkValues[kind]:
		return typesPackage + kind
	}
	return "bytes"
}

// singleThreadClass is flink-core's SingleThreadAccessCheckingTypeSerializer
// (and its snapshot), a wrapper that checks, with assertions on, that one
// thread uses the serializer it wraps: its values are the wrapped
// serializer's (a composite snapshot of one nested serializer).
const singleThreadClass = "org.apache.flink.api.common.typeutils.SingleThreadAccessCheckingTypeSerializer"

// addValueTypes registers the Value serializers' snapshot parsers and
// type expressions.
func (t *Table) addValueTypes() {
	for word, class := range valueExprs() {
		t.exprs[word] = ExprLeaf{Class: class}
	}
	t.parsers["CopyableValueSerializer$CopyableValueSerializerSnapshot"] = parseGenericTypeSnapshot
	t.parsers["ValueSerializer$ValueSerializerSnapshot"] = parseGenericTypeSnapshot
}
