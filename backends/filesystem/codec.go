package filesystem

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// minEntrySize is the smallest encoded entry: a head and four empty lengths.
const minEntrySize = 5

// entryView is a decoded entry whose byte fields alias the section buffer.
type entryView struct {
	state     int
	key       []byte
	namespace []byte
	userKey   []byte
	value     []byte
	expiresAt int64
}

// size is the entry's bytes as snapshot.Entry.Size counts them.
func (e *entryView) size() int64 {
	return int64(len(e.key) + len(e.namespace) + len(e.userKey) + len(e.value))
}

// appendEntry encodes one entry onto b.
func appendEntry(b []byte, state int, key, ns, userKey, value []byte, expiresAt int64) []byte {
	head := uint64(state) << 1
	if expiresAt != 0 {
		head |= 1
	}
	b = binary.AppendUvarint(b, head)
	b = appendField(b, key)
	b = appendField(b, ns)
	b = appendField(b, userKey)
	b = appendField(b, value)
	if expiresAt != 0 {
		b = binary.AppendVarint(b, expiresAt)
	}
	return b
}

func appendField(b, f []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

// errShort means the buffer ends inside an entry that the section still
// has bytes for: read more and try again.
var errShort = errors.New("short buffer")

// decodeEntry decodes the entry at the start of b into e and returns its
// length. avail is how many bytes the section has from b[0] on (>= len(b));
// a length that runs past avail is corruption, one that runs past len(b)
// only is errShort with need set to the bytes wanted. Errors other than
// errShort are plain messages; the caller adds file and offset.
func decodeEntry(b []byte, avail int64, nstates int, e *entryView) (n int, need int64, err error) {
	head, n, err := uvarint(b, n, avail)
	if err != nil {
		return 0, int64(n) + binary.MaxVarintLen64, err
	}
	if head>>1 >= uint64(nstates) {
		return 0, 0, fmt.Errorf("state index %d out of range (%d states)", head>>1, nstates)
	}
	e.state = int(head >> 1)
	for _, f := range [...]*[]byte{&e.key, &e.namespace, &e.userKey, &e.value} {
		var l uint64
		l, n, err = uvarint(b, n, avail)
		if err != nil {
			return 0, int64(n) + binary.MaxVarintLen64, err
		}
		if l > uint64(avail-int64(n)) {
			return 0, 0, fmt.Errorf("field length %d runs past the section end (%d bytes left)", l, avail-int64(n))
		}
		end := int64(n) + int64(l)
		if end > int64(len(b)) {
			return 0, end + 4*binary.MaxVarintLen64, errShort
		}
		*f = b[n:end:end]
		n = int(end)
	}
	e.expiresAt = 0
	if head&1 != 0 {
		var x uint64
		x, n, err = uvarint(b, n, avail)
		if err != nil {
			return 0, int64(n) + binary.MaxVarintLen64, err
		}
		e.expiresAt = int64(x>>1) ^ -int64(x&1) // zig-zag, as binary.Varint
		if e.expiresAt == 0 {
			return 0, 0, errors.New("TTL flag set with expiry 0")
		}
	}
	return n, 0, nil
}

// uvarint reads a minimal uvarint at b[off:].
func uvarint(b []byte, off int, avail int64) (uint64, int, error) {
	if off < len(b) && b[off] < 0x80 { // the common case: lengths below 128
		return uint64(b[off]), off + 1, nil
	}
	v, k := binary.Uvarint(b[off:])
	switch {
	case k > 0:
		if k > 1 && b[off+k-1] == 0 {
			return 0, off, errors.New("non-minimal varint")
		}
		return v, off + k, nil
	case k < 0:
		return 0, off, errors.New("varint overflows 64 bits")
	case int64(len(b)) >= avail:
		return 0, off, errors.New("section ends inside a varint")
	}
	return 0, off, errShort
}

var errTooMany = errors.New("more entries than _metadata records")
