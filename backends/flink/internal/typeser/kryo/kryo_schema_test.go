package kryo

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/protovalue"
	"github.com/stateutil/stateutil/snapshot"
)

// The witness job zoo's schemas: its classes' fields, written from its
// source, and its FileDescriptorSet, written by the job.
func zooSchemas(t testing.TB) *snapshot.Schemas {
	const root = "../../../../../"
	layout, err := os.ReadFile(root + "testenv/flink/witness/zoo.kryo-classes")
	if err != nil {
		t.Fatal(err)
	}
	classes, err := classlayout.Parse(layout, "zoo.kryo-classes")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := os.ReadFile(root + "testdata/flink-witness/2.3.0/zoo-rocksdb-native/descriptors.pb")
	if err != nil {
		t.Fatal(err)
	}
	protos, err := protovalue.Parse(map[string][]byte{"descriptors.pb": desc})
	if err != nil {
		t.Fatal(err)
	}
	return &snapshot.Schemas{Classes: classes, Protos: protos}
}

// zooRegistrations are what the zoo job's KryoSerializerSnapshots register
// after the state's own class: Token with its own serializer, Measurement
// with chill-protobuf's (and an Avro class of Flink's, left out).
var zooRegistrations = []typeser.KryoRegistration{
	{Class: "stateutil.flink.jobs.ZooJob$Token", Kind: 1, Serializer: "stateutil.flink.jobs.ZooJob$TokenSerializer"},
	{Class: "stateutil.flink.proto.Measurement", Kind: 1, Serializer: chillProtobuf},
}

func zooSerializer(typeClass string, v5 bool, s *snapshot.Schemas) *typeser.SerializerSnapshot {
	regs := zooRegistrations
	if !strings.HasPrefix(typeClass, "stateutil.flink.") || typeClass == "stateutil.flink.jobs.ZooJob$Gadget" {
		regs = append([]typeser.KryoRegistration{{Class: typeClass, Kind: 0}}, regs...)
	}
	if typeClass == "stateutil.flink.proto.Measurement" {
		regs = []typeser.KryoRegistration{zooRegistrations[1], zooRegistrations[0]}
	}
	return testTable.WithSchemas(s).Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot",
		TypeClass: typeClass, Kryo5: v5, KryoRegistrations: regs})
}

// zooVectors are values of the zoo job's key z-1 as Flink 1.20.5 (Kryo 2)
// and 2.3.0 (Kryo 5) wrote them into the witness snapshots
// (testdata/flink-witness/{1.20.5/zoo-hashmap-canonical,2.3.0/zoo-rocksdb-native}),
// with what the job's own dump (dump.jsonl) holds for them; z-0's
// Optional is empty. groups and items are the Kryo fields of the POJO of
// state "nested" (items is Kryo only in Flink 1.x).
var zooVectors = []struct {
	name, class string
	v5          bool
	hex, want   string
}{
	{"optional", kryoOptional, false, "570103016f70742d39b7", `"opt-97"`},
	{"optional", kryoOptional, true, "570103016f70742d39b7", `"opt-97"`},
	{"empty optional", kryoOptional, false, "570100", `null`},
	{"empty optional", kryoOptional, true, "570100", `null`},
	{"gadget", "stateutil.flink.jobs.ZooJob$Gadget", false,
		"570101006a6176612e7574696c2e4c696e6b6564486173684d61f0010101827201c201016761646765742d39b70103c2018403",
		`{"attrs":{"@class":"java.util.LinkedHashMap","@value":{"r":{"@class":"java.lang.Integer","@value":97}}},"name":"gadget-97","values":[97,194]}`},
	{"gadget", "stateutil.flink.jobs.ZooJob$Gadget", true,
		"570101006a6176612e7574696c2e4c696e6b6564486173684d61f0010201827201c201016761646765742d39b70103c2018403",
		`{"attrs":{"@class":"java.util.LinkedHashMap","@value":{"r":{"@class":"java.lang.Integer","@value":97}}},"name":"gadget-97","values":[97,194]}`},
	{"proto", "stateutil.flink.proto.Measurement", false,
		"57013d0861120873656e736f722d311900000000004038402002280132036100ff3a120a03703937120b619fffffffffffffffff01420274314a050a01631061",
		`{"counts":{"c":97},"id":97,"probe":{"name":"p97","samples":[97,-97]},"raw":"0x6100ff","sensor":"sensor-1","tags":["t1"],"unit":"KELVIN","valid":true,"value":24.25}`},
	{"proto", "stateutil.flink.proto.Measurement", true,
		"57013d0861120873656e736f722d311900000000004038402002280132036100ff3a120a03703937120b619fffffffffffffffff01420274314a050a01631061",
		`{"counts":{"c":97},"id":97,"probe":{"name":"p97","samples":[97,-97]},"raw":"0x6100ff","sensor":"sensor-1","tags":["t1"],"unit":"KELVIN","valid":true,"value":24.25}`},
	{"groups", "java.util.Map", false,
		"01006a6176612e7574696c2e486173684d61f00102030167b101016a6176612e7574696c2e41727261794c6973f40102010273746174657574696c2e666c696e6b2e6a6f62732e5a6f6f4a6f6224496e6e65f201016139b702010201016239b7040301656d7074f901010100",
		`{"empty":[],"g1":[{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"a97","weight":1}},{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"b97","weight":2}}]}`},
	{"groups", "java.util.Map", true,
		"01006a6176612e7574696c2e486173684d61f00103030167b101016a6176612e7574696c2e41727261794c6973f40183010273746174657574696c2e666c696e6b2e6a6f62732e5a6f6f4a6f6224496e6e65f20001016139b70201016239b7040301656d7074f901010101",
		`{"empty":[],"g1":[{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"a97","weight":1}},{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"b97","weight":2}}]}`},
	{"custom", zooToken, false, "5701a705746f6b656e2d39b7", `{"id":679,"text":"token-97"}`},
	{"custom", zooToken, true, "5701a705746f6b656e2d39b7", `{"id":679,"text":"token-97"}`},
	{"items", "java.util.List", false,
		"01006a6176612e7574696c2e41727261794c6973f40101010173746174657574696c2e666c696e6b2e6a6f62732e5a6f6f4a6f6224496e6e65f201016939b7c201",
		`[{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"i97","weight":97}}]`},
}

func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	gb, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(gb, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(g)
	b, _ := json.Marshal(w)
	return bytes.Equal(a, b)
}

// jsonText is v as a user would give it: JSON text, numbers kept exact.
func jsonText(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKryoZooValuesWithTheirSchemas(t *testing.T) {
	schemas := zooSchemas(t)
	for _, c := range zooVectors {
		b, _ := hex.DecodeString(c.hex)
		codec := typeser.Codec{S: zooSerializer(c.class, c.v5, schemas)}
		v, err := codec.Decode(b)
		if err != nil || !sameJSON(t, v, c.want) {
			got, _ := json.Marshal(v)
			t.Errorf("Kryo 5 %v %s: %s, %v; want %s", c.v5, c.name, got, err, c.want)
			continue
		}
		ins := []any{v, jsonText(t, v)}
		if c.name == "groups" {
			// A HashMap of more than one entry is in Java's hash order,
			// which JSON text does not keep.
			ins = ins[:1]
		}
		for _, in := range ins {
			if out, err := codec.Encode(in); err != nil || !bytes.Equal(out, b) {
				t.Errorf("Kryo 5 %v %s: encodes to %x, %v; want %x", c.v5, c.name, out, err, b)
			}
		}
	}
}

// Without the user's schemas the same values are not decoded, never
// damage (an object of a user's class that ends the value is kept as its
// bytes); Optional needs none.
func TestKryoZooValuesWithoutSchemasAreNotDecoded(t *testing.T) {
	for _, c := range zooVectors {
		if c.class == kryoOptional {
			continue
		}
		b, _ := hex.DecodeString(c.hex)
		v, err := typeser.Codec{S: zooSerializer(c.class, c.v5, nil)}.Decode(b)
		got, _ := json.Marshal(v)
		if !errors.Is(err, snapshot.ErrNotDecoded) && (err != nil || !strings.Contains(string(got), `"@bytes"`)) {
			t.Errorf("Kryo 5 %v %s: %s, %v; want it not decoded", c.v5, c.name, got, err)
		}
	}
}

// zooToken is the zoo job's class with a Kryo serializer of its own.
const zooToken = "stateutil.flink.jobs.ZooJob$Token"

// A value wholly of a class with a serializer of the job's own shows the
// bytes after its class, as the job's dump does, is not decoded, and
// writes back from what it shows: without a declaration of what the
// serializer writes, with one that does not fit the bytes, and with one
// of another serializer than the snapshot registers.
// A walk past a Protobuf message needs only its length: a message that
// does not decode (a field the descriptors do not name) is walked past,
// so the values after it in a heap key group are still told apart, and
// is not decoded when read, like the same value in a savepoint.
func TestKryoProtobufWalkedByItsLength(t *testing.T) {
	schemas := zooSchemas(t)
	s := zooSerializer("stateutil.flink.proto.Measurement", true, schemas)
	var valid []byte
	for _, v := range zooVectors {
		if v.name == "proto" && v.v5 {
			valid, _ = hex.DecodeString(v.hex)
		}
	}
	// Field 100, a varint: three more bytes in the message.
	unknown := append([]byte{valid[0], valid[1], valid[2] + 3}, valid[3:]...)
	unknown = append(unknown, 0xa0, 0x06, 0x01)
	for _, c := range []struct {
		name string
		b    []byte
	}{{"decodes", valid}, {"does not decode", unknown}} {
		t.Run(c.name, func(t *testing.T) {
			r := wire.NewReader(append(slices.Clip(c.b), 0x2a, 0x2b), "kg", 0)
			if !typeser.SkipValue(r, s, 0) || r.Err != nil || r.Off != len(c.b) {
				t.Fatalf("walk: ok false or ended at %d (error %v), want %d", r.Off, r.Err, len(c.b))
			}
		})
	}
	if _, err := (typeser.Codec{S: s}).Decode(unknown); !errors.Is(err, snapshot.ErrNotDecoded) {
		t.Errorf("message with an unknown field: %v, want not decoded", err)
	}
}

func TestKryoCustomSerializerShowsItsBytes(t *testing.T) {
	const token = zooToken
	whole, _ := hex.DecodeString("5701a705746f6b656e2d39b7")
	layouts := map[string]string{
		"none":               "",
		"not fitting":        "@WrittenBy final class stateutil.flink.jobs.ZooJob$Token { varlong id; String text; boolean more; }",
		"short":              "@WrittenBy final class stateutil.flink.jobs.ZooJob$Token { varlong id; }",
		"another serializer": "@WrittenBy(com.acme.TokenSerializer) final class stateutil.flink.jobs.ZooJob$Token { varlong id; String text; }",
	}
	for name, layout := range layouts {
		classes, err := classlayout.Parse([]byte(layout), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v5 := range []bool{false, true} {
			c := typeser.Codec{S: zooSerializer(token, v5, &snapshot.Schemas{Classes: classes})}
			_, err := c.Decode(whole)
			var nd *snapshot.NotDecodedError
			if !errors.As(err, &nd) || nd.Class != token || hex.EncodeToString(nd.Bytes) != "01a705746f6b656e2d39b7" {
				t.Errorf("%s, Kryo 5 %v: %v (%+v); want it not decoded, showing 0x01a705746f6b656e2d39b7", name, v5, err, nd)
			}
		}
	}
	for _, v5 := range []bool{false, true} {
		c := typeser.Codec{S: zooSerializer(token, v5, zooSchemas(t))}
		out, err := c.Encode(map[string]any{"@class": token, "@bytes": "0x01a705746f6b656e2d39b7"})
		if err != nil || !bytes.Equal(out, whole) {
			t.Errorf("Kryo 5 %v: encodes to %x, %v; want %x", v5, out, err, whole)
		}
		if out, err := c.Encode(map[string]any{"@class": "stateutil.flink.jobs.Other", "@bytes": "0x01a705746f6b656e2d39b7"}); err == nil {
			t.Errorf("Kryo 5 %v: another class's bytes encode to %x", v5, out)
		}
	}
}

// Bytes that do not match the user's layout are not decoded, not damage:
// the layout is the user's word.
func TestKryoWrongLayoutIsNotDamage(t *testing.T) {
	wrong, err := classlayout.Parse([]byte(`final class stateutil.flink.jobs.ZooJob$Gadget { String name; long count; double ratio; }
final class stateutil.flink.jobs.ZooJob$Inner { int weight; }`), "wrong")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range zooVectors {
		if c.name != "gadget" && c.name != "groups" && c.name != "items" {
			continue
		}
		b, _ := hex.DecodeString(c.hex)
		_, err := typeser.Codec{S: zooSerializer(c.class, c.v5, &snapshot.Schemas{Classes: wrong})}.Decode(b)
		if !errors.Is(err, snapshot.ErrNotDecoded) {
			t.Errorf("Kryo 5 %v %s: %v; want it not decoded", c.v5, c.name, err)
		}
	}
}

// FuzzKryoSchemas checks that no bytes make the readers of Optional, the
// user's classes and Protobuf messages panic or allocate beyond what they
// hold, that bytes the schemas do not fit are never damage where a
// schema was used, and that whatever decodes writes back to the same
// bytes, in Kryo 2 and Kryo 5.
func FuzzKryoSchemas(f *testing.F) {
	classes := []string{kryoOptional, "stateutil.flink.jobs.ZooJob$Gadget", "stateutil.flink.proto.Measurement", "java.util.Map", "java.util.List", "stateutil.flink.jobs.ZooJob$Token"}
	for _, c := range zooVectors {
		b, _ := hex.DecodeString(c.hex)
		for i, class := range classes {
			if class == c.class {
				f.Add(c.v5, uint8(i), b)
			}
		}
	}
	schemas := zooSchemas(f)
	f.Fuzz(func(t *testing.T, v5 bool, pick uint8, b []byte) {
		c := typeser.Codec{S: zooSerializer(classes[int(pick)%len(classes)], v5, schemas)}
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		got, err := c.Encode(v)
		if err != nil || !bytes.Equal(got, b) {
			out, _ := json.Marshal(v)
			t.Fatalf("0x%x decodes to %s, which encodes to 0x%x (%v)", b, out, got, err)
		}
	})
}
