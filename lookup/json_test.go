package lookup

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// AppendJSON writes what encoding/json writes, for every kind of value a
// decoder makes.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b []byte
		// Long runs of plain ASCII too, so that a special byte lands at
		// every place of the 8-byte words appendString skips.
		plain := rng.IntN(3) == 0
		for range rng.IntN(40) {
			if plain && rng.IntN(10) > 0 {
				b = append(b, byte('0'+rng.IntN(60)))
				continue
			}
			b = append(b, []byte("aé\"\\\n\t\x01<>&\u2028😀\xff z\x1f\x7f")[rng.IntN(22)])
		}
		return string(b)
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(14); {
		case n == 0:
			return nil
		case n == 1:
			return rng.Int64() - math.MaxInt64/2
		case n == 2:
			return int32(rng.Uint32())
		case n == 3:
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
		case n == 4:
			return rng.IntN(2) == 0
		case n == 5:
			return int8(rng.Uint32())
		case n == 6:
			return uint64(rng.Uint64())
		case n == 7:
			b := make([]byte, rng.IntN(40))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return hexBytes(b)
		case n < 10 || depth > 3:
			return str()
		case n < 12:
			var l []any
			for range rng.IntN(4) {
				l = append(l, value(depth+1))
			}
			return l
		}
		m := map[string]any{}
		for range rng.IntN(4) {
			m[str()] = value(depth + 1)
		}
		return m
	}
	for i := range 5000 {
		rec := &Record{SchemaVersion: 1, Operator: "op", State: "s\"t", Kind: "map", Key: value(0), KeyGroup: i, Subtask: i % 3, Value: value(0)}
		if i%3 == 0 {
			rec.Namespace = value(0)
		}
		switch i % 8 {
		case 0, 4:
			rec.TTL = &TTL{ExpiresAt: time.UnixMilli(rng.Int64N(1 << 42)).UTC(), Expired: i%8 == 0, Now: time.UnixMilli(1 << 41).UTC()}
		case 2:
			rec.TTL = &TTL{LastAccess: time.UnixMilli(rng.Int64N(1 << 42)).UTC(), Now: time.UnixMilli(1 << 41).UTC()}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if got := AppendJSON(nil, rec); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

// A map state's entries dumped as an object are the JSON of the map get
// renders from the same entries: keys sorted, the last of equal keys kept.
func TestObjectIsTheMapsJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		m := map[string]any{}
		var o object
		for range rng.IntN(8) {
			k := string([]byte("ab<\"é")[:rng.IntN(4)])
			v := any(rng.Int64N(100))
			if rng.IntN(3) == 0 {
				v = hexBytes{byte(rng.Uint32())}
			}
			m[k] = v
			o = append(o, member{k, v})
		}
		o.sortKeys()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		if got := string(appendValue(nil, &o)) + "\n"; got != want.String() {
			t.Fatalf("case %d: object %s, map %s", i, got, want.String())
		}
	}
}

// Any string comes out as encoding/json writes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii words", "0123456\"89abcdef", "\x1f1234567", "1234567\\", "abcdefg\u00e9hij", "\u2028abcdefgh\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(append(got, '\n'), want.Bytes()) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want.Bytes())
		}
	})
}
