package typeser

import (
	"unicode/utf16"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
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

func DecodeValue(r *wire.Reader, s *SerializerSnapshot, depth int) any {
	if depth > 16 {
		r.Fail("values nested deeper than 16")
		return nil
	}
	switch s.TypeKey() {
	case "Long":
		return r.I64("long")
	case "Integer":
		return r.I32("int")
	case "Short":
		return r.I16("short")
	case "Byte":
		return int8(r.U8("byte"))
	case "Char":
		return rune(r.U16("char"))
	case "Boolean":
		return r.Bool("boolean")
	case "Double":
		return r.F64("double")
	case "Float":
		// As Java widens a float to a double: 0.1f is 0.10000000149011612.
		return float64(wire.Float32frombits(uint32(r.I32("float"))))
	case "String":
		return ReadStringValue(r)
	case "byte[]":
		return append([]byte(nil), r.Bytes32("byte array")...)
	case "VoidNamespace":
		// Flink writes a 0 and reads past whatever is there.
		at := r.Pos()
		if v := r.U8("void namespace"); r.Err == nil && v != 0 {
			r.FailAt(at, "void namespace byte %d, Flink writes 0", v)
		}
		return nil
	case "Tuple":
		if len(s.Nested) == 0 {
			break
		}
		out := make([]any, 0, len(s.Nested))
		for _, n := range s.Nested {
			out = append(out, DecodeValue(r, n, depth+1))
		}
		return out
	case "TTL":
		if len(s.Nested) != 2 {
			break
		}
		ts := DecodeValue(r, s.Nested[0], depth+1)
		t, _ := ts.(int64)
		return TTLValue{LastAccess: t, Value: DecodeValue(r, s.Nested[1], depth+1)}
	}
	rest := r.Take(r.Remaining(), "value")
	return RawValue{Serializer: s.Name(), Bytes: append([]byte(nil), rest...)}
}

// ReadStringValue reads Flink's StringValue encoding: length+1 as a
// variable-length int (0 is null), then each UTF-16 unit as a variable-length
// int (7 bits a byte, low bits first, high bit set on all but the last byte).
func ReadStringValue(r *wire.Reader) any {
	n := ReadVarUint(r, "string length")
	if r.Err != nil || n == 0 {
		return nil
	}
	return readUTF16(r, n-1, "string")
}

// readUTF16 reads n UTF-16 units, each a variable-length int, as a string.
func readUTF16(r *wire.Reader, n uint64, what string) any {
	if n > uint64(r.Remaining()) {
		r.Fail("%s of %d characters, only %d bytes left", what, n, r.Remaining())
		return nil
	}
	// Each character is a variable-length int: ASCII is one byte each.
	ascii := true
	for _, c := range r.Buf[r.Off : r.Off+int(n)] {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(r.Take(int(n), what+" characters"))
	}
	units := make([]uint16, n)
	for i := range units {
		c := ReadVarUint(r, what+" character")
		if c > 0xFFFF && r.Err == nil {
			r.Fail("%s character 0x%X is not a UTF-16 unit", what, c)
		}
		units[i] = uint16(c)
	}
	if r.Err != nil {
		return nil
	}
	return string(utf16.Decode(units))
}

// skipStringValue walks a StringValue as ReadStringValue reads it,
// without making the string.
func skipStringValue(r *wire.Reader) {
	n := ReadVarUint(r, "string length")
	if r.Err != nil || n == 0 {
		return
	}
	n--
	if n > uint64(r.Remaining()) {
		r.Fail("string of %d characters, only %d bytes left", n, r.Remaining())
		return
	}
	chars := r.Buf[r.Off : r.Off+int(n)]
	if ascii(chars) {
		r.Off += int(n)
		return
	}
	for i := uint64(0); i < n && r.Err == nil; i++ {
		if c := ReadVarUint(r, "string character"); c > 0xFFFF && r.Err == nil {
			r.Fail("string character 0x%X is not a UTF-16 unit", c)
		}
	}
}

func ReadVarUint(r *wire.Reader, what string) uint64 {
	var v uint64
	for shift := uint(0); shift < 35; shift += 7 {
		b := r.U8(what)
		if r.Err != nil {
			return 0
		}
		v |= uint64(b&0x7F) << shift
		if b < 0x80 {
			return v
		}
	}
	r.Fail("%s: variable-length int too long", what)
	return 0
}
