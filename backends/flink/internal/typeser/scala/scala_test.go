package scala

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

const (
	longClass        = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
	traversableClass = "org.apache.flink.api.scala.typeutils.TraversableSerializerSnapshot"
	scalaOptionClass = "org.apache.flink.api.scala.typeutils.ScalaOptionSerializerSnapshot"
	scalaEnumClass   = "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot"
	unitClass        = "org.apache.flink.api.scala.typeutils.UnitSerializer$UnitSerializerSnapshot"
)

// Scala values by the layouts of flink-scala's serializers: a collection
// is an int size, then a presence flag per element (TraversableSerializer);
// Unit one 0 byte; an Enumeration value its id, which is no ordinal.
func TestScalaValues(t *testing.T) {
	longs := testTable.Bind(&typeser.SerializerSnapshot{Class: traversableClass, Nested: []*typeser.SerializerSnapshot{{Class: longClass}}})
	options := testTable.Bind(&typeser.SerializerSnapshot{Class: traversableClass, Nested: []*typeser.SerializerSnapshot{
		{Class: scalaOptionClass, Nested: []*typeser.SerializerSnapshot{{Class: longClass}}}}})
	enum := testTable.Bind(&typeser.SerializerSnapshot{Class: scalaEnumClass, TypeClass: "Color", Constants: []string{"red", "blue"}, ConstantIDs: []int32{10, 13}})
	unit := testTable.Bind(&typeser.SerializerSnapshot{Class: unitClass})
	optionOfOption := testTable.Bind(&typeser.SerializerSnapshot{Class: scalaOptionClass, Nested: options.Nested})
	cases := []struct {
		s    *typeser.SerializerSnapshot
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
		got, err := typeser.Codec{S: c.s}.Decode(c.b)
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
		if out, err := (typeser.Codec{S: c.s}).Encode(back); err != nil || !bytes.Equal(out, c.b) {
			t.Errorf("%s encodes to %x, %v; want %x", text, out, err, c.b)
		}
	}
	if _, err := (typeser.Codec{S: enum}).Encode("green"); err == nil {
		t.Error("an Enumeration value the snapshot does not list encodes")
	}
}

// testTable reads this family's serializers beside flink-core's.
var testTable = typeser.NewTable(Family)

// Scala's Nothing has no values: a collection or an Option of Nothing is
// empty and decodes, a value of Nothing is damage, and none is written.
func TestNothing(t *testing.T) {
	const nothingClass = "org.apache.flink.api.scala.typeutils.NothingSerializerSnapshot"
	nothing := []*typeser.SerializerSnapshot{{Class: nothingClass}}
	empty := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: traversableClass, Nested: nothing})}
	none := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: scalaOptionClass, Nested: nothing})}
	for _, c := range []struct {
		codec typeser.Codec
		b     []byte
		want  string
	}{{empty, []byte{0, 0, 0, 0}, "[]"}, {none, []byte{0}, "null"}} {
		v, err := c.codec.Decode(c.b)
		if text, _ := json.Marshal(v); err != nil || string(text) != c.want {
			t.Errorf("%x: %s, %v; want %s", c.b, text, err, c.want)
		}
	}
	for _, c := range []struct {
		codec typeser.Codec
		b     []byte
	}{{empty, []byte{0, 0, 0, 1, 1}}, {none, []byte{1}}} {
		if v, err := c.codec.Decode(c.b); !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "Scala's Nothing") {
			t.Errorf("%x: %v, %v; want damage", c.b, v, err)
		}
	}
	if b, err := (typeser.Codec{S: testTable.Bind(nothing[0])}).Encode(json.Number("1")); err == nil || errors.Is(err, typeser.ErrNoEncoder) {
		t.Errorf("a Nothing encodes to %x, %v", b, err)
	}
}
