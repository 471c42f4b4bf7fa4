package statefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
)

// canonicalGroup builds canonical key-group data: states one after
// another, each a state id then key/value pairs, the last pair's key
// flagged, then the end mark.
func canonicalGroup(rng *rand.Rand, states int) []byte {
	var b []byte
	for s := range states {
		b = binary.BigEndian.AppendUint16(b, uint16(s))
		n := 1 + rng.IntN(40)
		for i := range n {
			key := []byte{byte(rng.IntN(100)), byte(i), byte(i >> 8)}
			if i == n-1 {
				key[0] |= 0x80
			}
			val := make([]byte, rng.IntN(3)*rng.IntN(300<<10)) // some empty, some past a window
			for j := range val {
				val[j] = byte(j * (i + 1))
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
			b = append(b, key...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(val)))
			b = append(b, val...)
		}
	}
	return binary.BigEndian.AppendUint16(b, EndOfKeyGroupMark)
}

// A key group read as a stream, a window at a time, gives what it gives
// read whole: the same entries, or the same error at the same offset,
// for sound data and for data with a byte flipped or cut off.
func TestCanonicalStreamReadsAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	hdr := &KeyedHeader{States: []*StateMeta{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	streamed := func(data []byte, compressed bool) (string, error) {
		var src io.Reader = bytes.NewReader(data)
		if compressed {
			var z bytes.Buffer
			w := snappy.NewBufferedWriter(&z)
			w.Write(data)
			w.Close()
			src = snappy.NewReader(&z)
		}
		var sb bytes.Buffer
		_, err := canonicalEach(src, "f", 1000, hdr, compressed, nil, func(e KeyedEntry) (bool, error) {
			fmt.Fprintf(&sb, "%s %x %d %x\n", e.State, e.Key, len(e.Value), e.Value[:min(len(e.Value), 8)])
			return true, nil
		})
		return sb.String(), err
	}
	whole := func(data []byte, compressed bool) (string, error) {
		es, err := canonicalEntries(data, "f", 1000, hdr, compressed)
		var sb bytes.Buffer
		for _, e := range es {
			fmt.Fprintf(&sb, "%s %x %d %x\n", e.State, e.Key, len(e.Value), e.Value[:min(len(e.Value), 8)])
		}
		return sb.String(), err
	}
	for round := range 40 {
		data := canonicalGroup(rng, 1+rng.IntN(3))
		compressed := round%4 == 3
		damaged := bytes.Clone(data)
		switch round % 3 {
		case 1:
			damaged[rng.IntN(len(damaged))] ^= 0xff
		case 2:
			damaged = damaged[:rng.IntN(len(damaged))]
		}
		want, wantErr := whole(damaged, compressed)
		got, gotErr := streamed(damaged, compressed)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("round %d (%d bytes): streamed error %v, whole %v", round, len(damaged), gotErr, wantErr)
		}
		if wantErr == nil && got != want {
			t.Fatalf("round %d: streamed entries differ from whole ones", round)
		}
		if round%3 == 0 && (wantErr != nil || got == "") {
			t.Fatalf("round %d: sound data read %q, %v", round, got, wantErr)
		}
	}
}
