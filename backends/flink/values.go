package flink

import (
	"unicode/utf16"
)

// TTLValue is a value written with a state TTL: the last access time in
// milliseconds since the epoch, and the user value.
type TTLValue struct {
	LastAccess int64 `json:"lastAccess"`
	Value      any   `json:"value"`
}

// RawValue is a value this package cannot decode: its bytes and the class of
// the serializer that wrote them.
type RawValue struct {
	Serializer string `json:"serializer"`
	Bytes      []byte `json:"bytes"`
}

func decodeValue(r *reader, s *SerializerSnapshot, depth int) any {
	if depth > 16 {
		r.fail("values nested deeper than 16")
		return nil
	}
	switch s.typeKey() {
	case "Long":
		return r.i64("long")
	case "Integer":
		return r.i32("int")
	case "Short":
		return r.i16("short")
	case "Byte":
		return int8(r.u8("byte"))
	case "Char":
		return rune(r.u16("char"))
	case "Boolean":
		return r.bool("boolean")
	case "Double":
		return r.f64("double")
	case "Float":
		// As Java widens a float to a double: 0.1f is 0.10000000149011612.
		return float64(float32frombits(uint32(r.i32("float"))))
	case "String":
		return readStringValue(r)
	case "byte[]":
		return append([]byte(nil), r.bytes32("byte array")...)
	case "VoidNamespace":
		// Flink writes a 0 and reads past whatever is there.
		at := r.pos()
		if v := r.u8("void namespace"); r.err == nil && v != 0 {
			r.failAt(at, "void namespace byte %d, Flink writes 0", v)
		}
		return nil
	case "Tuple":
		if len(s.Nested) == 0 {
			break
		}
		out := make([]any, 0, len(s.Nested))
		for _, n := range s.Nested {
			out = append(out, decodeValue(r, n, depth+1))
		}
		return out
	case "TTL":
		if len(s.Nested) != 2 {
			break
		}
		ts := decodeValue(r, s.Nested[0], depth+1)
		t, _ := ts.(int64)
		return TTLValue{LastAccess: t, Value: decodeValue(r, s.Nested[1], depth+1)}
	}
	rest := r.take(r.remaining(), "value")
	return RawValue{Serializer: s.Name(), Bytes: append([]byte(nil), rest...)}
}

// readStringValue reads Flink's StringValue encoding: length+1 as a
// variable-length int (0 is null), then each UTF-16 unit as a variable-length
// int (7 bits a byte, low bits first, high bit set on all but the last byte).
func readStringValue(r *reader) any {
	n := readVarUint(r, "string length")
	if r.err != nil {
		return nil
	}
	if n == 0 {
		return nil
	}
	n--
	if n > uint64(r.remaining()) {
		r.fail("string of %d characters, only %d bytes left", n, r.remaining())
		return nil
	}
	// Each character is a variable-length int: ASCII is one byte each.
	ascii := true
	for _, c := range r.buf[r.off : r.off+int(n)] {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(r.take(int(n), "string characters"))
	}
	units := make([]uint16, n)
	for i := range units {
		c := readVarUint(r, "string character")
		if c > 0xFFFF && r.err == nil {
			r.fail("string character 0x%X is not a UTF-16 unit", c)
		}
		units[i] = uint16(c)
	}
	return string(utf16.Decode(units))
}

func readVarUint(r *reader, what string) uint64 {
	var v uint64
	for shift := uint(0); shift < 35; shift += 7 {
		b := r.u8(what)
		if r.err != nil {
			return 0
		}
		v |= uint64(b&0x7F) << shift
		if b < 0x80 {
			return v
		}
	}
	r.fail("%s: variable-length int too long", what)
	return 0
}
