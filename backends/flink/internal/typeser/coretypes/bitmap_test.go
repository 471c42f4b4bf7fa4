package coretypes

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

var testTable = typeser.NewTable(Family)

func bitmapCodec(t testing.TB) typeser.Codec {
	t.Helper()
	c, err := testTable.CodecFactory(snapshot.Type{Name: typeser.TypePrefix + "bitmap"})
	if err != nil {
		t.Fatal(err)
	}
	return c.(typeser.Codec)
}

// randomSet is a set of Java ints of the shapes a bitmap's containers
// take: sparse values, dense ones, runs, across keys and the sign bit.
func randomSet(rng *rand.Rand) []int32 {
	var out []int32
	for range rng.Intn(4) {
		base := rng.Uint32()
		switch rng.Intn(3) {
		case 0: // sparse
			for range rng.Intn(50) {
				out = append(out, int32(base+uint32(rng.Intn(1<<20))))
			}
		case 1: // a run, maybe past its container's end
			for i := range rng.Intn(70000) {
				out = append(out, int32(base+uint32(i)))
			}
		default: // dense but broken up
			for i := range rng.Intn(20000) {
				if rng.Intn(3) > 0 {
					out = append(out, int32(base+uint32(i)))
				}
			}
		}
	}
	return out
}

// Property: any set of ints encodes to bytes that decode to the set, in
// the unsigned order of its values, spanning exactly their length; and
// those bytes are a fixed point (what Flink writes again after reading
// them).
func TestBitmapEncodesAndDecodesBack(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	c := bitmapCodec(t)
	for i := 0; i < 120; i++ {
		set := randomSet(rng)
		in := make([]any, len(set))
		for j, x := range set {
			in[j] = json.Number(strconv.Itoa(int(x)))
		}
		b, err := c.Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%d values encode to %d bytes, which do not decode: %v", len(set), len(b), err)
		}
		slices.SortFunc(set, func(x, y int32) int { return int(int64(uint32(x)) - int64(uint32(y))) })
		set = slices.Compact(set)
		want := make([]any, len(set))
		for j, x := range set {
			want[j] = int64(x)
		}
		if !slices.Equal(got.([]any), want) {
			t.Fatalf("%d values decode back to %d others", len(want), len(got.([]any)))
		}
		if n, ok, err := typeser.Span(c.S, b); err != nil || !ok || n != len(b) {
			t.Fatalf("spans %d of %d, %v, %v", n, len(b), ok, err)
		}
		again, _ := c.Encode(jsonOf(t, got))
		if string(again) != string(b) {
			t.Fatalf("the bytes of a decoded bitmap encode otherwise")
		}
	}
}

func jsonOf(t testing.TB, v any) any {
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	d := json.NewDecoder(strings.NewReader(string(text)))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// le builds a portable bitmap from little-endian uint16s and uint32s
// (given as uint16 and uint32) and bytes.
func le(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch x := p.(type) {
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, x)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case byte:
			b = append(b, x)
		}
	}
	return b
}

// framed is a portable bitmap behind Flink's int length.
func framed(p []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// Bytes no Flink writes are damage at their offset (the length's 4 bytes
// in front count); a bitmap too big to show is not decoded.
func TestBitmapDamage(t *testing.T) {
	c := bitmapCodec(t)
	const noRuns, runs = uint32(cookieNoRuns), uint16(cookieRuns)
	for _, tc := range []struct {
		name string
		p    []byte
		err  string
	}{
		{"unknown cookie", le(uint32(1), uint32(0)), "offset 4: bitmap: cookie 1 is neither 12346 nor 12347"},
		{"hostile count", le(noRuns, uint32(65535)), "offset 4: bitmap: 65535 containers in 0 bytes"},
		{"keys out of order", le(noRuns, uint32(2), uint16(5), uint16(0), uint16(4), uint16(0), uint32(24), uint32(26), uint16(1), uint16(1)),
			"offset 16: bitmap: container key 4 after 5"},
		{"offset", le(noRuns, uint32(1), uint16(0), uint16(0), uint32(17), uint16(1)), "offset 20: bitmap: container 0 is at 16, its offset says 17"},
		{"array order", le(noRuns, uint32(1), uint16(0), uint16(1), uint32(16), uint16(5), uint16(3)), "offset 22: bitmap: array container 0: value 3 after 5"},
		{"run overlap", le(runs, uint16(0), byte(1), uint16(0), uint16(5), uint16(2), uint16(0), uint16(2), uint16(1), uint16(2)),
			"offset 13: bitmap: run 1 of container 0, from 1 for 3, overlaps the one before"},
		{"run cardinality", le(runs, uint16(0), byte(1), uint16(0), uint16(4), uint16(1), uint16(0), uint16(2)),
			"offset 13: bitmap: container 0's runs hold 3 values, its header says 5"},
		{"bytes after", le(noRuns, uint32(0), byte(0)), "offset 12: bitmap: 1 bytes after the last container"},
		{"truncated", le(noRuns, uint32(1), uint16(0), uint16(2), uint32(16), uint16(1)), "offset 20: bitmap: truncated array container"},
	} {
		v, err := c.Decode(framed(tc.p))
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, %v; want damage %q", tc.name, v, err, tc.err)
		}
	}
	// 17 full containers as runs: more values than a value shows.
	p := binary.LittleEndian.AppendUint16(nil, cookieRuns)
	p = binary.LittleEndian.AppendUint16(p, 16)
	p = append(p, 0xff, 0xff, 0x01)
	for k := range 17 {
		p = binary.LittleEndian.AppendUint16(p, uint16(k))
		p = binary.LittleEndian.AppendUint16(p, 0xffff)
	}
	for k := range 17 {
		p = binary.LittleEndian.AppendUint32(p, uint32(3+4+17*8+6*k))
	}
	for range 17 {
		p = append(p, 1, 0, 0, 0, 0xff, 0xff)
	}
	if v, err := c.Decode(framed(p)); !errors.Is(err, snapshot.ErrNotDecoded) {
		t.Errorf("17 full containers: %v, %v; want not decoded", v != nil, err)
	}
	if n, ok, err := typeser.Span(c.S, framed(p)); err != nil || !ok || n != len(p)+4 {
		t.Errorf("17 full containers span %d, %v, %v", n, ok, err)
	}
	for _, bad := range []string{`{"a":1}`, `[1,"x"]`, `[4294967296]`} {
		var v any
		d := json.NewDecoder(strings.NewReader(bad))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if b, err := c.Encode(v); err == nil {
			t.Errorf("%s encodes to %x", bad, b)
		}
	}
}
