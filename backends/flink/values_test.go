package flink

import "fmt"

// DecodeValue decodes one value written by the serializer s from the start of
// b, for display. It returns the value and the bytes it took. Long -> int64,
// Integer -> int32, String -> string (nil for a null string), Boolean ->
// bool, Double -> float64, byte[] -> []byte, tuples -> []any, TTL wrappers ->
// TTLValue, VoidNamespace -> nil. Anything else becomes a RawValue holding
// the rest of b.
func DecodeValue(s *SerializerSnapshot, b []byte) (any, int, error) {
	r := newReader(b, "value", 0)
	v := decodeValue(r, s, 0)
	if r.err != nil {
		return nil, 0, r.err
	}
	return v, r.off, nil
}

// FormatValue renders a decoded value for display.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("0x%x", x)
	case []any:
		s := "("
		for i, e := range x {
			if i > 0 {
				s += ", "
			}
			s += FormatValue(e)
		}
		return s + ")"
	case TTLValue:
		return fmt.Sprintf("%s@%d", FormatValue(x.Value), x.LastAccess)
	case RawValue:
		return fmt.Sprintf("%s:0x%x", x.Serializer, x.Bytes)
	}
	return fmt.Sprint(v)
}
