package kryo

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/snapshot"
)

// allWrites declares a class whose serializer makes every write a
// declaration names, and a FieldSerializer class it writes with
// kryo.writeObject.
const allWrites = `
@WrittenBy(com.acme.AllSerializer.class)
final class com.acme.All {
    boolean on; byte b; short s; char c; int i; long l; float f; double d;
    varint vi; varint(false) zi; varlong vl; varlong(false) zl;
    String text;
    Leaf leaf;
    @Nullable Leaf maybe;
    Object any;
    @Nullable Integer boxed;
}
final class com.acme.Leaf { String name; }
`

func allSerializer(t testing.TB, v5 bool) typeser.Codec {
	classes, err := classlayout.Parse([]byte(allWrites), "all")
	if err != nil {
		t.Fatal(err)
	}
	return typeser.Codec{S: testTable.WithSchemas(&snapshot.Schemas{Classes: classes}).Bind(&typeser.SerializerSnapshot{
		Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "com.acme.All", Kryo5: v5,
		KryoRegistrations: []typeser.KryoRegistration{{Class: "com.acme.All", Kind: 1, Serializer: "com.acme.AllSerializer"}}})}
}

// The bytes of each write as Kryo's Output writes it (Kryo 2.24 and 5.6:
// fixed-width numbers big-endian in Kryo 2, little-endian in Kryo 5;
// variable-length ones 7 bits a byte, low first; writeVarInt(-1, true) in
// five bytes; optimizePositive false zigzags), written by hand from
// Output's documented encoding: the class id (85, the first
// registration, plus 2), the reference marker, then the writes in order.
func TestKryoWrittenBytes(t *testing.T) {
	const want = `{"on":true,"b":-1,"s":258,"c":"A","i":1,"l":2,"f":1.5,"d":-2,"vi":-1,"zi":-1,"vl":300,"zl":-2,"text":"ab",` +
		`"leaf":{"name":"x"},"maybe":null,"any":null,"boxed":5}`
	vectors := map[bool]string{
		false: "57" + "01" + "01" + "ff" + "0102" + "0041" + "00000001" + "0000000000000002" + "3fc00000" + "c000000000000000" +
			"ffffffff0f" + "01" + "ac02" + "03" + "61e2" + "01018278" + "00" + "00" + "010a",
		true: "57" + "01" + "01" + "ff" + "0201" + "4100" + "01000000" + "0200000000000000" + "0000c03f" + "00000000000000c0" +
			"ffffffff0f" + "01" + "ac02" + "03" + "61e2" + "01018278" + "00" + "00" + "010a",
	}
	for v5, h := range vectors {
		b, _ := hex.DecodeString(h)
		c := allSerializer(t, v5)
		v, err := c.Decode(b)
		if err != nil || !sameJSON(t, v, want) {
			got, _ := json.Marshal(v)
			t.Errorf("Kryo 5 %v: %s, %v; want %s", v5, got, err, want)
			continue
		}
		for _, in := range []any{v, jsonText(t, v)} {
			if out, err := c.Encode(in); err != nil || !bytes.Equal(out, b) {
				t.Errorf("Kryo 5 %v: encodes to %x, %v; want %x", v5, out, err, b)
			}
		}
	}
}

// A writeString of 33 to 63 ASCII characters is ASCII in Kryo 2, not in
// Kryo 5; writeString(null) is 0x80.
func TestKryoWrittenStrings(t *testing.T) {
	classes, err := classlayout.Parse([]byte("@WrittenBy final class a.S { String s; }"), "s")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 40)
	for _, c := range []struct {
		v5    bool
		value any
		hex   string
	}{
		{false, long, "5701" + strings.Repeat("61", 39) + "e1"},
		{true, long, "5701" + "a9" + strings.Repeat("61", 40)}, // UTF-8, its length plus one
		{false, nil, "570180"},
		{true, nil, "570180"},
		{true, "", "570181"},
	} {
		codec := typeser.Codec{S: testTable.WithSchemas(&snapshot.Schemas{Classes: classes}).Bind(&typeser.SerializerSnapshot{
			Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "a.S", Kryo5: c.v5,
			KryoRegistrations: []typeser.KryoRegistration{{Class: "a.S", Kind: 2}}})}
		out, err := codec.Encode(map[string]any{"s": c.value})
		if err != nil || hex.EncodeToString(out) != c.hex {
			t.Errorf("Kryo 5 %v, %q: %x, %v; want %s", c.v5, c.value, out, err, c.hex)
			continue
		}
		v, err := codec.Decode(out)
		if err != nil || !sameJSON(t, v, mustJSON(t, map[string]any{"s": c.value})) {
			t.Errorf("Kryo 5 %v, %q: decodes to %v, %v", c.v5, c.value, v, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// randomAll is a random value of com.acme.All.
func randomAll(rng *rand.Rand) map[string]any {
	pick := func(vs ...any) any { return vs[rng.Intn(len(vs))] }
	str := func() any {
		return pick(nil, "", "a", "ab", strings.Repeat("x", rng.Intn(80)), "ünï", "日本", string(rune(0x1F600)))
	}
	leaf := func() any { return map[string]any{"name": str()} }
	return map[string]any{
		"on": rng.Intn(2) == 1, "b": int64(int8(rng.Uint32())), "s": int64(int16(rng.Uint32())),
		"c": pick("A", "é", "\u2603"), "i": int32(rng.Uint32()), "l": int64(rng.Uint64()),
		"f":  float64(pick(float32(0), float32(-1.25), float32(math.MaxFloat32), float32(1e-30)).(float32)),
		"d":  pick(0.0, -2.5, math.MaxFloat64, 1e-300, rng.NormFloat64()).(float64),
		"vi": int32(rng.Uint32()) >> rng.Intn(32), "zi": int32(rng.Uint32()) >> rng.Intn(32),
		"vl": int64(rng.Uint64()) >> rng.Intn(64), "zl": int64(rng.Uint64()) >> rng.Intn(64),
		"text": str(), "leaf": leaf(), "maybe": pick(nil, leaf()),
		"any":   pick(nil, "s", int64(7), map[string]any{"@class": "java.lang.Integer", "@value": int32(3)}, []any{"a", int64(1)}),
		"boxed": pick(nil, int32(rng.Uint32())),
	}
}

// Property: every value of a written class writes to bytes that read back
// to the same value, and those bytes write again to themselves, in Kryo
// 2 and Kryo 5.
func TestKryoWrittenRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for _, v5 := range []bool{false, true} {
		c := allSerializer(t, v5)
		for i := 0; i < 2000; i++ {
			in := randomAll(rng)
			b, err := c.Encode(in)
			if err != nil {
				t.Fatalf("Kryo 5 %v: %v encodes: %v", v5, in, err)
			}
			v, err := c.Decode(b)
			if err != nil || !sameJSON(t, v, mustJSON(t, in)) {
				got, _ := json.Marshal(v)
				t.Fatalf("Kryo 5 %v: %s writes 0x%x, which reads %s, %v", v5, mustJSON(t, in), b, got, err)
			}
			again, err := c.Encode(jsonText(t, v))
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("Kryo 5 %v: 0x%x reads %s, which writes 0x%x, %v", v5, b, mustJSON(t, v), again, err)
			}
		}
	}
}

// What does not fit a member's write is refused, naming the member.
func TestKryoWrittenRefusesWhatDoesNotFit(t *testing.T) {
	c := allSerializer(t, true)
	base := randomAll(rand.New(rand.NewSource(1)))
	for member, bad := range map[string]any{
		"i": int64(1) << 31, "vi": "7", "l": 1.5, "text": int64(1), "leaf": nil, "on": nil, "b": int64(200),
	} {
		in := map[string]any{}
		for k, v := range base {
			in[k] = v
		}
		in[member] = bad
		if _, err := c.Encode(in); err == nil || !strings.Contains(err.Error(), "com.acme.All."+member) {
			t.Errorf("%s = %v: %v; want refused, naming the member", member, bad, err)
		}
	}
	delete(base, "text")
	if _, err := c.Encode(base); err == nil || !strings.Contains(err.Error(), `member "text" is missing`) {
		t.Errorf("a missing member: %v", err)
	}
	base["text"], base["extra"] = "t", int64(1)
	if _, err := c.Encode(base); err == nil || !strings.Contains(err.Error(), `no member "extra"`) {
		t.Errorf("an extra member: %v", err)
	}
}

// FuzzKryoWritten checks that no bytes after a written class's id and
// reference marker make its reader panic or allocate beyond what they
// hold, that bytes not fitting the declaration are not decoded (never
// damage), and that whatever decodes writes back to the same bytes, in
// Kryo 2 and Kryo 5.
func FuzzKryoWritten(f *testing.F) {
	rng := rand.New(rand.NewSource(7))
	for _, v5 := range []bool{false, true} {
		for i := 0; i < 8; i++ {
			b, err := allSerializer(f, v5).Encode(randomAll(rng))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(v5, b[2:])
		}
	}
	codecs := map[bool]typeser.Codec{false: allSerializer(f, false), true: allSerializer(f, true)}
	f.Fuzz(func(t *testing.T, v5 bool, writes []byte) {
		c := codecs[v5]
		b := append([]byte{0x57, 0x01}, writes...)
		v, err := c.Decode(b)
		if err != nil {
			if !errors.Is(err, snapshot.ErrNotDecoded) {
				t.Fatalf("0x%x: %v; want it not decoded", b, err)
			}
			return
		}
		got, err := c.Encode(v)
		if err != nil || !bytes.Equal(got, b) {
			out, _ := json.Marshal(v)
			t.Fatalf("0x%x decodes to %s, which encodes to 0x%x (%v)", b, out, got, err)
		}
	})
}
