package snapshot

import "testing"

// Wherever a type's DecodeScalar decodes, it agrees with its Decode; the
// types without one have no ScalarDecoder.
func FuzzScalarDecoders(f *testing.F) {
	f.Add(uint8(0), []byte("word-1"))
	f.Add(uint8(0), []byte{0xff, 'a'})
	f.Add(uint8(1), []byte{0xff, 0xff, 0xff, 0xfe})
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 1, 0})
	f.Add(uint8(2), []byte{1, 2, 3})
	codecs := NewCodecs()
	types := []string{TypeString, TypeInt32, TypeInt64}
	for _, name := range []string{TypeBytes, TypeMsgpack, TypeJSON, TypeVoid} {
		if codecs.ScalarDecoder(Type{Name: name}) != nil {
			f.Fatalf("%s has a ScalarDecoder", name)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		typ := Type{Name: types[int(which)%len(types)]}
		s, ok := codecs.ScalarDecoder(typ)(b)
		codec, err := codecs.Codec(typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := codec.Decode(b)
		if ok != (err == nil) {
			t.Fatalf("%s % x: DecodeScalar ok %v, Decode error %v", typ, b, ok, err)
		}
		if !ok {
			return
		}
		switch x := v.(type) {
		case string:
			if s.Kind != ScalarString || string(s.Str) != x {
				t.Fatalf("%s % x: DecodeScalar %+v, Decode %q", typ, b, s, x)
			}
		case int64:
			if s.Kind != ScalarInt || s.Int != x {
				t.Fatalf("%s % x: DecodeScalar %+v, Decode %d", typ, b, s, x)
			}
		default:
			t.Fatalf("%s: Decode made a %T", typ, v)
		}
	})
}
