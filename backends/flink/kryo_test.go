package flink

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
		s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", Kryo5: v5}
		for name, b := range vecs {
			v, err := codec{s: s}.Decode(b)
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
			enc, err := encodeKryo(nil, s, v)
			if err != nil || !bytes.Equal(enc, b) {
				t.Errorf("%s %s: encodes to %x (%v), want %x", file, name, enc, err, b)
			}
		}
	}
}

// TestKryoFromJSONText writes values given as JSON text, as a user types
// them: maps in sorted key order.
func TestKryoFromJSONText(t *testing.T) {
	s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"}
	vecs := kryoVectors(t, "kryo2.txt")
	for _, name := range []string{"arraylist", "hashmap", "treemap", "longkeys", "bigdecimal", "refs", "stringutf", "intclass", "doublearray"} {
		d := json.NewDecoder(strings.NewReader(kryoWant[name]))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		b, err := encodeKryo(nil, s, v)
		if err != nil || !bytes.Equal(b, vecs[name]) {
			t.Errorf("%s: %x (%v), want %x", name, b, err, vecs[name])
		}
	}
}

func TestKryoNotDecodedAndDamage(t *testing.T) {
	s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "com.acme.Thing",
		KryoRegistrations: []KryoRegistration{{Class: "com.acme.Thing", Kind: 0}, {Class: "com.acme.Custom", Kind: 2}}}
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
		_, err := codec{s: s}.Decode(b)
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

// TestKryoPojoFieldOfTheCorpus decodes the orders job's POJO, whose
// List<String> field Flink 1.x writes with Kryo, and writes every value
// back from its JSON text to the same bytes.
func TestKryoPojoFieldOfTheCorpus(t *testing.T) {
	codec, values := ordersValues(t, "1.20.5")
	enc := codec.(snapshot.Encoder)
	for _, b := range values {
		v, err := codec.Decode(b)
		if err != nil {
			t.Fatalf("Decode(0x%x): %v", b, err)
		}
		order, _ := v.(map[string]any)
		tags, ok := order["tags"].([]any)
		if !ok || len(tags) != 2 {
			t.Fatalf("Decode(0x%x) = %v, want tags as a list of two", b, v)
		}
		text, _ := json.Marshal(v)
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var back any
		if err := d.Decode(&back); err != nil {
			t.Fatal(err)
		}
		if got, err := enc.Encode(back); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Encode(%s) = 0x%x (%v), want 0x%x", text, got, err, b)
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
	regs := []KryoRegistration{{Class: "java.util.TreeMap", Kind: 0}, {Class: "com.acme.Custom", Kind: 1}}
	f.Fuzz(func(t *testing.T, v5 bool, b []byte) {
		s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", Kryo5: v5, KryoRegistrations: regs}
		v, err := codec{s: s}.Decode(b)
		if err != nil {
			return
		}
		got, err := encodeKryo(nil, s, v)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("0x%x decodes to %#v, which encodes to 0x%x (%v)", b, v, got, err)
		}
	})
}

// A value shown not decoded, {"@class", "@bytes"}, encodes back to its
// bytes; a class other than its own, or bytes that are damage, do not.
func TestNotDecodedEncodesBackToItsBytes(t *testing.T) {
	s := &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "com.acme.Thing",
		KryoRegistrations: []KryoRegistration{{Class: "com.acme.Thing", Kind: 0}, {Class: "com.acme.Custom", Kind: 2}}}
	c := codec{s: s}
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
