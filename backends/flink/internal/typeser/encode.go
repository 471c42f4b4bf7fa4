package typeser

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/stateutil/stateutil/snapshot"
)

// Encode writes a value given as decoded JSON the way Flink's serializer
// of this type does: what a key typed on a command line becomes. It knows
// the types whose keys have a known hash (and Flink's namespaces): the
// boxed primitives, String, byte[], tuples of these, VoidNamespace and
// TimeWindow; Kryo values (kryo.go); POJOs, List, Map, Set,
// NullableSerializer, Either and Option of the types it knows; and Avro
// values and RowData, whole.
func (c Codec) Encode(v any) ([]byte, error) {
	if c.S == nil {
		return nil, fmt.Errorf("values of this Flink type %w", ErrNoEncoder)
	}
	if b, ok, err := c.notDecodedBytes(v); ok {
		return b, err
	}
	return EncodeAny(nil, c.S, v, 0)
}

// notDecodedBytes takes back a value that get and dump show not decoded,
// {"@class": ..., "@bytes": "0x…"}: its bytes, as they were, so that such
// values go through dump, an edit and load unchanged. ok says v has that
// shape; the class must be the one Decode tags the value with, and the
// bytes must not be damage where Decode can tell.
func (c Codec) notDecodedBytes(v any) (b []byte, ok bool, err error) {
	m, isMap := v.(map[string]any)
	class, hasClass := m["@class"].(string)
	text, hasBytes := m["@bytes"].(string)
	if !isMap || len(m) != 2 || !hasClass || !hasBytes {
		return nil, false, nil
	}
	h, isHex := strings.CutPrefix(text, "0x")
	if b, err = hex.DecodeString(h); !isHex || err != nil {
		return nil, true, fmt.Errorf(`"@bytes": want 0x-prefixed hex, not %q`, text)
	}
	if f := familyOf(c.S); f != nil && f.Whole != nil {
		if whole, ok := f.Whole(c.S, class, b); ok {
			b = whole
		}
	}
	_, err = c.Decode(b)
	var nd *snapshot.NotDecodedError
	switch {
	case errors.As(err, &nd) && nd.Class != class:
		return nil, true, fmt.Errorf("a value not decoded as %s cannot be written as one of %s", class, nd.Class)
	case err != nil && !errors.As(err, &nd):
		return nil, true, fmt.Errorf(`"@bytes" do not decode as %s: %w`, c.valueClass(), err)
	}
	return b, true, nil
}

func EncodeAny(b []byte, s *SerializerSnapshot, v any, depth int) ([]byte, error) {
	if depth > 16 {
		return nil, fmt.Errorf("value nested deeper than 16")
	}
	switch k := KindOf(s); k {
	case "Long", "Integer", "Short", "Byte":
		bits := map[string]int{"Long": 64, "Integer": 32, "Short": 16, "Byte": 8}[k]
		n, err := Integer(v, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 64:
			return binary.BigEndian.AppendUint64(b, uint64(n)), nil
		case 32:
			return binary.BigEndian.AppendUint32(b, uint32(n)), nil
		case 16:
			return binary.BigEndian.AppendUint16(b, uint16(n)), nil
		}
		return append(b, byte(n)), nil
	case "Double", "Float":
		text, ok := snapshot.TextOf(v)
		if !ok {
			return nil, fmt.Errorf("want a number, not %v", v)
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, err
		}
		if k == "Float" {
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f))), nil
		}
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f)), nil
	case "Boolean":
		x, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, not %v", v)
		}
		if x {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case "Char":
		text, ok := v.(string)
		units := utf16.Encode([]rune(text))
		if !ok || len(units) != 1 {
			return nil, fmt.Errorf("want one character, not %v", v)
		}
		return binary.BigEndian.AppendUint16(b, units[0]), nil
	case "String":
		if v == nil {
			return append(b, 0), nil // StringValue's null
		}
		text, ok := snapshot.TextOf(v)
		if !ok {
			return nil, fmt.Errorf("want a string, not %v", v)
		}
		return AppendStringValue(b, text), nil
	case "byte[]":
		raw, err := HexValue(v)
		if err != nil {
			return nil, err
		}
		return AppendBytes32(b, raw), nil
	case "VoidNamespace":
		return append(b, 0), nil
	case "BigInteger", "BigDecimal", "Instant", "LocalDate", "LocalTime", "LocalDateTime", "SqlTimestamp", "Date", "SqlDate", "SqlTime":
		return encodeTemporal(b, k, v)
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "StringValue", "NullValue", "CopyableValue", "Value", "Void":
		return encodeValueType(b, s, k, v)
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return EncodeAny(b, s.Nested[0], v, depth+1)
		}
	case "GlobalWindow":
		if v != "GlobalWindow" {
			return nil, fmt.Errorf(`want "GlobalWindow", not %v`, v)
		}
		return append(b, 0), nil
	case "TimeWindow":
		w, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`want {"start":..,"end":..}, not %v`, v)
		}
		for _, f := range []string{"start", "end"} {
			n, err := Integer(w[f], 64)
			if err != nil {
				return nil, fmt.Errorf("window %s: %w", f, err)
			}
			b = binary.BigEndian.AppendUint64(b, uint64(n))
		}
		return b, nil
	case "Tuple":
		fields, ok := v.([]any)
		if !ok || len(fields) != len(s.Nested) {
			return nil, fmt.Errorf("want a JSON array of %d fields, not %v", len(s.Nested), v)
		}
		var err error
		for i, f := range fields {
			if b, err = EncodeAny(b, s.Nested[i], f, depth+1); err != nil {
				return nil, fmt.Errorf("field %d: %w", i, err)
			}
		}
		return b, nil
	}
	if f := familyOf(s); f != nil {
		if f.Encode != nil {
			if b, ok, err := f.Encode(b, s, v, depth); ok {
				return b, err
			}
		}
		return nil, fmt.Errorf("values of %s %w", s.Name(), ErrNoEncoder)
	}
	if b, ok, err := encodeBuiltin(b, s, v, depth); ok { // encode_builtin.go
		return b, err
	}
	return nil, fmt.Errorf("values of %s %w", s.Name(), ErrNoEncoder)
}

// Fields takes a JSON object with exactly the names given (the families'
// values shown with their classes' field names).
func Fields(v any, names ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	ok = ok && len(m) == len(names)
	for _, n := range names {
		if _, has := m[n]; !has {
			ok = false
		}
	}
	if !ok {
		return nil, fmt.Errorf("want an object of %s, not %v", strings.Join(names, ", "), v)
	}
	return m, nil
}

// AppendInt writes a JSON integer as a Java int (bits 32) or long (64).
func AppendInt(b []byte, v any, bits int, what string) ([]byte, error) {
	n, err := Integer(v, bits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if bits == 32 {
		return binary.BigEndian.AppendUint32(b, uint32(n)), nil
	}
	return binary.BigEndian.AppendUint64(b, uint64(n)), nil
}

// HexValue parses bytes given as 0x-prefixed hex.
func HexValue(v any) ([]byte, error) {
	text, ok := v.(string)
	h, hexed := strings.CutPrefix(text, "0x")
	raw, err := hex.DecodeString(h)
	if !ok || !hexed || err != nil {
		return nil, fmt.Errorf("want 0x-prefixed hex, not %v", v)
	}
	return raw, nil
}

// ErrNoEncoder marks a serializer whose values stateutil does not write.
var ErrNoEncoder = errors.New("cannot be written")

// Integer parses a JSON number (or its text) as a signed integer of bits.
func Integer(v any, bits int) (int64, error) {
	text, ok := snapshot.TextOf(v)
	if !ok {
		return 0, fmt.Errorf("want a number, not %v", v)
	}
	return strconv.ParseInt(text, 10, bits)
}

// AppendStringValue writes s as Flink's StringValue does: its UTF-16
// length plus one, then each code unit, as variable-length ints.
func AppendStringValue(b []byte, s string) []byte {
	units := utf16.Encode([]rune(s))
	return appendUTF16(AppendVarUint(b, uint64(len(units))+1), units)
}

// appendUTF16 writes each UTF-16 unit as a variable-length int.
func appendUTF16(b []byte, units []uint16) []byte {
	for _, u := range units {
		b = AppendVarUint(b, uint64(u))
	}
	return b
}

func AppendVarUint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func AppendBytes32(b, raw []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(raw))), raw...)
}
