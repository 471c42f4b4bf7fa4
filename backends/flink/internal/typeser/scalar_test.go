package typeser

import (
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

const basePrefix = "org.apache.flink.api.common.typeutils.base."

// scalarClasses are serializer snapshots DecodeScalar knows, and one it
// does not (it must always decline that one).
var scalarClasses = []string{
	basePrefix + "LongSerializer$LongSerializerSnapshot",
	basePrefix + "IntSerializer$IntSerializerSnapshot",
	basePrefix + "ShortSerializer$ShortSerializerSnapshot",
	basePrefix + "ByteSerializer$ByteSerializerSnapshot",
	basePrefix + "BooleanSerializer$BooleanSerializerSnapshot",
	basePrefix + "StringSerializer$StringSerializerSnapshot",
	basePrefix + "DoubleSerializer$DoubleSerializerSnapshot",
}

// scalarEqualsDecode reports whether s is the value Decode made.
func scalarEqualsDecode(s snapshot.Scalar, v any) bool {
	switch s.Kind {
	case snapshot.ScalarNull:
		return v == nil
	case snapshot.ScalarBool:
		b, ok := v.(bool)
		return ok && b == (s.Int != 0)
	case snapshot.ScalarString:
		str, ok := v.(string)
		return ok && str == string(s.Str)
	case snapshot.ScalarInt:
		switch n := v.(type) {
		case int64:
			return n == s.Int
		case int32:
			return int64(n) == s.Int
		case int16:
			return int64(n) == s.Int
		case int8:
			return int64(n) == s.Int
		}
	}
	return false
}

func TestDecodeScalar(t *testing.T) {
	for _, c := range []struct {
		class int
		b     []byte
		want  snapshot.Scalar
		ok    bool
	}{
		{0, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, snapshot.Scalar{Kind: snapshot.ScalarInt, Int: -2}, true},
		{0, []byte{0, 0, 0, 1}, snapshot.Scalar{}, false}, // a long is 8 bytes
		{1, []byte{0x80, 0, 0, 0}, snapshot.Scalar{Kind: snapshot.ScalarInt, Int: -1 << 31}, true},
		{2, []byte{0x01, 0x00}, snapshot.Scalar{Kind: snapshot.ScalarInt, Int: 256}, true},
		{3, []byte{0xff}, snapshot.Scalar{Kind: snapshot.ScalarInt, Int: -1}, true},
		{4, []byte{1}, snapshot.Scalar{Kind: snapshot.ScalarBool, Int: 1}, true},
		{4, []byte{2}, snapshot.Scalar{}, false}, // Decode refuses it: hex
		{5, []byte{0}, snapshot.Scalar{}, true},  // a null string
		{5, []byte{4, 'a', 'b', 'c'}, snapshot.Scalar{Kind: snapshot.ScalarString, Str: []byte("abc")}, true},
		{5, []byte{4, 'a', 'b'}, snapshot.Scalar{}, false},                  // cut short
		{5, []byte{3, 'a', 'b', 'c'}, snapshot.Scalar{}, false},             // a byte after the value
		{5, []byte{3, 0xc3, 0x01}, snapshot.Scalar{}, false},                // not ASCII: Decode's
		{6, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, snapshot.Scalar{}, false}, // doubles are Decode's
	} {
		got, ok := Codec{S: &SerializerSnapshot{Class: scalarClasses[c.class]}}.DecodeScalar(c.b)
		if ok != c.ok || got.Kind != c.want.Kind || got.Int != c.want.Int || string(got.Str) != string(c.want.Str) {
			t.Errorf("%s % x: got %+v %v, want %+v %v", scalarClasses[c.class], c.b, got, ok, c.want, c.ok)
		}
	}
}

// Wherever DecodeScalar decodes, it agrees with Decode.
func FuzzDecodeScalar(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 0, 1, 0})
	f.Add(uint8(1), []byte{0, 0, 0, 7})
	f.Add(uint8(4), []byte{0})
	f.Add(uint8(5), []byte{6, 'u', 's', 'e', 'r', '1'})
	f.Add(uint8(5), []byte{0x81, 0x01, 'x'})
	f.Add(uint8(6), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, class uint8, b []byte) {
		c := Codec{S: &SerializerSnapshot{Class: scalarClasses[int(class)%len(scalarClasses)]}}
		s, ok := c.DecodeScalar(b)
		if !ok {
			return
		}
		v, err := c.Decode(b)
		if err != nil || !scalarEqualsDecode(s, v) {
			t.Fatalf("%s % x: DecodeScalar %+v, Decode %#v %v", c.S.Class, b, s, v, err)
		}
	})
}

// A serializer that is not there (a nested one a snapshot lacks) has no
// fixed length, and no value of it is walked.
func TestNoSerializerHasNoWidth(t *testing.T) {
	if n := FixedLength(nil); n != -1 {
		t.Fatalf("FixedLength(nil) = %d, want -1", n)
	}
	if Sized(nil) {
		t.Fatal("Sized(nil)")
	}
}
