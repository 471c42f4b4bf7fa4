package envelope

import (
	"math"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type doc struct {
	Name    string            `msgpack:"name"`
	Big     string            `msgpack:"big"`
	Blob    []byte            `msgpack:"blob"`
	Ints    []int64           `msgpack:"ints"`
	Floats  []float64         `msgpack:"floats"`
	Nested  [][]uint32        `msgpack:"nested"`
	Map     map[string]any    `msgpack:"map"`
	Many    map[string]string `msgpack:"many"`
	When    time.Time         `msgpack:"when"`
	Nil     *doc              `msgpack:"nil"`
	Flag    bool              `msgpack:"flag"`
	Float32 float32           `msgpack:"f32"`
}

func sample() []byte {
	d := doc{
		Name: "x", Big: string(make([]byte, 300)), Blob: make([]byte, 300),
		Ints:   []int64{0, 1, -1, 127, 128, -33, 255, 256, 65535, 65536, math.MaxInt32 + 1, math.MinInt64, math.MaxInt64},
		Floats: []float64{0.5, math.Inf(1)}, Nested: [][]uint32{{1, 2}, {}, make([]uint32, 20)},
		Map:  map[string]any{"a": nil, "b": []any{"c", 1.5, false}},
		Many: map[string]string{}, When: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Flag: true, Float32: 1.25,
	}
	for i := range 20 {
		d.Many[string(rune('a'+i))] = "v"
	}
	b, err := msgpack.Marshal(&d)
	if err != nil {
		panic(err)
	}
	return b
}

func TestCheckMsgpackAcceptsEncoderOutput(t *testing.T) {
	b := sample()
	if off, err := CheckMsgpack(b); err != nil || off != int64(len(b)) {
		t.Fatalf("CheckMsgpack = %d, %v; want %d, nil", off, err, len(b))
	}
	// Every proper prefix is an incomplete document.
	for n := range len(b) {
		if _, err := CheckMsgpack(b[:n]); err == nil {
			t.Fatalf("prefix of %d of %d bytes accepted", n, len(b))
		}
	}
}

func TestCheckMsgpackRefusesHugeClaims(t *testing.T) {
	for name, b := range map[string][]byte{
		"array32": {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01},
		"array16": {0xdc, 0x00, 0x03, 0x01, 0x01},
		"map32":   {0xdf, 0x80, 0, 0, 0, 1, 1},
		"fixmap":  {0x81, 0x01},
		"str32":   {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		"bin32":   {0xc6, 0x7f, 0xff, 0xff, 0xff},
		"ext32":   {0xc9, 0x7f, 0xff, 0xff, 0xff, 0x01},
		"nested":  {0x91, 0x91, 0x91, 0xdd, 0x10, 0, 0, 0},
		"never":   {0xc1},
	} {
		if _, err := CheckMsgpack(b); err == nil {
			t.Errorf("%s: %x accepted", name, b)
		}
	}
}

// FuzzCheckMsgpack: whatever CheckMsgpack accepts, msgpack decodes
// without allocating more than the input justifies.
func FuzzCheckMsgpack(f *testing.F) {
	f.Add(sample())
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := CheckMsgpack(b); err != nil {
			return
		}
		var v doc
		_ = msgpack.Unmarshal(b, &v)
		var a any
		_ = msgpack.Unmarshal(b, &a)
	})
}
