package memory

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/snapshot"
)

// randomEntries are entries of every shape the writer encodes: integers
// of every msgpack width and sign, byte fields nil, empty, short and
// long enough for bin16 and bin32 headers, and arrays past 15 and 65535
// entries.
func randomEntries(rng *rand.Rand) []entry {
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64, -1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt64}
	field := func() []byte {
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2:
			return bytes.Repeat([]byte{byte(rng.IntN(256))}, 256+rng.IntN(300))
		case 3:
			if rng.IntN(20) == 0 {
				return bytes.Repeat([]byte{7}, 70000)
			}
		}
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	n := rng.IntN(40)
	if rng.IntN(50) == 0 {
		n = 65536 + rng.IntN(10)
	}
	es := make([]entry, n)
	for i := range es {
		es[i] = entry{
			KeyGroup: int(ints[rng.IntN(len(ints))]), State: rng.IntN(300),
			Key: field(), Namespace: field(), UserKey: field(), Value: field(),
			ExpiresAt: ints[rng.IntN(len(ints))],
		}
	}
	return es
}

func encodeEntries(t testing.TB, es []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := msgpack.NewEncoder(&b).Encode(es); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameBytes is bytes.Equal that also tells nil from empty, as msgpack does.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

func sameEntries(a, b []entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.KeyGroup != y.KeyGroup || x.State != y.State || x.ExpiresAt != y.ExpiresAt ||
			!sameBytes(x.Key, y.Key) || !sameBytes(x.Namespace, y.Namespace) || !sameBytes(x.UserKey, y.UserKey) || !sameBytes(x.Value, y.Value) {
			return false
		}
	}
	return true
}

// What the writer encodes decodes to the same entries, nil and empty
// fields told apart; every cut of it is refused at an offset inside it.
func TestDecodeEntriesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		want := randomEntries(rng)
		b := encodeEntries(t, want)
		var got []entry
		if off, err := decodeEntries(b, &got); err != nil {
			t.Fatalf("round %d: %v at %d", round, err, off)
		}
		if !sameEntries(got, want) {
			t.Fatalf("round %d: decoded other entries", round)
		}
		if len(b) > 4096 {
			continue
		}
		for cut := range len(b) {
			var es []entry
			off, err := decodeEntries(b[:cut], &es)
			if err == nil {
				t.Fatalf("round %d: cut at %d of %d decoded", round, cut, len(b))
			}
			if off < 0 || off > int64(cut) {
				t.Fatalf("round %d: cut at %d: offset %d outside", round, cut, off)
			}
		}
	}
}

// A hostile header claims more entries or bytes than there are: refused
// before anything is allocated for them.
func TestDecodeEntriesHostileLengths(t *testing.T) {
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0x91, 0x97, 0x00, 0x00, 0xc6, 0xff, 0xff, 0xff, 0xff},
		{0x91, 0x97, 0x00, 0x00, 0xc4, 0x05, 1, 2},
		{0x91, 0x96, 0x00, 0x00, 0xc0, 0xc0, 0xc0, 0xc0},
		{0x91, 0x97, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xc0, 0xc0, 0xc0, 0xc0, 0x00},
		{0x90, 0x00},
	} {
		var es []entry
		if _, err := decodeEntries(b, &es); err == nil {
			t.Errorf("% x decoded to %d entries", b, len(es))
		}
	}
}

// Whatever decodeEntries accepts, msgpack itself decodes to the same
// entries; decodeEntries never panics and allocates no more entries than
// the input has bytes.
func FuzzDecodeEntries(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		if b := encodeEntries(f, randomEntries(rng)); len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Add([]byte{0x91, 0x97, 0xa1, 'x', 0x00, 0xd9, 0x01, 'k', 0xc0, 0xc0, 0xc0, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []entry
		if _, err := decodeEntries(b, &got); err != nil {
			return
		}
		if len(got) > len(b)/8 {
			t.Fatalf("%d entries from %d bytes", len(got), len(b))
		}
		if _, err := safemsgpack.Check(b, snapshot.MaxStringBytes); err != nil {
			t.Fatalf("decoded, but safemsgpack refuses it: %v", err)
		}
		var want []entry
		if err := msgpack.Unmarshal(b, &want); err != nil {
			t.Fatalf("decoded, but msgpack refuses it: %v", err)
		}
		if !sameEntries(got, want) {
			t.Fatalf("decoded %+v, msgpack %+v", got, want)
		}
	})
}
