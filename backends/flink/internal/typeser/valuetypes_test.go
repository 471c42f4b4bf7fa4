package typeser

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/vectorfile"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// coreVectorsDir holds byte vectors of flink-core's serializers of Flink's
// Value types, of Void and of the single-thread-checking wrapper, one file
// per Flink version, written by real Flink
// (scripts/flink-core-value-vectors.sh).
const coreVectorsDir = "../../../../testdata/flink-core-value-vectors"

// coreVector is one serializer of a vectors file: its snapshot as a keyed
// state's meta info stores it, its getLength(), and values Flink
// serialized with their JSON and Java hashCode (null for Void's null).
type coreVector struct {
	Name     string `json:"name"`
	Snapshot string `json:"snapshot"`
	Length   int    `json:"length"`
	Values   []struct {
		Bytes string          `json:"bytes"`
		JSON  json.RawMessage `json:"json"`
		Hash  *int32          `json:"hash"`
	} `json:"values"`
	version string
}

func readCoreVectors(t testing.TB) []coreVector {
	t.Helper()
	return vectorfile.Read(t, coreVectorsDir, "scripts/flink-core-value-vectors.sh", func(v *coreVector, version string) { v.version = version })
}

// coreVectorSnapshot parses a vector's snapshot exactly: every byte
// accounted for, nothing skipped unparsed.
func coreVectorSnapshot(t testing.TB, v coreVector) *SerializerSnapshot {
	t.Helper()
	raw := vectorfile.Unhex(t, v.Snapshot)
	r := wire.NewReader(raw, v.Name, 0)
	s := (&SnapReader{R: r, Table: coreTable}).SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil || r.Remaining() != 0 || s == nil || s.Opaque {
		t.Fatalf("%s %s: snapshot %v: %v, %d bytes left", v.version, v.Name, s, r.Err, r.Remaining())
	}
	return s
}

// sameJSONValue compares JSON texts, numbers by their float64 where
// either has a fraction or an exponent, else as written.
func sameJSONValue(t testing.TB, got any, want json.RawMessage) bool {
	raw, err := json.Marshal(got)
	if err != nil {
		return false
	}
	g, w := jsonValue(t, string(raw)), jsonValue(t, string(want))
	gn, gok := g.(json.Number)
	wn, wok := w.(json.Number)
	if gok && wok && strings.ContainsAny(string(gn)+string(wn), ".eE") {
		gf, err1 := gn.Float64()
		wf, err2 := wn.Float64()
		return err1 == nil && err2 == nil && gf == wf
	}
	return bytes.Equal(raw, want) || string(mustMarshal(t, w)) == string(raw)
}

func mustMarshal(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every value real Flink wrote decodes to the JSON of the Java value,
// encodes back to Flink's bytes (also through the state's type name),
// hashes as the value's own hashCode, and spans exactly its bytes; the
// fixed length is what the serializer's getLength() says.
func TestFlinkCoreValueVectors(t *testing.T) {
	for _, v := range readCoreVectors(t) {
		s := coreVectorSnapshot(t, v)
		c := Codec{S: s}
		if n := FixedLength(s); n != v.Length {
			t.Errorf("%s %s: fixed length %d, getLength() %d", v.version, v.Name, n, v.Length)
		}
		if got, want := c.Schema().Kind, vectorSchemas[strings.TrimPrefix(strings.TrimPrefix(v.Name, "CopyableValue-"), "Value-")]; got != want {
			t.Errorf("%s %s: schema %v, want %v", v.version, v.Name, got, want)
		}
		typed, err := coreTable.CodecFactory(TypeOf(s))
		if err != nil {
			t.Fatalf("%s %s: type %s: %v", v.version, v.Name, TypeOf(s).Name, err)
		}
		for _, val := range v.Values {
			b := vectorfile.Unhex(t, val.Bytes)
			got, err := c.Decode(b)
			if err != nil || !sameJSONValue(t, got, val.JSON) {
				t.Errorf("%s %s: %x decodes to %v, %v; the value is %s", v.version, v.Name, b, got, err, val.JSON)
				continue
			}
			for _, enc := range []snapshot.Encoder{c, typed.(snapshot.Encoder)} {
				if out, err := enc.Encode(jsonValue(t, string(val.JSON))); err != nil || !bytes.Equal(out, b) {
					t.Errorf("%s %s: %s encodes to %x, %v; Flink wrote %x", v.version, v.Name, val.JSON, out, err, b)
				}
			}
			if val.Hash != nil {
				if h, err := c.HashCode(b); err != nil || h != *val.Hash {
					t.Errorf("%s %s: %s hashes to %d, %v; Java's hashCode is %d", v.version, v.Name, val.JSON, h, err, *val.Hash)
				}
			}
			if n, ok, err := Span(s, b); err != nil || !ok || n != len(b) {
				t.Errorf("%s %s: %x spans %d, %v, %v", v.version, v.Name, b, n, ok, err)
			}
		}
	}
}

// vectorSchemas are the column types of each vector's values, by the
// name of its Value class.
var vectorSchemas = map[string]snapshot.SchemaKind{
	"BooleanValue": snapshot.SchemaBool, "ByteValue": snapshot.SchemaInt8, "CharValue": snapshot.SchemaString,
	"DoubleValue": snapshot.SchemaFloat64, "FloatValue": snapshot.SchemaFloat32, "IntValue": snapshot.SchemaInt32,
	"LongValue": snapshot.SchemaInt64, "ShortValue": snapshot.SchemaInt16, "StringValue": snapshot.SchemaString,
	"NullValue": snapshot.SchemaNull, "Void": snapshot.SchemaNull, "SingleThreadChecking-Integer": snapshot.SchemaInt32,
}

func copyableCodec(class string) Codec {
	return Codec{S: coreTable.Bind(&SerializerSnapshot{
		Class: runtimePackage + "CopyableValueSerializer$CopyableValueSerializerSnapshot", TypeClass: class})}
}

// Bytes Flink's serializers never write are damage, named as such.
func TestValueTypeDamage(t *testing.T) {
	for _, c := range []struct {
		name  string
		codec Codec
		hex   string
	}{
		{"Void 1", baseCodec("VoidSerializer"), "01"},
		{"Void nothing", baseCodec("VoidSerializer"), ""},
		{"NullValue true", copyableCodec(typesPackage + "NullValue"), "01"},
		{"IntValue short", baseCodec("IntValueSerializer"), "000001"},
		{"StringValue truncated", baseCodec("StringValueSerializer"), "0568656c"},
		{"StringValue hostile length", baseCodec("StringValueSerializer"), "ffffffff07"},
		{"StringValue past UTF-16", baseCodec("StringValueSerializer"), "0180800400"},
		{"StringValue unterminated varint", baseCodec("StringValueSerializer"), "01ff"},
	} {
		b, _ := hex.DecodeString(c.hex)
		if v, err := c.codec.Decode(b); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%s (%s): %v, %v; want damage", c.name, c.hex, v, err)
		}
	}
	// A truncated key is damage too, not a key of unknown hash.
	if _, err := baseCodec("LongValueSerializer").HashCode([]byte{0, 0, 1}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("LongValue key of 3 bytes hashes: %v; want damage", err)
	}
	// A NullValueSerializer writes nothing: a byte is one too many.
	if _, err := baseCodec("NullValueSerializer").Decode([]byte{0}); err == nil {
		t.Error("NullValueSerializer: a byte decodes")
	}
}

// A Value class of the user's writes itself as it likes: its values are
// not decoded (never guessed at, never damage) and cannot be written, and
// their length is unknown.
func TestUserValueClassNotDecoded(t *testing.T) {
	for _, c := range []Codec{copyableCodec("com.example.Money"),
		{S: coreTable.Bind(&SerializerSnapshot{Class: runtimePackage + "ValueSerializer$ValueSerializerSnapshot", TypeClass: "com.example.Money"})}} {
		b := []byte{0, 0, 0, 7}
		var nd *snapshot.NotDecodedError
		if v, err := c.Decode(b); !errors.As(err, &nd) || nd.Class != "com.example.Money" {
			t.Errorf("%s: %v, %v; want not decoded, class com.example.Money", c.S.Class, v, err)
		}
		if _, err := c.Encode(int64(7)); !errors.Is(err, ErrNoEncoder) {
			t.Errorf("%s: encode: %v, want ErrNoEncoder", c.S.Class, err)
		}
		if _, err := c.HashCode(b); err == nil {
			t.Errorf("%s: a key of a user's class hashes", c.S.Class)
		}
		if FixedLength(c.S) != -1 || Sized(c.S) {
			t.Errorf("%s: fixed length %d, sized %v; want -1, false", c.S.Class, FixedLength(c.S), Sized(c.S))
		}
	}
}

// Java's hashCodes of NaN keys use the canonical NaN whatever bits the
// value has (Double.doubleToLongBits, Float.floatToIntBits): Java 17's
// Double.hashCode(NaN) is 2146959360, Float.hashCode(NaN) 2143289344,
// and DoubleValue's is 31 more.
func TestNaNKeyHashes(t *testing.T) {
	for _, c := range []struct {
		simple, hex string
		want        int32
	}{
		{"DoubleSerializer", "7ff8000000000001", 2146959360},
		{"DoubleSerializer", "fff0000000000abc", 2146959360},
		{"FloatSerializer", "7f800001", 2143289344},
		{"DoubleValueSerializer", "7ff0000000000001", 2146959391},
		{"FloatValueSerializer", "ffc00001", 2143289344},
	} {
		b, _ := hex.DecodeString(c.hex)
		if h, err := baseCodec(c.simple).HashCode(b); err != nil || h != c.want {
			t.Errorf("%s %s: %d, %v; Java's is %d", c.simple, c.hex, h, err, c.want)
		}
	}
}

func FuzzValueTypes(f *testing.F) {
	var codecs []Codec
	for _, v := range readCoreVectors(f) {
		s := coreVectorSnapshot(f, v)
		for _, val := range v.Values {
			f.Add(uint8(len(codecs)), vectorfile.Unhex(f, val.Bytes))
		}
		codecs = append(codecs, Codec{S: s})
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		formattest.CodecRoundTrip(t, c, b)
		// Walking agrees with decoding on where a value ends.
		if _, err := c.Decode(b); err == nil {
			if n, ok, err := Span(c.S, b); err != nil || !ok || n != len(b) {
				t.Fatalf("%s: %x decodes whole but spans %d, %v, %v", c.S.Class, b, n, ok, err)
			}
		}
	})
}
