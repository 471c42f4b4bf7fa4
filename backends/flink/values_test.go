package flink

import (
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// DecodeValue decodes one value written by the serializer s from the start of
// b, for display. It returns the value and the bytes it took. Long -> int64,
// Integer -> int32, String -> string (nil for a null string), Boolean ->
// bool, Double -> float64, byte[] -> []byte, tuples -> []any, TTL wrappers ->
// TTLValue, VoidNamespace -> nil. Anything else becomes a RawValue holding
// the rest of b.
func DecodeValue(s *typeser.SerializerSnapshot, b []byte) (any, int, error) {
	r := wire.NewReader(b, "value", 0)
	v := typeser.DecodeValue(r, s, 0)
	if r.Err != nil {
		return nil, 0, r.Err
	}
	return v, r.Off, nil
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
	case typeser.TTLValue:
		return fmt.Sprintf("%s@%d", FormatValue(x.Value), x.LastAccess)
	case typeser.RawValue:
		return fmt.Sprintf("%s:0x%x", x.Serializer, x.Bytes)
	}
	return fmt.Sprint(v)
}
