package filesystem

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/stateutil/stateutil/internal/envelope"
)

func crc(b []byte) uint32 { return crc32.Checksum(b, envelope.Castagnoli) }

// decodeSection decodes a whole section held in b.
func decodeSection(b []byte, nstates int) ([]entryView, error) {
	var out []entryView
	for len(b) > 0 {
		var e entryView
		n, _, err := decodeEntry(b, int64(len(b)), nstates, &e)
		if err != nil {
			return out, err
		}
		out = append(out, e)
		b = b[n:]
	}
	return out, nil
}

func FuzzSection(f *testing.F) {
	var seed []byte
	seed = appendEntry(seed, 0, []byte("user-1"), nil, nil, []byte{0, 0, 0, 0, 0, 0, 0, 42}, 0)
	seed = appendEntry(seed, 2, []byte("user-1"), []byte{1}, []byte("u0"), []byte("v"), 1700000060000)
	seed = appendEntry(seed, 3, nil, nil, nil, nil, -5)
	f.Add(seed, 4)
	f.Add(seed[:7], 4)
	f.Add([]byte{0x80, 0x00, 0, 0, 0, 0}, 1)
	f.Add([]byte{1, 0, 0, 0, 0, 0}, 1)
	f.Add([]byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 1)
	f.Fuzz(func(t *testing.T, b []byte, nstates int) {
		nstates = nstates&63 + 1
		es, err := decodeSection(b, nstates)
		if err != nil {
			if err == errShort {
				t.Fatalf("errShort for a complete section: %x", b)
			}
			return
		}
		// A section that decodes has exactly one encoding.
		var again []byte
		for _, e := range es {
			if e.state >= nstates {
				t.Fatalf("state %d of %d", e.state, nstates)
			}
			again = appendEntry(again, e.state, e.key, e.namespace, e.userKey, e.value, e.expiresAt)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decode/encode changed the section:\n%x\n%x", b, again)
		}
		// Any prefix of the section, with the rest still to come, is
		// decoded as far as it goes and then asks for more.
		for cut := range len(b) {
			var e entryView
			if _, need, err := decodeEntry(b[:cut], int64(len(b)), nstates, &e); err == errShort && need <= int64(cut) {
				t.Fatalf("errShort at cut %d asks for only %d bytes", cut, need)
			} else if err != nil && err != errShort {
				t.Fatalf("prefix %d of a valid section: %v", cut, err)
			}
		}
	})
}
