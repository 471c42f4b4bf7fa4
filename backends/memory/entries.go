package memory

import (
	"encoding/binary"
	"fmt"
	"math"
)

// entryFields is the length of an entry's msgpack array.
const entryFields = 7

// decodeEntries decodes a key group, the msgpack array of entries the
// writer encodes, into *es. The entries' byte fields are slices of b, so
// nothing is copied: a key group is read into one buffer and decoded in
// place. Only the shape the writer writes is read (an array of 7-element
// arrays of integers and binaries or nils), and every length is checked
// against the bytes left before it is used. An error gives the offset in
// b where the shape breaks.
func decodeEntries(b []byte, es *[]entry) (int64, error) {
	d := entryDecoder{b: b}
	n := d.arrayLen()
	// Every entry takes at least 8 bytes: no header makes room for more.
	if d.err == nil && n > (len(b)-d.pos)/8 {
		d.fail(0, "array of %d entries in %d bytes", n, len(b))
	}
	for i := 0; i < n && d.err == nil; i++ {
		at := d.pos
		if m := d.arrayLen(); d.err == nil && m != entryFields {
			d.fail(at, "entry of %d fields, want %d", m, entryFields)
			break
		}
		var e entry
		e.KeyGroup = d.int()
		e.State = d.int()
		e.Key = d.bytes()
		e.Namespace = d.bytes()
		e.UserKey = d.bytes()
		e.Value = d.bytes()
		e.ExpiresAt = int64(d.int())
		*es = append(*es, e)
	}
	if d.err == nil && d.pos != len(b) {
		d.fail(d.pos, "%d bytes after the entries", len(b)-d.pos)
	}
	return d.at, d.err
}

type entryDecoder struct {
	b   []byte
	pos int
	at  int64
	err error
}

func (d *entryDecoder) fail(at int, format string, args ...any) {
	if d.err == nil {
		d.at, d.err = int64(at), fmt.Errorf(format, args...)
	}
}

// take returns the next n bytes, or fails at the header at.
func (d *entryDecoder) take(n, at int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.fail(at, "%d bytes claimed, %d left", n, len(d.b)-d.pos)
		return nil
	}
	p := d.b[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return p
}

// code returns the next type byte, or 0xc1 (never used) when none is left.
func (d *entryDecoder) code() (byte, int) {
	at := d.pos
	if c := d.take(1, at); c != nil {
		return c[0], at
	}
	return 0xc1, at
}

// uint reads a big-endian unsigned integer of width bytes.
func (d *entryDecoder) uint(width, at int) uint64 {
	p := d.take(width, at)
	switch len(p) {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(p))
	case 4:
		return uint64(binary.BigEndian.Uint32(p))
	case 8:
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *entryDecoder) arrayLen() int {
	c, at := d.code()
	switch {
	case d.err != nil:
		return 0
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f)
	case c == 0xdc:
		return int(d.uint(2, at))
	case c == 0xdd:
		return int(d.uint(4, at))
	}
	d.fail(at, "type byte %#02x where an array starts", c)
	return 0
}

func (d *entryDecoder) int() int {
	c, at := d.code()
	var v int64
	switch {
	case d.err != nil:
		return 0
	case c <= 0x7f:
		v = int64(c)
	case c >= 0xe0:
		v = int64(int8(c))
	case c >= 0xcc && c <= 0xcf: // uint8..uint64
		u := d.uint(1<<(c-0xcc), at)
		if u > math.MaxInt64 {
			d.fail(at, "integer %d out of range", u)
			return 0
		}
		v = int64(u)
	case c >= 0xd0 && c <= 0xd3: // int8..int64
		width := 1 << (c - 0xd0)
		u := d.uint(width, at)
		v = int64(u<<(64-8*width)) >> (64 - 8*width)
	default:
		d.fail(at, "type byte %#02x where an integer is", c)
	}
	return int(v)
}

// bytes reads a binary or string, nil for a msgpack nil.
func (d *entryDecoder) bytes() []byte {
	c, at := d.code()
	var n int
	switch {
	case d.err != nil:
		return nil
	case c == 0xc0:
		return nil
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		n = int(d.uint(1, at))
	case c == 0xc5 || c == 0xda:
		n = int(d.uint(2, at))
	case c == 0xc6 || c == 0xdb:
		n = int(d.uint(4, at))
	default:
		d.fail(at, "type byte %#02x where bytes are", c)
		return nil
	}
	return d.take(n, at)
}
