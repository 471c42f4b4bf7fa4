package typeser

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const (
	nullableClass = "org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot"
	longClass     = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
	stringClass   = "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot"
	setClass      = "org.apache.flink.api.common.typeutils.base.SetSerializerSnapshot"
)

// A NullableSerializer that pads nulls writes the flag and as many zero
// bytes as its wrapped serializer's width; the padding is the outer
// snapshot's int, and makes the width fixed.
func TestNullableValues(t *testing.T) {
	padded := coreTable.Bind(&SerializerSnapshot{Class: nullableClass, OuterVersion: 2, Outer: []byte{0, 0, 0, 8},
		Nested: []*SerializerSnapshot{{Class: longClass}}})
	plain := coreTable.Bind(&SerializerSnapshot{Class: nullableClass, OuterVersion: 2, Outer: []byte{0, 0, 0, 0},
		Nested: []*SerializerSnapshot{{Class: longClass}}})
	if w := FixedLength(padded); w != 9 {
		t.Errorf("padded nullable long: length %d, want 9", w)
	}
	if w := FixedLength(plain); w != -1 {
		t.Errorf("nullable long without padding: length %d, want -1", w)
	}
	for _, c := range []struct {
		v    any
		want []byte
	}{{nil, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}}, {json.Number("42"), []byte{0, 0, 0, 0, 0, 0, 0, 0, 42}}} {
		if got, err := (Codec{S: padded}).Encode(c.v); err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("encode %v: %x, %v; want %x", c.v, got, err, c.want)
		}
	}
	cases := []struct {
		s    *SerializerSnapshot
		b    []byte
		want any
		err  string
	}{
		{padded, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, nil, ""},
		{padded, []byte{0, 0, 0, 0, 0, 0, 0, 0, 42}, int64(42), ""},
		{padded, []byte{1, 0, 0, 0, 0, 0, 0, 0}, nil, "at offset 1"},
		{padded, []byte{1, 0, 0, 3, 0, 0, 0, 0, 0}, nil, "at offset 1: null padding holds 3"},
		{plain, []byte{1}, nil, ""},
		{plain, []byte{1, 0}, nil, "1 bytes after the value"},
		{plain, []byte{2}, nil, "boolean byte is 2"},
	}
	for _, c := range cases {
		got, err := Codec{S: c.s}.Decode(c.b)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%x: error %v, want one containing %q", c.b, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%x: %#v, %v; want %#v", c.b, got, err, c.want)
		}
		if n, ok, err := Span(c.s, c.b); !ok || err != nil || n != len(c.b) {
			t.Errorf("%x: span %d, %v, %v; want %d", c.b, n, ok, err, len(c.b))
		}
	}
}

// SetSerializer writes an int size, then per element a null flag and the
// element, in the set's order.
func TestSetValues(t *testing.T) {
	s := coreTable.Bind(&SerializerSnapshot{Class: setClass, Nested: []*SerializerSnapshot{{Class: stringClass}}})
	b := []byte{0, 0, 0, 3, 0, 2, 'a', 1, 0, 3, 'b', 'c'}
	got, err := Codec{S: s}.Decode(b)
	if want := []any{"a", nil, "bc"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%#v, %v; want %#v", got, err, want)
	}
	if n, ok, err := Span(s, b); !ok || err != nil || n != len(b) {
		t.Errorf("span %d, %v, %v; want %d", n, ok, err, len(b))
	}
	if _, err := (Codec{S: s}).Decode([]byte{0, 0, 0, 9, 0}); err == nil || !strings.Contains(err.Error(), "set size: count 9") {
		t.Errorf("a set longer than its bytes: %v", err)
	}
}

// coreTable reads flink-core's serializers only.
var coreTable = NewTable()
