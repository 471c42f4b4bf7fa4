// Package safemsgpack decodes msgpack from bytes that may be damaged or
// hostile without letting a length header decide what is allocated.
//
// msgpack v5.4.1 sizes a slice by the length its header claims before it
// decodes a single element (decodeSliceValue's allocation limit never
// applies), and into an interface it makes room for up to a million
// elements a level: without a check, a five-byte array32 header asks for
// gigabytes, and a thousand bytes of nested ones run the process out of
// memory, which no recover catches. It also reads a string longer than
// 1 MiB in 1 MiB steps, each a new buffer holding all before it: a 50 MB
// operator name cost 320 MB to decode.
package safemsgpack

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Check walks the msgpack value at the start of b and refuses it when an
// array, map, string, binary or extension header claims more elements or
// bytes than b has left, or a string is longer than maxString bytes,
// returning the header's offset (and, when it passes, the offset where the
// value ends). Every pending element needs at least one byte, so a value
// that passes can make a decoder allocate no more elements than b has
// bytes.
func Check(b []byte, maxString int) (offset int64, err error) {
	pos, pending := 0, 1
	for pending > 0 {
		if pos >= len(b) {
			return int64(pos), fmt.Errorf("msgpack document ends with %d values still to come", pending)
		}
		start := pos
		c := b[pos]
		pos++
		pending--
		var items, size int // elements the header opens; bytes of payload
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			size = int(c & 0x1f)
		default:
			var n, width, mult, extra int
			switch c {
			case 0xc4, 0xd9: // bin8, str8
				width = 1
			case 0xc5, 0xda: // bin16, str16
				width = 2
			case 0xc6, 0xdb: // bin32, str32
				width = 4
			case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, then a type byte
				width, extra = 1<<(c-0xc7), 1
			case 0xcc, 0xd0:
				size = 1
			case 0xcd, 0xd1:
				size = 2
			case 0xca, 0xce, 0xd2:
				size = 4
			case 0xcb, 0xcf, 0xd3:
				size = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext: type byte and 1..16 bytes
				size = 1 + 1<<(c-0xd4)
			case 0xdc, 0xde: // array16, map16
				width, mult = 2, 1
			case 0xdd, 0xdf: // array32, map32
				width, mult = 4, 1
			default:
				return int64(start), fmt.Errorf("msgpack byte 0x%02x is not a type", c)
			}
			if width > 0 {
				if len(b)-pos < width {
					return int64(start), fmt.Errorf("msgpack header truncated")
				}
				switch width {
				case 1:
					n = int(b[pos])
				case 2:
					n = int(binary.BigEndian.Uint16(b[pos:]))
				default:
					n = int(binary.BigEndian.Uint32(b[pos:]))
				}
				pos += width
				switch {
				case (c == 0xd9 || c == 0xda || c == 0xdb) && n > maxString:
					return int64(start), fmt.Errorf("msgpack string of %d bytes, more than the %d allowed", n, maxString)
				case mult == 0:
					size = n + extra
				case c == 0xde || c == 0xdf:
					items = 2 * n
				default:
					items = n
				}
			}
		}
		left := len(b) - pos
		if size > left {
			return int64(start), fmt.Errorf("msgpack value of %d bytes, %d left in the document", size, left)
		}
		pos += size
		if items > len(b)-pos-pending {
			return int64(start), fmt.Errorf("msgpack header claims %d elements, %d bytes left in the document", items, len(b)-pos)
		}
		pending += items
	}
	return int64(pos), nil
}

// Unmarshal is msgpack.Unmarshal after Check: it decodes the value at the
// start of b into v, allocating in proportion to len(b) whatever the
// headers claim.
func Unmarshal(b []byte, v any) error {
	if off, err := Check(b, len(b)); err != nil {
		return fmt.Errorf("at offset %d: %w", off, err)
	}
	return msgpack.Unmarshal(b, v)
}
