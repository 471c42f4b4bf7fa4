package lookup

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/vmihailenco/msgpack/v5"
)

// decodedJSON is the JSON a dump writes for msgpack bytes b without
// msgpackJSON: b decoded by the codec, then written by appendValue.
func decodedJSON(b []byte) ([]byte, error) {
	var v any
	if err := safemsgpack.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return appendValue(nil, v), nil
}

// checkMsgpackJSON fails where msgpackJSON writes b and the text is not
// what decoding b writes; it reports whether msgpackJSON wrote it.
func checkMsgpackJSON(t *testing.T, m *msgpackJSON, b []byte) bool {
	t.Helper()
	prefix := []byte("prefix")
	got, ok := m.append(bytes.Clone(prefix), b)
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%x: msgpackJSON dropped what dst held: %q", b, got)
	}
	if !ok {
		if len(got) != len(prefix) {
			t.Fatalf("%x: refused, yet appended %q", b, got[len(prefix):])
		}
		return false
	}
	want, err := decodedJSON(b)
	if err != nil {
		t.Fatalf("%x: msgpackJSON wrote %q, but the codec refuses it: %v", b, got[len(prefix):], err)
	}
	if !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%x: msgpackJSON wrote\n%s\nthe codec's value is written\n%s", b, got[len(prefix):], want)
	}
	return true
}

// msgpack values of every kind msgpackJSON writes, each integer in
// every width that holds it, maps with duplicate and unsorted keys.
func TestMsgpackJSONMatchesDecoding(t *testing.T) {
	var m msgpackJSON
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt64, -1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	for _, n := range ints {
		for _, b := range intEncodings(n) {
			if !checkMsgpackJSON(t, &m, b) {
				t.Errorf("%d as %x: refused", n, b)
			}
		}
	}
	for _, u := range []uint64{math.MaxUint64, 1 << 63} {
		b := binary.BigEndian.AppendUint64([]byte{0xcf}, u)
		if !checkMsgpackJSON(t, &m, b) {
			t.Errorf("%d: refused", u)
		}
	}
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2.25, 1e-7, 1e21, 123456789.125, math.SmallestNonzeroFloat64, math.MaxFloat64}
	for _, f := range floats {
		if !checkMsgpackJSON(t, &m, binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(f))) {
			t.Errorf("%v: refused", f)
		}
	}
	strs := []string{"", "word", "quote\" back\\slash", "ctl\x00\x1f\n\t", "<html>&", "é ünïcode", "\u2028\u2029", "bad\xffutf8", strings.Repeat("x", 40), strings.Repeat("y", 300), strings.Repeat("z", 70000)}
	for _, s := range strs {
		for _, b := range strEncodings(s) {
			if !checkMsgpackJSON(t, &m, b) {
				t.Errorf("%q as %x: refused", s, b[:min(len(b), 8)])
			}
		}
	}
	docs := []any{
		nil, true, false,
		[]any{}, []any{1, "a", nil, []any{true}},
		map[string]any{}, map[string]any{"sum": 64, "count": 2}, map[string]any{"b": map[string]any{"z": 1, "a": []any{2.5, "x"}}, "a": nil},
		make([]any, 20), // array16
	}
	for _, d := range docs {
		b, err := msgpack.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if !checkMsgpackJSON(t, &m, b) {
			t.Errorf("%v as %x: refused", d, b)
		}
	}
	// A map's keys out of order and repeated: the last is kept.
	dup := []byte{0x84, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02, 0xa1, 'b', 0x03, 0xa1, 'a', 0x92, 0x04, 0x05}
	if !checkMsgpackJSON(t, &m, dup) {
		t.Errorf("%x: refused", dup)
	}
	if got, _ := m.append(nil, dup); string(got) != `{"a":[4,5],"b":3}` {
		t.Errorf("%x: %s, want the last of equal keys", dup, got)
	}
	// Enough repeated keys that only a stable sort keeps the last.
	many := []byte{0xde, 0x00, 40}
	for i := range 40 {
		many = append(many, 0xa1, "cab"[i%3], byte(i))
	}
	if got, _ := m.append(nil, many); string(got) != `{"a":37,"b":38,"c":39}` || !checkMsgpackJSON(t, &m, many) {
		t.Errorf("40 entries of 3 keys: %s, want the last of each", got)
	}
	// map16 and map32 headers, nested maps within arrays within maps.
	big := map[string]any{}
	for i := range 20 {
		big[strings.Repeat("k", i)] = map[string]any{"n": i, "l": []any{map[string]any{"x": i}}}
	}
	b, err := msgpack.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range [][]byte{b, append(binary.BigEndian.AppendUint32([]byte{0xdf}, 20), b[3:]...)} {
		if !checkMsgpackJSON(t, &m, enc) {
			t.Errorf("%x...: refused", enc[:8])
		}
	}
}

// What msgpackJSON leaves to the decoder: kinds whose JSON is not plain
// (binary, extensions, 32-bit floats, non-finite floats, non-string map
// keys), too deep a nesting, trailing bytes, and every cut of a value.
func TestMsgpackJSONRefuses(t *testing.T) {
	var m msgpackJSON
	nan := binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(math.NaN()))
	inf := binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(math.Inf(-1)))
	deep := append(bytes.Repeat([]byte{0x91}, maxMsgpackDepth+1), 0x01)
	for _, b := range [][]byte{
		{0xc4, 0x01, 0xff},             // bin8
		{0xd4, 0x01, 0x02},             // fixext1
		{0xd6, 0xff, 0, 0, 0, 1},       // timestamp extension
		{0xca, 0x3f, 0x80, 0x00, 0x00}, // float32
		nan, inf,
		{0x81, 0x01, 0x02},         // an integer key
		{0x81, 0xc4, 0x01, 'a', 1}, // a binary key
		{0x81, 0xc0, 0x01},         // a nil key
		deep,
		{0x01, 0x02},                   // trailing bytes
		{0xc1},                         // never used
		{0xdd, 0xff, 0xff, 0xff, 0xff}, // array32 claiming more than there is
		{0xdf, 0x7f, 0xff, 0xff, 0xff}, // map32 likewise
		{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		{},
	} {
		if got, ok := m.append(nil, b); ok {
			t.Errorf("%x: wrote %q, want it left to the decoder", b, got)
		}
	}
	whole, err := msgpack.Marshal(map[string]any{"a": []any{int64(1) << 40, "text", 2.5, map[string]any{"n": nil}}, "b": true})
	if err != nil {
		t.Fatal(err)
	}
	if !checkMsgpackJSON(t, &m, whole) {
		t.Fatalf("%x: refused", whole)
	}
	for n := range len(whole) {
		if got, ok := m.append(nil, whole[:n]); ok {
			t.Errorf("cut to %d of %d bytes: wrote %q", n, len(whole), got)
		}
	}
	// One level less than the limit is written.
	if !checkMsgpackJSON(t, &m, deep[1:]) {
		t.Errorf("%d levels: refused", maxMsgpackDepth)
	}
}

// Random documents, each as msgpack.Marshal writes it.
func TestMsgpackJSONRandomDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var m msgpackJSON
	written := 0
	for range 3000 {
		b, err := msgpack.Marshal(randomDoc(rng, 0))
		if err != nil {
			t.Fatal(err)
		}
		if checkMsgpackJSON(t, &m, b) {
			written++
		}
	}
	if written < 2500 {
		t.Errorf("wrote %d of 3000 documents of plain kinds", written)
	}
}

func randomDoc(rng *rand.Rand, depth int) any {
	k := rng.IntN(10)
	if depth > 4 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return rng.Int64() >> rng.IntN(64) * int64(1-2*rng.IntN(2))
	case 3:
		return rng.Uint64() >> rng.IntN(64)
	case 4:
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
	case 5:
		return string([]byte{byte(rng.IntN(256)), 'a', byte(rng.IntN(128))}[:rng.IntN(4)])
	case 6, 7:
		a := make([]any, rng.IntN(5))
		for i := range a {
			a[i] = randomDoc(rng, depth+1)
		}
		return a
	default:
		o := map[string]any{}
		for range rng.IntN(5) {
			o[string(rune('a'+rng.IntN(4)))] = randomDoc(rng, depth+1)
		}
		return o
	}
}

func intEncodings(n int64) [][]byte {
	var out [][]byte
	if n >= 0 && n <= 127 || n >= -32 && n < 0 {
		out = append(out, []byte{byte(n)})
	}
	if n >= 0 {
		u := uint64(n)
		for i, w := range []int{1, 2, 4, 8} {
			if w == 8 || u < 1<<(8*w) {
				out = append(out, append([]byte{0xcc + byte(i)}, be(u, w)...))
			}
		}
	}
	for i, w := range []int{1, 2, 4, 8} {
		if w == 8 || n >= -(1<<(8*w-1)) && n < 1<<(8*w-1) {
			out = append(out, append([]byte{0xd0 + byte(i)}, be(uint64(n), w)...))
		}
	}
	return out
}

func strEncodings(s string) [][]byte {
	var out [][]byte
	n := uint64(len(s))
	if n < 32 {
		out = append(out, append([]byte{0xa0 | byte(n)}, s...))
	}
	for i, w := range []int{1, 2, 4} {
		if w == 4 || n < 1<<(8*w) {
			out = append(out, append(append([]byte{0xd9 + byte(i)}, be(n, w)...), s...))
		}
	}
	return out
}

func be(u uint64, w int) []byte {
	b := binary.BigEndian.AppendUint64(nil, u)
	return b[8-w:]
}

// Whatever msgpackJSON writes is what decoding writes.
func FuzzMsgpackJSON(f *testing.F) {
	for _, d := range []any{map[string]any{"count": 2, "sum": 64}, []any{1, "x", nil, 2.5, map[string]any{"a": []any{}}}, "s", int64(-1) << 40} {
		b, err := msgpack.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x84, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02, 0xa1, 'b', 0x03, 0xa1, 'a', 0x92, 0x04, 0x05})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m msgpackJSON
		checkMsgpackJSON(t, &m, b)
	})
}
