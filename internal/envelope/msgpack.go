package envelope

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// CheckMsgpack walks the msgpack value at the start of b and refuses it
// when an array, map, string, binary or extension header claims more
// elements or bytes than b has left, returning the header's offset. Every
// pending element needs at least one byte, so a value that passes can make
// a decoder allocate no more elements than b has bytes.
//
// msgpack v5.4.1 sizes a slice by the length its header claims before it
// decodes a single element (decodeSliceValue's allocation limit never
// applies), so without this check a five-byte array32 header in a damaged
// or hostile file asks for gigabytes.
func CheckMsgpack(b []byte) (offset int64, err error) {
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

// ReadMsgpack reads the framed file at path and decodes its msgpack body
// into v, refusing length claims the body cannot back before the decoder
// allocates for them. Errors reading the file come back as they are.
func (k Kind) ReadMsgpack(ctx context.Context, st storage.Storage, path string, bodyLimit int64, v any) error {
	body, err := k.Read(ctx, st, path, bodyLimit)
	if err != nil {
		return err
	}
	return k.DecodeMsgpack(body, st.URI(path), v)
}

// DecodeMsgpack decodes a verified body into v, as ReadMsgpack does.
func (k Kind) DecodeMsgpack(body []byte, name string, v any) error {
	if off, err := CheckMsgpack(body); err != nil {
		return snapshot.Corrupt(name, HeaderSize+off, "%s body: %v", k.Name, err)
	}
	if err := msgpack.Unmarshal(body, v); err != nil {
		return snapshot.Corrupt(name, HeaderSize, "undecodable %s body: %v", k.Name, err)
	}
	return nil
}
