package flink

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

const (
	traversableClass = "org.apache.flink.api.scala.typeutils.TraversableSerializerSnapshot"
	scalaOptionClass = "org.apache.flink.api.scala.typeutils.ScalaOptionSerializerSnapshot"
	scalaEnumClass   = "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot"
	unitClass        = "org.apache.flink.api.scala.typeutils.UnitSerializer$UnitSerializerSnapshot"
)

// Scala values by the layouts of flink-scala's serializers: a collection
// is an int size, then a presence flag per element (TraversableSerializer);
// Unit one 0 byte; an Enumeration value its id, which is no ordinal.
func TestScalaValues(t *testing.T) {
	longs := &SerializerSnapshot{Class: traversableClass, Nested: []*SerializerSnapshot{{Class: longClass}}}
	options := &SerializerSnapshot{Class: traversableClass, Nested: []*SerializerSnapshot{
		{Class: scalaOptionClass, Nested: []*SerializerSnapshot{{Class: longClass}}}}}
	enum := &SerializerSnapshot{Class: scalaEnumClass, TypeClass: "Color", Constants: []string{"red", "blue"}, ConstantIDs: []int32{10, 13}}
	unit := &SerializerSnapshot{Class: unitClass}
	optionOfOption := &SerializerSnapshot{Class: scalaOptionClass, Nested: options.Nested}
	cases := []struct {
		s    *SerializerSnapshot
		b    []byte
		want any    // nil with err "" and notDecoded: shown as bytes
		err  string // damage
	}{
		{longs, []byte{0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0}, []any{int64(7), nil}, ""},
		{longs, []byte{0, 0, 0, 0}, []any{}, ""},
		{longs, []byte{0, 0, 0, 1, 2}, nil, "boolean byte is 2"},
		{longs, []byte{0, 0, 0, 2, 1, 0, 0}, nil, "at offset 5"},
		{options, []byte{0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0}, []any{int64(5), nil}, ""},
		// A present None shows as null as a missing element does: not decoded.
		{options, []byte{0, 0, 0, 1, 1, 0}, nil, ""},
		{enum, []byte{0, 0, 0, 13}, "blue", ""},
		{enum, []byte{0, 0, 0, 1}, nil, "enumeration value id 1"},
		// Some(None) would be written back as None: not decoded.
		{optionOfOption, []byte{1, 0}, nil, ""},
		{optionOfOption, []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 9}, int64(9), ""},
		{unit, []byte{0}, "()", ""},
		{unit, []byte{1}, nil, "Unit byte 1"},
	}
	for _, c := range cases {
		got, err := codec{s: c.s}.Decode(c.b)
		var nd *snapshot.NotDecodedError
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%x: error %v, want one containing %q", c.b, err, c.err)
			}
			continue
		case c.want == nil:
			if !errors.As(err, &nd) {
				t.Errorf("%x: %v, %v; want it not decoded", c.b, got, err)
			}
			continue
		case err != nil || !reflect.DeepEqual(got, c.want):
			t.Errorf("%x: %#v, %v; want %#v", c.b, got, err, c.want)
			continue
		}
		text, _ := json.Marshal(got)
		var back any
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		if err := d.Decode(&back); err != nil {
			t.Fatal(err)
		}
		if out, err := (codec{s: c.s}).Encode(back); err != nil || !bytes.Equal(out, c.b) {
			t.Errorf("%s encodes to %x, %v; want %x", text, out, err, c.b)
		}
	}
	if _, err := (codec{s: enum}).Encode("green"); err == nil {
		t.Error("an Enumeration value the snapshot does not list encodes")
	}
}

// Scala classes under Kryo 2 (Flink 1.x), as chill registers them from id
// 10 in FlinkScalaKryoInstantiator's order: Some is id 15 (tag 17) and
// written as its value, Tuple2 is id 37 (tag 39) and written as its fields;
// List's subclasses go by name with chill's TraversableSerializer (a size,
// the elements). Kryo 5 (Flink 2) has no chill: the same bytes are not
// decoded there (nor are Flink's registrations from 73, whose Kryo 5 ids
// are not checked).
func TestKryoChill(t *testing.T) {
	nilName := []byte("scala.collection.immutable.Nil$")
	nilName[len(nilName)-1] |= 0x80
	cases := []struct {
		b    []byte
		want string
	}{
		{[]byte{0x11, 0x01, 0x03, 0x01, 0x61, 0xE2}, `{"@class":"scala.Some","@value":"ab"}`},
		{[]byte{0x27, 0x01, 0x03, 0x01, 0x82, 0x61, 0x09, 0x02}, `{"@class":"scala.Tuple2","@value":["a",1]}`},
		{append(append([]byte{0x01, 0x00}, nilName...), 0x01, 0x00), `{"@class":"scala.collection.immutable.Nil$","@value":[]}`},
		// Flink's registrations from 73: UUID (82) as two zigzag varlongs,
		// Timestamp (79) as a varlong and a varint.
		{[]byte{0x54, 0x01, 0x02, 0x01}, `{"@class":"java.util.UUID","@value":"00000000-0000-0001-ffff-ffffffffffff"}`},
		{[]byte{0x51, 0x01, 0xE8, 0x07, 0x05}, `{"@class":"java.sql.Timestamp","@value":[1000,5]}`},
	}
	for _, v5 := range []bool{false, true} {
		s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: v5}
		for _, c := range cases {
			v, err := codec{s: s}.Decode(c.b)
			var nd *snapshot.NotDecodedError
			if v5 {
				if !errors.As(err, &nd) {
					t.Errorf("Kryo 5 %x: %v, %v; want it not decoded", c.b, v, err)
				}
				continue
			}
			if got, _ := json.Marshal(v); err != nil || string(got) != c.want {
				t.Errorf("%x: %s, %v; want %s", c.b, got, err, c.want)
				continue
			}
			if out, err := encodeKryo(nil, s, v); err != nil || !bytes.Equal(out, c.b) {
				t.Errorf("%s encodes to %x, %v; want %x", c.want, out, err, c.b)
			}
		}
	}
}
