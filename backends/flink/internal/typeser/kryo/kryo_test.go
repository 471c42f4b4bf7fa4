package kryo

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// kryoVectors reads the values testenv/kryo/KryoVectors.java had the real
// Kryo jar write: name, then hex.
func kryoVectors(t testing.TB, file string) map[string][]byte {
	f, err := os.Open("testdata/kryo/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, h, _ := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: %s: %v", file, name, err)
		}
		out[name] = b
	}
	return out
}

func biglistJSON() string {
	parts := make([]string, 70)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"@class":"java.lang.Integer","@value":%d}`, i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// kryoWant is what each vector is, written from the Java program's values.
var kryoWant = map[string]string{
	"arraylist":        `["a","bc"]`,
	"null":             `null`,
	"int":              `{"@class":"java.lang.Integer","@value":-3}`,
	"long":             `1234567890123`,
	"short":            `{"@class":"java.lang.Short","@value":-2}`,
	"byte":             `{"@class":"java.lang.Byte","@value":7}`,
	"char":             `{"@class":"java.lang.Character","@value":"x"}`,
	"bool":             `true`,
	"float":            `{"@class":"java.lang.Float","@value":1.5}`,
	"double":           `{"@class":"java.lang.Double","@value":-2.25}`,
	"string":           `"hello"`,
	"string1":          `"a"`,
	"stringempty":      `""`,
	"stringutf":        `"h\u00e9llo\u20ac"`,
	"refs":             `["same",{"@ref":1},null,{"@class":"java.lang.Integer","@value":5}]`,
	"hashmap":          `{"k":{"@class":"java.lang.Integer","@value":1}}`,
	"linkedhashmap":    `{"@class":"java.util.LinkedHashMap","@value":{"b":2,"a":"x"}}`,
	"treemap":          `{"@class":"java.util.TreeMap","@value":{"y":{"@class":"java.lang.Integer","@value":25},"z":{"@class":"java.lang.Integer","@value":26}}}`,
	"treeset":          `{"@class":"java.util.TreeSet","@value":[{"@class":"java.lang.Integer","@value":1},{"@class":"java.lang.Integer","@value":2},{"@class":"java.lang.Integer","@value":3}]}`,
	"hashset":          `{"@class":"java.util.HashSet","@value":["q"]}`,
	"linkedlist":       `{"@class":"java.util.LinkedList","@value":[1,2]}`,
	"biginteger":       `{"@class":"java.math.BigInteger","@value":-123456789012345678901234567890}`,
	"bigdecimal":       `{"@class":"java.math.BigDecimal","@value":-12345.678}`,
	"date":             `{"@class":"java.util.Date","@value":1700000000123}`,
	"class":            `{"@class":"java.lang.Class","@value":"java.lang.String"}`,
	"enum":             `{"@class":"java.util.concurrent.TimeUnit","@value":"SECONDS"}`,
	"intarray":         `{"@class":"[I","@value":[1,-1,300]}`,
	"stringarray":      `{"@class":"[Ljava.lang.String;","@value":["a",null,"bc"]}`,
	"objectarray":      `{"@class":"[Ljava.lang.Object;","@value":[{"@class":"java.lang.Integer","@value":1},"x"]}`,
	"longarray":        `{"@class":"[J","@value":[5,-5]}`,
	"doublearray":      `{"@class":"[D","@value":[0.5]}`,
	"bytearray":        `{"@class":"[B","@value":"0x0102ff"}`,
	"emptylist":        `{"@class":"java.util.Collections$EmptyList","@value":[]}`,
	"emptymap":         `{"@class":"java.util.Collections$EmptyMap","@value":{}}`,
	"emptyset":         `{"@class":"java.util.Collections$EmptySet","@value":[]}`,
	"singletonlist":    `{"@class":"java.util.Collections$SingletonList","@value":["s"]}`,
	"unmodifiablelist": `{"@class":"java.util.Collections$UnmodifiableRandomAccessList","@value":["u"]}`,
	"nested":           `[[{"@class":"java.lang.Integer","@value":1}],{"k":{"@class":"java.lang.Integer","@value":1}}]`,
	"ascii32":          `"abcdefghijklmnopqrstuvwxyzABCDEF"`,
	"ascii33":          `"abcdefghijklmnopqrstuvwxyzABCDEFG"`,
	"ascii63":          `"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789a"`,
	"ascii64":          `"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"`,
	"stringnul":        `"a\u0000b\ud83d\ude00"`,
	"emptyarraylist":   `[]`,
	"emptytreeset":     `{"@class":"java.util.TreeSet","@value":[]}`,
	"emptytreemap":     `{"@class":"java.util.TreeMap","@value":{}}`,
	"withnull":         `[null,"a",{"@ref":1}]`,
	"allnull":          `[null]`,
	"intswithnull":     `[{"@class":"java.lang.Integer","@value":1},null]`,
	"samerefs":         `["t",{"@ref":1}]`,
	"bigintnull":       `[{"@class":"java.math.BigInteger","@value":1},{"@class":"java.math.BigInteger","@value":0}]`,
	"intclass":         `{"@class":"java.lang.Class","@value":"int"}`,
	"integerclass":     `{"@class":"java.lang.Class","@value":"java.lang.Integer"}`,
	"maxlong":          `-9223372036854775808`,
	"maxint":           `{"@class":"java.lang.Integer","@value":-2147483648}`,
	"linkedhashset":    `{"@class":"java.util.LinkedHashSet","@value":["p"]}`,
	"singletonmap":     `{"@class":"java.util.Collections$SingletonMap","@value":{"k":"v"}}`,
	"singletonset":     `{"@class":"java.util.Collections$SingletonSet","@value":[{"@class":"java.lang.Integer","@value":1}]}`,
	"longkeys":         `{"@class":"java.util.HashMap","@keys":"json","@value":{"5":"five"}}`,
	"booleanarray":     `{"@class":"[Z","@value":[true,false]}`,
	"chararray":        `{"@class":"[C","@value":["a"]}`,
	"floatarray":       `{"@class":"[F","@value":[1.5]}`,
	"shortarray":       `{"@class":"[S","@value":[-1]}`,
}

func TestKryoVectorsOfTheRealKryo(t *testing.T) {
	kryoWant["biglist"] = biglistJSON()
	for _, v5 := range []bool{false, true} {
		file := map[bool]string{false: "kryo2.txt", true: "kryo5.txt"}[v5]
		vecs := kryoVectors(t, file)
		if len(vecs) != len(kryoWant) {
			t.Errorf("%s: %d vectors, %d expected values", file, len(vecs), len(kryoWant))
		}
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", Kryo5: v5})
		for name, b := range vecs {
			v, err := typeser.Codec{S: s}.Decode(b)
			if err != nil {
				t.Errorf("%s %s: %v", file, name, err)
				continue
			}
			got, _ := json.Marshal(v)
			var w, g any
			_ = json.Unmarshal([]byte(kryoWant[name]), &w)
			_ = json.Unmarshal(got, &g)
			wb, _ := json.Marshal(w)
			gb, _ := json.Marshal(g)
			if name == "linkedhashmap" {
				// Key order is Kryo's: compare the text as written.
				wb, gb = []byte(kryoWant[name]), got
			}
			if !bytes.Equal(wb, gb) {
				t.Errorf("%s %s = %s, want %s", file, name, got, kryoWant[name])
			}
			enc, err := encodeKryo(nil, s, v, true)
			if err != nil || !bytes.Equal(enc, b) {
				t.Errorf("%s %s: encodes to %x (%v), want %x", file, name, enc, err, b)
			}
		}
	}
}

// TestKryoFromJSONText writes values given as JSON text, as a user types
// them: maps in sorted key order.
func TestKryoFromJSONText(t *testing.T) {
	s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"})
	vecs := kryoVectors(t, "kryo2.txt")
	for _, name := range []string{"arraylist", "hashmap", "treemap", "longkeys", "bigdecimal", "refs", "stringutf", "intclass", "doublearray"} {
		d := json.NewDecoder(strings.NewReader(kryoWant[name]))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		b, err := encodeKryo(nil, s, v, true)
		if err != nil || !bytes.Equal(b, vecs[name]) {
			t.Errorf("%s: %x (%v), want %x", name, b, err, vecs[name])
		}
	}
}

func TestKryoNotDecodedAndDamage(t *testing.T) {
	s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "com.acme.Thing",
		KryoRegistrations: []typeser.KryoRegistration{{Class: "com.acme.Thing", Kind: 0}, {Class: "com.acme.Custom", Kind: 2}}})
	for _, tc := range []struct {
		name, hex  string
		notDecoded bool
	}{
		{"registered user class under FieldSerializer", "5701ee02016c6162656c2d3138b3", true},
		{"class with its own serializer", "5801", true},
		{"unregistered user class", "0100636f6d2e61636d652e58d90100", true},
		{"chill's registration", "0c01", true},
		{"truncated ArrayList", "01006a6176612e7574696c2e41727261794c6973f4010203018261", false},
		{"class id past the registrations", "5901", false},
		{"back-reference ahead", "01006a6176612e7574696c2e41727261794c6973f40101030305", false},
		{"redundant varint byte", "028000", false},
		{"count beyond the bytes", "01006a6176612e7574696c2e41727261794c6973f401ffffff7f", false},
	} {
		b, _ := hex.DecodeString(tc.hex)
		_, err := typeser.Codec{S: s}.Decode(b)
		var nd *snapshot.NotDecodedError
		switch {
		case err == nil:
			t.Errorf("%s: decodes", tc.name)
		case tc.notDecoded && !errors.As(err, &nd):
			t.Errorf("%s: %v, want not decoded", tc.name, err)
		case !tc.notDecoded && errors.As(err, &nd):
			t.Errorf("%s: not decoded (%v), want damage", tc.name, err)
		case tc.notDecoded && nd.Class != "com.acme.Thing":
			t.Errorf("%s: tagged %q, want the value's class", tc.name, nd.Class)
		}
	}
}

// FuzzKryo checks that no bytes make the Kryo reader panic or allocate
// beyond what they hold, and that whatever decodes writes back to the
// same bytes, in Kryo 2 and Kryo 5.
func FuzzKryo(f *testing.F) {
	for _, file := range []string{"kryo2.txt", "kryo5.txt"} {
		for _, b := range kryoVectors(f, file) {
			f.Add(file == "kryo5.txt", b)
		}
	}
	for _, c := range flinkJDKCases {
		f.Add(c.v5, spacedHex(f, c.b))
	}
	for _, c := range kryoKnownCases {
		f.Add(c.v5, spacedHex(f, c.b))
	}
	regs := []typeser.KryoRegistration{{Class: "java.util.TreeMap", Kind: 0}, {Class: "com.acme.Custom", Kind: 1}}
	f.Fuzz(func(t *testing.T, v5 bool, b []byte) {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", Kryo5: v5, KryoRegistrations: regs})
		v, err := typeser.Codec{S: s}.Decode(b)
		if err != nil {
			return
		}
		got, err := encodeKryo(nil, s, v, true)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("0x%x decodes to %#v, which encodes to 0x%x (%v)", b, v, got, err)
		}
	})
}

// A value shown not decoded, {"@class", "@bytes"}, encodes back to its
// bytes; a class other than its own, or bytes that are damage, do not.
func TestNotDecodedEncodesBackToItsBytes(t *testing.T) {
	s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "com.acme.Thing",
		KryoRegistrations: []typeser.KryoRegistration{{Class: "com.acme.Thing", Kind: 0}, {Class: "com.acme.Custom", Kind: 2}}})
	c := typeser.Codec{S: s}
	shown := func(class, bytes string) any { return map[string]any{"@class": class, "@bytes": bytes} }
	for _, h := range []string{"5701ee02016c6162656c2d3138b3", "5801", "0100636f6d2e61636d652e58d90100"} {
		want, _ := hex.DecodeString(h)
		if got, err := c.Encode(shown("com.acme.Thing", "0x"+h)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("0x%s: %x, %v; want its bytes", h, got, err)
		}
	}
	for name, v := range map[string]any{
		"another class":   shown("com.acme.Other", "0x5801"),
		"damaged bytes":   shown("com.acme.Thing", "0x5901"),
		"not hex":         shown("com.acme.Thing", "5801"),
		"odd hex":         shown("com.acme.Thing", "0x580"),
		"an extra member": map[string]any{"@class": "com.acme.Thing", "@bytes": "0x5801", "x": 1},
	} {
		if got, err := c.Encode(v); err == nil {
			t.Errorf("%s: encoded as %x, want an error", name, got)
		}
	}
}

// kryoASCII is a class name as Kryo writes it by name: ASCII, the last
// byte's high bit set (Output.writeAscii / writeString).
func kryoASCII(name string) string {
	b := []byte(name)
	b[len(b)-1] |= 0x80
	return hex.EncodeToString(b)
}

// kryoKnownCases are values stateutil can know, with the bytes the Kryo
// and chill sources say are written:
//   - chill's specialized tuples (chill-scala TupleSerializers.scala,
//     ScalaTupleSerialization.register: after Tuple1-22, ids 36-57, come
//     Tuple1$mcJ$sp, $mcI$sp, $mcD$sp, Tuple2$mcJJ$sp, JI, JD, IJ, II, ID,
//     DJ, DI, DD: ids 58-69, tags 60-71), each a reference marker (Kryo
//     2.24 Kryo.writeReferenceOrNull: every class but the wrappers) and its
//     fields as Output.writeLong/writeInt/writeDouble (big-endian);
//   - Comparator.naturalOrder(), java.util.Comparators$NaturalOrderComparator,
//     an enum: its class by name, in Kryo 2 a reference marker (Kryo 5's
//     MapReferenceResolver.useReferences is false for Util.isEnum), then
//     EnumSerializer's ordinal plus one;
//   - an object of a user's class (here an enum, com.acme.Color) as the last
//     thing of a value, kept as the bytes after its class: Kryo 2's marker
//     and ordinal plus one (01 02 for GREEN), Kryo 5's ordinal plus one.
//     A constant with a body is written by the name of its own class
//     (DefaultClassResolver.writeName writes type.getName(), Color$1) and
//     serialized by its enum's EnumSerializer (Kryo.getRegistration: an
//     Enum subclass that is not isEnum() takes getEnclosingClass()'s).
var kryoKnownCases = []struct {
	v5   bool
	b    string
	want string
}{
	{false, "43 01 00000001 FFFFFFFE", `{"@class":"scala.Tuple2$mcII$sp","@value":[1,-2]}`},
	{false, "3C 01 0000000000000005", `{"@class":"scala.Tuple1$mcJ$sp","@value":[5]}`},
	{false, "3D 01 80000000", `{"@class":"scala.Tuple1$mcI$sp","@value":[-2147483648]}`},
	{false, "3E 01 3FF8000000000000", `{"@class":"scala.Tuple1$mcD$sp","@value":[1.5]}`},
	{false, "41 01 FFFFFFFFFFFFFFFF 3FD0000000000000", `{"@class":"scala.Tuple2$mcJD$sp","@value":[-1,0.25]}`},
	{false, "46 01 4000000000000000 00000007", `{"@class":"scala.Tuple2$mcDI$sp","@value":[2,7]}`},
	{false, "47 01 BFF0000000000000 0000000000000000", `{"@class":"scala.Tuple2$mcDD$sp","@value":[-1,0]}`},
	// Some (tag 17) of a Tuple2$mcJI$sp, then the same tuple again: a back-reference.
	{false, "11 01 40 01 0000000000000003 00000004", `{"@class":"scala.Some","@value":{"@class":"scala.Tuple2$mcJI$sp","@value":[3,4]}}`},
	{false, "4D 01 01 00 " + kryoASCII(kryoNaturalOrder) + " 01 01 01 09 02",
		`{"@class":"java.util.PriorityQueue","@comparator":"java.util.Comparators$NaturalOrderComparator","@value":[1]}`},
	{true, "4D 01 82 01 00 " + kryoASCII(kryoNaturalOrder) + " 01 09 00 02",
		`{"@class":"java.util.PriorityQueue","@comparator":"java.util.Comparators$NaturalOrderComparator","@value":[1]}`},
	// ArrayList<Object> ["a", Color.GREEN].
	{false, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 02 03 01 82 61 01 01 " + kryoASCII("com.acme.Color") + " 01 02",
		`["a",{"@bytes":"0x0102","@class":"com.acme.Color"}]`},
	{true, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 03 03 01 82 61 01 01 " + kryoASCII("com.acme.Color") + " 02",
		`["a",{"@bytes":"0x02","@class":"com.acme.Color"}]`},
	// Kryo 5 [Color.RED]: one class, flagged, written once; no null.
	{true, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 82 01 01 " + kryoASCII("com.acme.Color") + " 00 01",
		`[{"@bytes":"0x01","@class":"com.acme.Color"}]`},
	// HashMap<String,Object> {"c": Color.BLUE}, BLUE with a body.
	{false, "01 00 " + kryoASCII("java.util.HashMap") + " 01 01 03 01 82 63 01 01 " + kryoASCII("com.acme.Color$1") + " 01 03",
		`{"c":{"@bytes":"0x0103","@class":"com.acme.Color$1"}}`},
	// HashMap<String,Object> {"c": Color.BLUE}, BLUE without one.
	{false, "01 00 " + kryoASCII("java.util.HashMap") + " 01 01 03 01 82 63 01 01 " + kryoASCII("com.acme.Color") + " 01 03",
		`{"c":{"@bytes":"0x0103","@class":"com.acme.Color"}}`},
}

func TestKryoKnownValues(t *testing.T) {
	for _, c := range kryoKnownCases {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: c.v5})
		b := spacedHex(t, c.b)
		v, err := typeser.Codec{S: s}.Decode(b)
		if got, _ := json.Marshal(v); err != nil || string(got) != c.want {
			t.Errorf("Kryo 5 %v: %x: %s, %v; want %s", c.v5, b, got, err, c.want)
			continue
		}
		var fromText any
		d := json.NewDecoder(strings.NewReader(c.want))
		d.UseNumber()
		if err := d.Decode(&fromText); err != nil {
			t.Fatal(err)
		}
		for _, in := range []any{v, fromText} {
			if out, err := (typeser.Codec{S: s}).Encode(in); err != nil || !bytes.Equal(out, b) {
				t.Errorf("Kryo 5 %v: %s encodes to %x, %v; want %x", c.v5, c.want, out, err, b)
			}
		}
	}
}

// What cannot be known stays not decoded: chill's ids in Kryo 5, an
// object of a user's class that is not the value's last thing or is the
// value itself, and one in a Kryo value that is not all of the bytes (a
// POJO's field), where its end is unknown.
func TestKryoUnknowableNotDecoded(t *testing.T) {
	color := kryoASCII("com.acme.Color")
	for _, c := range []struct {
		v5 bool
		b  string
	}{
		{true, "43 01 00000001 FFFFFFFE"},
		{false, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 02 01 01 " + color + " 01 02 03 01 82 61"},
		{true, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 03 01 01 " + color + " 02 03 01 82 61"},
		{true, "01 00 " + kryoASCII("java.util.ArrayList") + " 01 83 01 01 " + color + " 00 01 02"},
		{false, "01 00 " + color + " 01 02"},
		{false, "27 01 01 00 " + color + " 01 01 03 01 82 61"},
		// A user's comparator: its fields are unknown, and elements follow.
		{true, "4D 01 82 01 00 " + color + " 01 09 00 02"},
	} {
		s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: c.v5})
		v, err := typeser.Codec{S: s}.Decode(spacedHex(t, c.b))
		var nd *snapshot.NotDecodedError
		if !errors.As(err, &nd) {
			t.Errorf("Kryo 5 %v: %s: %v, %v; want it not decoded", c.v5, c.b, v, err)
		}
	}
	s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object"})
	r := wire.NewReader(spacedHex(t, "11 01 01 00 "+color+" 01 02"), "value", 0)
	if v := decodeKryo(r, s, false); !errors.As(r.Err, new(*snapshot.NotDecodedError)) {
		t.Errorf("a Kryo field not delimited: %v, %v; want it not decoded", v, r.Err)
	}

	for _, bad := range []string{
		`[{"@class":"com.acme.Color","@bytes":"0x0102"},"a"]`,                          // not the last thing
		`{"@class":"scala.Some","@value":{"@class":"com.acme.Color","@bytes":"0x00"}}`, // bytes Kryo never writes there
		`{"@class":"scala.Some","@value":{"@class":"java.util.ArrayList","@bytes":"0x0100"}}`,
		`{"@class":"scala.Some","@value":{"@class":"com.acme.Color","@bytes":"0x"}}`,
		`{"@class":"scala.Tuple2$mcII$sp","@value":[1,2147483648]}`,
		`{"@class":"scala.Tuple1$mcD$sp","@value":["x"]}`,
		`{"@class":"java.util.PriorityQueue","@comparator":"com.acme.Cmp","@value":[1]}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if out, err := encodeKryo(nil, s, v, true); err == nil {
			t.Errorf("%s encodes to %x; want an error", bad, out)
		}
	}
	var kept any
	_ = json.Unmarshal([]byte(`{"@class":"scala.Some","@value":{"@class":"com.acme.Color","@bytes":"0x0102"}}`), &kept)
	if out, err := encodeKryo(nil, s, kept, false); err == nil {
		t.Errorf("kept bytes in a Kryo value not delimited encode to %x; want an error", out)
	}
}
