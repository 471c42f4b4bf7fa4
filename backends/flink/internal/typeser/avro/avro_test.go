package avro

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// avroTestSchema has every kind of Avro type, a recursive record and each
// logical type.
const avroTestSchema = `{"type":"record","name":"T","namespace":"x","fields":[
{"name":"b","type":"boolean"},{"name":"i","type":"int"},{"name":"l","type":"long"},
{"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"s","type":"string"},
{"name":"y","type":"bytes"},{"name":"n","type":"null"},
{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
{"name":"x","type":{"type":"fixed","name":"F","size":2}},
{"name":"a","type":{"type":"array","items":"int"}},
{"name":"m","type":{"type":"map","values":"string"}},
{"name":"u","type":["null","string","long","F"]},
{"name":"o","type":["null","T"]},
{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
{"name":"decf","type":{"type":"fixed","name":"D","size":3,"logicalType":"decimal","precision":6,"scale":1}},
{"name":"day","type":{"type":"int","logicalType":"date"}},
{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
{"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
{"name":"uuid","type":{"type":"string","logicalType":"uuid"}}]}`

// avroTestValue is one value of avroTestSchema, as Flink's encoder writes
// it (spelled out field by field), and the JSON stateutil shows for it.
func avroTestValue() ([]byte, string) {
	h := strings.Join([]string{
		"01",                                  // b
		"fffffffe",                            // i -2
		"0000000000000007",                    // l
		"3fc00000",                            // f 1.5
		"c004000000000000",                    // d -2.5
		"00000003" + "c3a978",                 // s "éx"
		"00000002" + "00ff",                   // y
		"",                                    // n
		"00000001",                            // e B
		"abcd",                                // x
		"02" + "00000001" + "00000002" + "00", // a [1,2]
		"01" + "00000001" + "6b" + "00000001" + "76" + "00", // m {"k":"v"}
		"00000003" + "1234", // u F
		"00000001" + strings.Join([]string{ // o: a T, its o null
			"00", "00000000", "0000000000000000", "00000000", "0000000000000000", "00000000", "00000000",
			"00000000", "0000", "00", "00", "00000000", "00000000", "00000000", "ffffff",
			"00000000", "00000000", "0000000000000000", "0000000000000000", "0000000000000000",
			"0000000000000000", "00000000",
		}, ""),
		"00000002" + "ff38", // dec -2.00
		"000457",            // decf 111.1
		"00004a38",          // day 19000: 2022-01-08
		"02dfc8c8",          // tm 48220360 ms: 13:23:40.360
		"0000000000000001",  // tu 1 us
		"0000018bcfe56800",  // ts 1700000000000: 2023-11-14T22:13:20.000Z
		"fffffffffffffc18",  // tsu -1000 us: 1969-12-31T23:59:59.999000Z
		"7fffffffffffffff",  // lts: beyond year 9999, stays a number
		"00000024" + hex.EncodeToString([]byte("00000000-0000-0000-0000-000000000001")),
	}, "")
	b, _ := hex.DecodeString(h)
	inner := `{"a":[],"b":false,"d":0,"dec":"0x","decf":-0.1,"day":"1970-01-01","e":"A","f":0,"i":0,"l":0,"lts":"1970-01-01T00:00:00.000",` +
		`"m":{},"n":null,"o":null,"s":"","ts":"1970-01-01T00:00:00.000Z","tsu":"1970-01-01T00:00:00.000000Z","tm":"00:00:00.000","tu":"00:00:00.000000","u":null,"uuid":"","x":"0x0000","y":"0x"}`
	want := `{"a":[1,2],"b":true,"d":-2.5,"dec":-2.00,"decf":111.1,"day":"2022-01-08","e":"B","f":1.5,"i":-2,"l":7,"lts":9223372036854775807,` +
		`"m":{"k":"v"},"n":null,"o":` + inner + `,"s":"éx","ts":"2023-11-14T22:13:20.000Z","tsu":"1969-12-31T23:59:59.999000Z","tm":"13:23:40.360","tu":"00:00:00.000001",` +
		`"u":{"x.F":"0x1234"},"uuid":"00000000-0000-0000-0000-000000000001","x":"0xabcd","y":"0x00ff"}`
	return b, want
}

func mustAvroSchema(t testing.TB, text string) avro.Schema {
	s, err := avroSchema(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAvroDecodesEveryType decodes a value of every type, logical types
// included, to the JSON the README describes, and encodes it back.
func TestAvroDecodesEveryType(t *testing.T) {
	sch := mustAvroSchema(t, avroTestSchema)
	b, want := avroTestValue()
	r := wire.NewReader(b, "value", 0)
	v := walkAvro(r, sch, 0, true)
	if r.Err != nil || r.Remaining() != 0 {
		t.Fatalf("decode: %v, %d bytes left", r.Err, r.Remaining())
	}
	got, _ := json.Marshal(v)
	var g, w any
	json.Unmarshal(got, &g)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("decoded\n %s\nwant\n %s", got, want)
	}
	if !bytes.Contains(got, []byte(`"dec":-2.00`)) {
		t.Errorf("decimal lost its scale: %s", got)
	}
	j, _ := viaJSON(t, v)
	enc, err := encodeAvro(nil, sch, j, 0)
	if err != nil || !bytes.Equal(enc, b) {
		t.Fatalf("encode: %x, %v\nwant %x", enc, err, b)
	}
	skip := wire.NewReader(b, "value", 0)
	walkAvro(skip, sch, 0, false)
	if skip.Err != nil || skip.Remaining() != 0 {
		t.Fatalf("walk without decoding: %v, %d left", skip.Err, skip.Remaining())
	}
}

// TestAvroDamage: bytes Flink's encoder cannot have written fail at their
// offset.
func TestAvroDamage(t *testing.T) {
	for _, c := range []struct {
		name, schema, hex, want string
	}{
		{"union index", `["null","string"]`, "00000002", "at offset 0: Avro union index 2 of 2 branches"},
		{"enum index", `{"type":"enum","name":"E","symbols":["A"]}`, "ffffffff", "Avro enum index -1 of 1 symbols"},
		{"two blocks", `{"type":"array","items":"int"}`, "01000000010100000002" + "00", "at offset 5: Avro array or map: a second block"},
		{"long count", `{"type":"array","items":"int"}`, "8100" + "00000001" + "00", "at offset 0: Avro block count is not in its shortest form"},
		{"count past end", `{"type":"array","items":"int"}`, "05000000", "Avro block of 5 items, 3 bytes left"},
		{"not UTF-8", `"string"`, "00000001ff", "at offset 0: Avro string is not UTF-8"},
		{"same key", `{"type":"map","values":"null"}`, "02000000016b000000016b00", "at offset 6: Avro map key \"k\" twice"},
		{"boolean", `"boolean"`, "02", "boolean byte is 2"},
		{"cut", `"long"`, "000000", "Avro long"},
		{"too deep", `{"type":"record","name":"R","fields":[{"name":"r","type":["null","R"]}]}`, strings.Repeat("00000001", 40), "nested deeper than 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := hex.DecodeString(c.hex)
			r := wire.NewReader(b, "f", 0)
			walkAvro(r, mustAvroSchema(t, c.schema), 0, true)
			if r.Err == nil || !strings.Contains(r.Err.Error(), c.want) || !strings.Contains(r.Err.Error(), "f") {
				t.Fatalf("got %v, want %q", r.Err, c.want)
			}
		})
	}
}

// TestAvroLogicalFallbacks: values whose logical text cannot hold them show
// as their primitive, and encode back from that.
func TestAvroLogicalFallbacks(t *testing.T) {
	for _, c := range []struct{ schema, hex, want string }{
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}`, "000000020001", `"0x0001"`},
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}`, "00000001" + "80", `-12.8`},
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":3}`, "00000001" + "05", `0.005`},
		{`{"type":"int","logicalType":"time-millis"}`, "05265c00", `86400000`},
		{`{"type":"int","logicalType":"date"}`, "80000000", `-2147483648`},
	} {
		sch := mustAvroSchema(t, c.schema)
		b, _ := hex.DecodeString(c.hex)
		r := wire.NewReader(b, "f", 0)
		v := walkAvro(r, sch, 0, true)
		got, _ := json.Marshal(v)
		if r.Err != nil || string(got) != c.want {
			t.Errorf("%s %s: %s, %v; want %s", c.schema, c.hex, got, r.Err, c.want)
			continue
		}
		j, _ := viaJSON(t, v)
		if enc, err := encodeAvro(nil, sch, j, 0); err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s %s: encodes to %x, %v", c.schema, c.hex, enc, err)
		}
	}
}

// FuzzAvro decodes bytes under a few schemas (the corpus's, and one of
// every type): arbitrary and mutated real values, and (which >= 0x80)
// values that the fuzz input chooses and avroGen writes. No panic, the walk
// without decoding takes the same bytes, a generated value decodes, and
// what decodes encodes back to the same bytes (map entries go in key
// order, so a mutated value of a schema with a map only has to round trip
// its JSON; generated maps are in key order).
func FuzzAvro(f *testing.F) {
	schemas := []string{avroTestSchema}
	b, _ := avroTestValue()
	f.Add(uint8(0), b)
	parsed := make([]avro.Schema, len(schemas))
	for i, s := range schemas {
		parsed[i] = mustAvroSchema(f, s)
	}
	f.Add(uint8(0x80), []byte("a value of every type, made from these bytes"))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		sch := parsed[int(which&0x7f)%len(parsed)]
		generated := which&0x80 != 0
		if generated { // b chooses a value of the schema, written as Flink's encoder would
			g := &avroGen{src: b}
			g.value(sch, 0)
			b = g.out
		}
		r := wire.NewReader(b, "fuzz", 0)
		v := walkAvro(r, sch, 0, true)
		skip := wire.NewReader(b, "fuzz", 0)
		walkAvro(skip, sch, 0, false)
		if (r.Err == nil) != (skip.Err == nil) || r.Off != skip.Off {
			t.Fatalf("decoding: %v at %d; walking: %v at %d", r.Err, r.Off, skip.Err, skip.Off)
		}
		if r.Err != nil {
			if generated {
				t.Fatalf("%x, generated for the schema, does not decode: %v", b, r.Err)
			}
			return
		}
		j, ok := viaJSON(t, v)
		if !ok {
			return
		}
		enc, err := encodeAvro(nil, sch, j, 0)
		if err != nil {
			t.Fatalf("%v does not encode: %v", j, err)
		}
		if (generated || !strings.Contains(schemas[int(which&0x7f)%len(parsed)], `"map"`)) && !bytes.Equal(enc, b[:r.Off]) {
			t.Fatalf("%v encodes to %x, not %x", j, enc, b[:r.Off])
		}
		again := wire.NewReader(enc, "fuzz", 0)
		back, _ := viaJSON(t, walkAvro(again, sch, 0, true))
		if again.Err != nil || again.Remaining() != 0 || !reflect.DeepEqual(back, j) {
			t.Fatalf("%x decodes to %v, %v; want %v", enc, back, again.Err, j)
		}
	})
}

// TestAvroEncodeRefuses: JSON that is no value of the schema is refused,
// saying why, and nothing is written.
func TestAvroEncodeRefuses(t *testing.T) {
	for _, c := range []struct{ schema, json, want string }{
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"b":1}`, "R: no field a"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"a":1,"b":2}`, "want an object with the 1 fields of R"},
		{`{"type":"enum","name":"E","symbols":["A"]}`, `"B"`, "want a symbol of E"},
		{`{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}`, `1.25`, "at most 1 digits after the point"},
		{`{"type":"fixed","name":"D","size":1,"logicalType":"decimal","precision":2,"scale":0}`, `128`, "does not fit in 1 bytes"},
		{`{"type":"fixed","name":"F","size":2}`, `"0x00"`, "want 2 bytes for F, not 1"},
		{`["null","string","long"]`, `{"int":1}`, `want null or {"<branch>": value}`},
		{`["null","string","long"]`, `"a"`, `want null or {"<branch>": value}`},
		{`["null","string"]`, `{"string":"a"}`, "want a string"},
		{`"int"`, `2147483648`, "out of range"},
		{`{"type":"int","logicalType":"date"}`, `"2022-13-01"`, "date: want 2006-01-02"},
		{`"string"`, `5`, "want a string"},
	} {
		var v any
		d := json.NewDecoder(strings.NewReader(c.json))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		b, err := encodeAvro(nil, mustAvroSchema(t, c.schema), v, 0)
		if err == nil || b != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %x, %v; want %q", c.schema, c.json, b, err, c.want)
		}
	}
}

// avroGen writes a value of a schema as Flink's encoder does, each choice
// (lengths, branches, numbers) taken from src, zeros once it runs out.
type avroGen struct {
	src []byte
	out []byte
}

func (g *avroGen) next() byte {
	if len(g.src) == 0 {
		return 0
	}
	c := g.src[0]
	g.src = g.src[1:]
	return c
}

func (g *avroGen) raw(n int) {
	for range n {
		g.out = append(g.out, g.next())
	}
}

func (g *avroGen) value(sch avro.Schema, depth int) {
	deep := depth > 12 // past this only nulls and empty blocks, so that recursion ends
	switch s := sch.(type) {
	case *avro.RefSchema:
		g.value(s.Schema(), depth+1)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			g.value(f.Type(), depth+1)
		}
	case *avro.UnionSchema:
		i := int(g.next()) % len(s.Types())
		if null, _ := s.Indices(); deep && s.Nullable() {
			i = null
		}
		g.out = binary.BigEndian.AppendUint32(g.out, uint32(i))
		g.value(s.Types()[i], depth+1)
	case *avro.EnumSchema:
		g.out = binary.BigEndian.AppendUint32(g.out, uint32(int(g.next())%len(s.Symbols())))
	case *avro.FixedSchema:
		g.raw(s.Size())
	case *avro.ArraySchema, *avro.MapSchema:
		n := int(g.next() % 3)
		if deep {
			n = 0
		}
		if n > 0 {
			g.out = append(g.out, byte(n))
		}
		for i := range n {
			if m, ok := s.(*avro.MapSchema); ok {
				g.out = typeser.AppendBytes32(g.out, []byte{'k', '0' + byte(i)})
				g.value(m.Values(), depth+1)
			} else {
				g.value(s.(*avro.ArraySchema).Items(), depth+1)
			}
		}
		g.out = append(g.out, 0)
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			g.out = append(g.out, g.next()&1)
		case avro.Int, avro.Float:
			g.raw(4)
		case avro.Long, avro.Double:
			g.raw(8)
		case avro.Bytes:
			n := int(g.next() % 5)
			g.out = binary.BigEndian.AppendUint32(g.out, uint32(n))
			g.raw(n)
		case avro.String:
			n := int(g.next() % 4)
			g.out = binary.BigEndian.AppendUint32(g.out, uint32(n))
			for range n {
				g.out = append(g.out, 'a'+g.next()%26)
			}
		}
	}
}

// viaJSON passes a decoded value through its JSON text, as a user editing
// a dump would give it back.
func viaJSON(t testing.TB, v any) (any, bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false // NaN and infinities have no JSON
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var back any
	if err := d.Decode(&back); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return back, true
}
