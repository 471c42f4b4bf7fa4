package protovalue

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// zooDescriptors is the FileDescriptorSet the witness job zoo wrote for
// its message stateutil.flink.proto.Measurement (gadget.proto).
func zooDescriptors(t testing.TB) *Set {
	b, err := os.ReadFile("../../testdata/flink-witness/2.3.0/zoo-rocksdb-native/descriptors.pb")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(map[string][]byte{"descriptors.pb": b})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// zooMessages are Measurements as Java's protobuf wrote them into the zoo
// witness snapshots (keys z-0 and z-1), with what the job's own dump
// (dump.jsonl) holds for them.
var zooMessages = []struct{ hex, want string }{
	{"0860120873656e736f722d30190000000000003840200132036000ff3a120a03703936120b60a0ffffffffffffffff01420274304a050a0163106052076576656e203936",
		`{"counts":{"c":96},"id":96,"note":"even 96","probe":{"name":"p96","samples":[96,-96]},"raw":"0x6000ff","sensor":"sensor-0","tags":["t0"],"unit":"CELSIUS","value":24.0}`},
	{"0861120873656e736f722d311900000000004038402002280132036100ff3a120a03703937120b619fffffffffffffffff01420274314a050a01631061",
		`{"counts":{"c":97},"id":97,"probe":{"name":"p97","samples":[97,-97]},"raw":"0x6100ff","sensor":"sensor-1","tags":["t1"],"unit":"KELVIN","valid":true,"value":24.25}`},
}

func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

func TestZooMeasurements(t *testing.T) {
	s := zooDescriptors(t)
	md, ok := s.Message("stateutil.flink.proto.Measurement")
	if !ok {
		t.Fatal("no message for class stateutil.flink.proto.Measurement")
	}
	for _, m := range zooMessages {
		b, _ := hex.DecodeString(m.hex)
		v, err := Decode(md, b)
		if err != nil || canonicalJSON(t, v) != canonicalJSON(t, json.RawMessage(m.want)) {
			t.Errorf("%s: %v, %v; want %s", m.hex, canonicalJSON(t, v), err, m.want)
			continue
		}
		var fromText any
		d := json.NewDecoder(bytes.NewReader([]byte(m.want)))
		d.UseNumber()
		if err := d.Decode(&fromText); err != nil {
			t.Fatal(err)
		}
		for _, in := range []any{v, fromText} {
			if out, err := Encode(md, in); err != nil || !bytes.Equal(out, b) {
				t.Errorf("%s encodes to %x, %v; want %x", m.want, out, err, b)
			}
		}
	}
}

// Bytes Java's protobuf never writes for a value, or that the descriptors
// do not describe, are ErrNotCanonical, never taken for the value.
func TestNotCanonical(t *testing.T) {
	md, _ := zooDescriptors(t).Message("stateutil.flink.proto.Measurement")
	for name, h := range map[string]string{
		"id written as its default": "0800",
		"samples unpacked":          "3a0a0a0370393610601060",
		"fields out of order":       "120173" + "0860",
		"an unknown field":          "f80101",
		"a truncated string":        "120873",
		"a string of bad UTF-8":     "1201ff",
		"a redundant varint byte":   "08e000",
	} {
		b, _ := hex.DecodeString(h)
		if v, err := Decode(md, b); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("%s: %v, %v; want ErrNotCanonical", name, v, err)
		}
	}
}

func TestEncodeRefusesWhatTheMessageHasNot(t *testing.T) {
	md, _ := zooDescriptors(t).Message("stateutil.flink.proto.Measurement")
	for name, v := range map[string]any{
		"an unknown field": map[string]any{"nope": 1},
		"a bad enum":       map[string]any{"unit": "FAHRENHEIT"},
		"bytes not hex":    map[string]any{"raw": "6000ff"},
		"a fraction":       map[string]any{"id": 1.5},
		"out of range":     map[string]any{"counts": map[string]any{"c": json.Number("2147483648")}},
		"not an object":    []any{1},
	} {
		if b, err := Encode(md, v); err == nil {
			t.Errorf("%s: encodes to %x", name, b)
		}
	}
}

// Java class names follow protoc's Java generator: java_package (else the
// proto package), java_multiple_files, java_outer_classname (else the
// file's name in camel case, with OuterClass when a type has that name).
func TestJavaClassNames(t *testing.T) {
	file := func(name, pkg string, opts *descriptorpb.FileOptions, msgs ...string) *descriptorpb.FileDescriptorProto {
		f := &descriptorpb.FileDescriptorProto{Name: proto.String(name), Package: proto.String(pkg), Options: opts, Syntax: proto.String("proto3")}
		for _, m := range msgs {
			f.MessageType = append(f.MessageType, &descriptorpb.DescriptorProto{Name: proto.String(m),
				NestedType: []*descriptorpb.DescriptorProto{{Name: proto.String("Part")}}})
		}
		return f
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		file("acme/order_book.proto", "acme.v1", nil, "Order"),
		file("acme/trade.proto", "acme.v1", &descriptorpb.FileOptions{JavaPackage: proto.String("com.acme")}, "Trade"),
		file("acme/quote.proto", "acme.v1", &descriptorpb.FileOptions{JavaPackage: proto.String("com.acme"), JavaOuterClassname: proto.String("Quotes")}, "Quote"),
		file("acme/fill.proto", "acme.v1", &descriptorpb.FileOptions{JavaPackage: proto.String("com.acme"), JavaMultipleFiles: proto.Bool(true)}, "Fill"),
		file("acme/v2_fill-rate.proto", "", nil, "Code"),
	}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(map[string][]byte{"set.pb": b})
	if err != nil {
		t.Fatal(err)
	}
	for class, full := range map[string]string{
		"acme.v1.OrderBook$Order":        "acme.v1.Order",
		"acme.v1.OrderBook$Order$Part":   "acme.v1.Order.Part",
		"com.acme.TradeOuterClass$Trade": "acme.v1.Trade",
		"com.acme.Quotes$Quote":          "acme.v1.Quote",
		"com.acme.Fill":                  "acme.v1.Fill",
		"com.acme.Fill$Part":             "acme.v1.Fill.Part",
		"V2FillRate$Code":                "Code",
	} {
		md, ok := s.Message(class)
		if !ok || string(md.FullName()) != full {
			t.Errorf("%s: %v, %v; want %s", class, md, ok, full)
		}
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse(map[string][]byte{"junk.pb": []byte("\xff\xff")}); err == nil {
		t.Error("junk parses")
	}
	missing := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{{Name: proto.String("a.proto"), Dependency: []string{"b.proto"}}}}
	b, _ := proto.Marshal(missing)
	if _, err := Parse(map[string][]byte{"a.pb": b}); err == nil {
		t.Error("a set without a file it imports parses")
	}
}

// FuzzDecode checks that no bytes make the decoder panic, and that what
// decodes writes back to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, m := range zooMessages {
		b, _ := hex.DecodeString(m.hex)
		f.Add(b)
	}
	md, _ := zooDescriptors(f).Message("stateutil.flink.proto.Measurement")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(md, b)
		if err != nil {
			if !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("%x: %v", b, err)
			}
			return
		}
		out, err := Encode(md, v)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("%x decodes to %v, which encodes to %x (%v)", b, v, out, err)
		}
	})
}
