package kryo

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// Scala classes under Kryo 2 (Flink 1.x), as chill registers them from id
// 10 in FlinkScalaKryoInstantiator's order: Some is id 15 (tag 17) and
// written as its value, Tuple2 is id 37 (tag 39) and written as its fields;
// List's subclasses go by name with chill's TraversableSerializer (a size,
// the elements). Kryo 5 (Flink 2) has no chill: the same bytes are not
// decoded there.
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
	}
	for _, v5 := range []bool{false, true} {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: v5})
		for _, c := range cases {
			v, err := typeser.Codec{S: s}.Decode(c.b)
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
			if out, err := encodeKryo(nil, s, v, true); err != nil || !bytes.Equal(out, c.b) {
				t.Errorf("%s encodes to %x, %v; want %x", c.want, out, err, c.b)
			}
		}
	}
}

// flinkJDKCases are values of the JDK classes Flink registers from id 73
// (tag 75), in Flink 1.x with chill-java's serializers under Kryo 2, in
// Flink 2.x with Kryo 5's, each written as those serializers write it.
// reverseComparator is the class name of Collections.reverseOrder() as
// Kryo writes it (ASCII, the last byte's high bit set).
const reverseComparator = "6A6176612E7574696C2E436F6C6C656374696F6E732452657665727365436F6D70617261746FF2"

var flinkJDKCases = []struct {
	v5   bool
	b    string
	want string
}{
	// Arrays.asList: the length, the component class (String, tag 3), the elements.
	{false, "4B 01 02 03 03 01 82 61 03 01 82 62", `{"@class":"java.util.Arrays$ArrayList","@component":"java.lang.String","@value":["a","b"]}`},
	// Kryo 5: a collection (one class, no null: the class once).
	{true, "4B 01 83 03 00 01 82 61 01 82 62", `{"@class":"java.util.Arrays$ArrayList","@value":["a","b"]}`},
	// BitSet: bits 0 and 2, and a zero word chill writes from the BitSet's array.
	{false, "4C 01 02 0000000000000005 0000000000000000", `{"@class":"java.util.BitSet","@value":[0,2],"@words":2}`},
	{false, "4C 01 01 8000000000000000", `{"@class":"java.util.BitSet","@value":[63]}`},
	{true, "4C 01 01 0500000000000000", `{"@class":"java.util.BitSet","@value":[0,2]}`},
	{true, "4C 01 00", `{"@class":"java.util.BitSet","@value":[]}`},
	// PriorityQueue: a null comparator and the elements, as a TreeSet.
	{false, "4D 01 00 01 09 02", `{"@class":"java.util.PriorityQueue","@value":[1]}`},
	{true, "4D 01 82 00 09 00 02", `{"@class":"java.util.PriorityQueue","@value":[1]}`},
	// Ordered by Collections.reverseOrder(): its class by name, a new
	// object, and nothing of it (no fields).
	{false, "4D 01 01 00 " + reverseComparator + " 01 01 09 02", `{"@class":"java.util.PriorityQueue","@comparator":"java.util.Collections$ReverseComparator","@value":[1]}`},
	{true, "4D 01 82 01 00 " + reverseComparator + " 01 09 00 02", `{"@class":"java.util.PriorityQueue","@comparator":"java.util.Collections$ReverseComparator","@value":[1]}`},
	// Pattern: its text; Kryo 5 then its flags.
	{false, "4E 01 61 AB", `{"@class":"java.util.regex.Pattern","@value":"a+"}`},
	{true, "4E 01 61 AB 02", `{"@class":"java.util.regex.Pattern","@flags":2,"@value":"a+"}`},
	{true, "4E 01 61 AB 00", `{"@class":"java.util.regex.Pattern","@value":"a+"}`},
	// InetSocketAddress: host and port.
	{false, "53 01 68 E9 50", `{"@class":"java.net.InetSocketAddress","@value":["hi",80]}`},
	{true, "53 01 68 E9 50", `{"@class":"java.net.InetSocketAddress","@value":["hi",80]}`},
	// Locale in Kryo 5: language, country (empty), variant (empty).
	{true, "55 01 64 E5 81 81", `{"@class":"java.util.Locale","@value":["de","",""]}`},
	// java.sql.Date (77) and Timestamp (79), URI (80), UUID (82) in Kryo 5:
	// a Timestamp's milliseconds without those of its nanoseconds, a
	// UUID's halves as fixed little-endian longs.
	{true, "4F 01 E8 07", `{"@class":"java.sql.Date","@value":1000}`},
	{true, "51 01 E307 C796B102", `{"@class":"java.sql.Timestamp","@value":[1000,5000007]}`},
	{true, "52 01 75 BA", `{"@class":"java.net.URI","@value":"u:"}`},
	{true, "54 01 0100000000000000 FFFFFFFFFFFFFFFF", `{"@class":"java.util.UUID","@value":"00000000-0000-0001-ffff-ffffffffffff"}`},
	// Kryo 2: UUID as two zigzag varlongs, Timestamp as a varlong and a varint.
	{false, "54 01 02 01", `{"@class":"java.util.UUID","@value":"00000000-0000-0001-ffff-ffffffffffff"}`},
	{false, "51 01 E8 07 05", `{"@class":"java.sql.Timestamp","@value":[1000,5]}`},
}

// The JDK classes Flink registers decode from their bytes and encode back
// to them (the kryojdk corpus job has real Flink write them all).
func TestKryoFlinkJDK(t *testing.T) {
	h := func(s string) []byte { return spacedHex(t, s) }
	for _, c := range flinkJDKCases {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: c.v5})
		b := h(c.b)
		v, err := typeser.Codec{S: s}.Decode(b)
		if got, _ := json.Marshal(v); err != nil || string(got) != c.want {
			t.Errorf("Kryo 5 %v: %x: %s, %v; want %s", c.v5, b, got, err, c.want)
			continue
		}
		var fromText any
		if err := json.Unmarshal([]byte(c.want), &fromText); err != nil {
			t.Fatal(err)
		}
		for _, in := range []any{v, fromText} {
			if out, err := encodeKryo(nil, s, in, true); err != nil || !bytes.Equal(out, b) {
				t.Errorf("Kryo 5 %v: %s encodes to %x, %v; want %x", c.v5, c.want, out, err, b)
			}
		}
	}

	// Not decoded: Locale in Kryo 2 and SimpleDateFormat in both (Java
	// serialization), named by their class; a queue ordered by a user's
	// comparator.
	for _, c := range []struct {
		v5    bool
		b     string
		class string
	}{{false, "55 01 AC ED", "java.util.Locale"}, {false, "56 01 AC ED", "java.text.SimpleDateFormat"}, {true, "56 01 AC ED", "java.text.SimpleDateFormat"},
		// A comparator of a user's class may have fields: its queue is not decoded.
		{false, "4D 01 01 00 636F6D2E61636D652E436DF0 01 01 09 02", "java.util.PriorityQueue"}} {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: c.v5})
		_, err := typeser.Codec{S: s}.Decode(h(c.b))
		var nd *snapshot.NotDecodedError
		if !errors.As(err, &nd) || nd.ValueClass != c.class {
			t.Errorf("Kryo 5 %v: %s: %v; want %s not decoded", c.v5, c.b, err, c.class)
		}
	}

	// Damage: a Kryo 5 BitSet with a zero word at its end; JSON the bytes
	// cannot hold.
	s5 := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: true})
	if v, err := (typeser.Codec{S: s5}).Decode(h("4C 01 01 0000000000000000")); err == nil || !strings.Contains(err.Error(), "zero words") {
		t.Errorf("Kryo 5 bit set with a zero word: %v, %v; want damage", v, err)
	}
	s2 := testTable.Bind(&typeser.SerializerSnapshot{Class: s5.Class, TypeClass: "java.lang.Object"})
	for _, bad := range []struct {
		s    *typeser.SerializerSnapshot
		json string
	}{
		{s2, `{"@class":"java.util.Arrays$ArrayList","@value":["a"]}`},
		{s5, `{"@class":"java.util.Arrays$ArrayList","@component":"java.lang.String","@value":["a"]}`},
		{s2, `{"@class":"java.util.regex.Pattern","@flags":2,"@value":"a"}`},
		{s5, `{"@class":"java.util.BitSet","@words":3,"@value":[1]}`},
		{s2, `{"@class":"java.util.BitSet","@words":1,"@value":[1]}`},
		{s2, `{"@class":"java.util.BitSet","@value":[-1]}`},
		{s2, `{"@class":"java.util.Locale","@value":["de","",""]}`},
		{s2, `{"@class":"java.net.InetSocketAddress","@value":["h"]}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(bad.json), &v); err != nil {
			t.Fatal(err)
		}
		if out, err := encodeKryo(nil, bad.s, v, true); err == nil {
			t.Errorf("Kryo 5 %v: %s encodes to %x; want an error", bad.s.Kryo5, bad.json, out)
		}
	}
}

// spacedHex is the bytes of hex digits with spaces between them.
func spacedHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testTable reads this family's serializers beside flink-core's.
var testTable = typeser.NewTable(Family)
