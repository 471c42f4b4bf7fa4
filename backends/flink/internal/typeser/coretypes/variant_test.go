package coretypes

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

func variantCodec(t testing.TB) typeser.Codec {
	t.Helper()
	c, err := testTable.CodecFactory(snapshot.Type{Name: typeser.TypePrefix + "variant"})
	if err != nil {
		t.Fatal(err)
	}
	return c.(typeser.Codec)
}

// variantWriter writes JSON trees in the binary variant encoding, by the
// spec, with 4-byte counts, ids and offsets throughout (a layout Flink's
// builder does not choose, but one any reader must read).
type variantWriter struct{ keys map[string]int }

func (w *variantWriter) value(v any) []byte {
	u32 := func(b []byte, n int) []byte { return binary.LittleEndian.AppendUint32(b, uint32(n)) }
	switch x := v.(type) {
	case nil:
		return []byte{0}
	case bool:
		if x {
			return []byte{1 << 2}
		}
		return []byte{2 << 2}
	case json.Number:
		n, _ := x.Int64()
		return binary.LittleEndian.AppendUint64([]byte{6 << 2}, uint64(n))
	case string:
		return append(u32([]byte{16 << 2}, len(x)), x...)
	case []any:
		b := u32([]byte{3 | (3|1<<2)<<2}, len(x))
		var data []byte
		for _, e := range x {
			b = u32(b, len(data))
			data = append(data, w.value(e)...)
		}
		return append(u32(b, len(data)), data...)
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		b := u32([]byte{2 | (3|3<<2|1<<4)<<2}, len(x))
		for _, k := range names {
			if _, ok := w.keys[k]; !ok {
				w.keys[k] = len(w.keys)
			}
			b = u32(b, w.keys[k])
		}
		var data []byte
		for _, k := range names {
			b = u32(b, len(data))
			data = append(data, w.value(x[k])...)
		}
		return append(u32(b, len(data)), data...)
	}
	panic("no variant for " + strconv.Quote(string(mustJSON(v))))
}

// metadata writes the keys with 4-byte offsets.
func (w *variantWriter) metadata() []byte {
	names := make([]string, len(w.keys))
	for k, i := range w.keys {
		names[i] = k
	}
	b := binary.LittleEndian.AppendUint32([]byte{1 | 3<<6}, uint32(len(names)))
	var bytes []byte
	for _, k := range names {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(bytes)))
		bytes = append(bytes, k...)
	}
	return append(binary.LittleEndian.AppendUint32(b, uint32(len(bytes))), bytes...)
}

func serialized(value, meta []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(value)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(meta)))
	return append(append(b, value...), meta...)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func randomTree(rng *rand.Rand, depth int) any {
	switch n := rng.Intn(7); {
	case n == 0:
		return nil
	case n == 1:
		return rng.Intn(2) == 0
	case n == 2:
		return json.Number(strconv.FormatInt(rng.Int63()-rng.Int63(), 10))
	case n == 3 || depth > 3:
		return strings.Repeat("é", rng.Intn(5)) + strconv.Itoa(rng.Intn(100))
	case n == 4 || n == 5:
		a := []any{}
		for range rng.Intn(5) {
			a = append(a, randomTree(rng, depth+1))
		}
		return a
	}
	m := map[string]any{}
	for range rng.Intn(5) {
		m["k"+strconv.Itoa(rng.Intn(8))] = randomTree(rng, depth+1)
	}
	return m
}

// Property: any JSON tree, written in the binary variant encoding,
// decodes to itself and spans exactly its bytes.
func TestVariantTrees(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	c := variantCodec(t)
	for i := 0; i < 500; i++ {
		tree := randomTree(rng, 0)
		w := &variantWriter{keys: map[string]int{}}
		b := serialized(w.value(tree), w.metadata())
		got, err := c.Decode(b)
		if err != nil || string(mustJSON(got)) != string(mustJSON(tree)) {
			t.Fatalf("%s: decodes to %s, %v", mustJSON(tree), mustJSON(got), err)
		}
		if n, ok, err := typeser.Span(c.S, b); err != nil || !ok || n != len(b) {
			t.Fatalf("%s: spans %d of %d, %v, %v", mustJSON(tree), n, len(b), ok, err)
		}
	}
}

// Bytes no Flink writes are damage at their offset (the 8 bytes of
// lengths in front count); a variant is not written from JSON, only as
// its bytes.
func TestVariantDamage(t *testing.T) {
	c := variantCodec(t)
	meta := []byte{1, 0, 0} // version 1, no keys
	for _, tc := range []struct {
		name        string
		value, meta []byte
		err         string
	}{
		{"metadata version", []byte{0}, []byte{2, 0, 0}, "offset 9: variant: metadata version 2, Flink writes 1"},
		{"primitive type", []byte{17 << 2}, meta, "offset 8: variant: primitive type 17 is none of Flink's"},
		{"bytes after", []byte{0, 0}, meta, "offset 9: variant: 1 bytes after the variant's value"},
		{"truncated", []byte{6 << 2, 1, 2}, meta, "offset 9: variant: truncated variant primitive"},
		{"key id", []byte{2, 1, 5, 0, 1, 0}, meta, "offset 10: variant: object key id 5 of 0 keys"},
		{"hostile count", []byte{3, 200}, meta, "offset 8: variant: array of 200 elements in 2 bytes"},
		{"not UTF-8", []byte{1<<2 | 1, 0xff}, meta, "offset 9: variant: string is not UTF-8"},
		// An array of 4 elements all at offset 0, an array of 4 nulls all at
		// offset 0: 21 values in 15 bytes, a JSON that would grow past them.
		{"shared values", []byte{3, 4, 0, 0, 0, 0, 8, 3, 4, 0, 0, 0, 0, 1, 0}, meta, "more values than its 15 bytes: its offsets share values"},
	} {
		v, err := c.Decode(serialized(tc.value, tc.meta))
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, %v; want damage %q", tc.name, v, err, tc.err)
		}
	}
	if b, err := c.Encode("a"); !errors.Is(err, typeser.ErrNoEncoder) {
		t.Errorf(`"a" encodes to %x, %v`, b, err)
	}
	raw := serialized([]byte{1 << 2}, meta)
	if b, err := c.Encode(map[string]any{"@class": "v", "@bytes": "0x" + hex.EncodeToString(raw)}); err != nil || string(b) != string(raw) {
		t.Errorf("its bytes encode to %x, %v", b, err)
	}
}
