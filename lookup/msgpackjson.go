package lookup

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// msgpackJSON writes msgpack values as JSON text straight from their
// bytes: the text appendValue writes for the value the msgpack codec
// decodes, without the maps and interfaces of decoding it. It keeps its
// scratch space from value to value.
type msgpackJSON struct {
	members []mpMember
}

// mpMember is a map's entry: its key, and where its value lies.
type mpMember struct {
	key        string
	start, end int
}

// maxMsgpackDepth bounds the nesting msgpackJSON follows; deeper values
// are left to the decoder.
const maxMsgpackDepth = 32

// append appends b's JSON text to dst. ok is false, with dst as it was,
// where the text is not that of a plain document: binary or extension
// values, 32-bit or non-finite floats, map keys that are not strings,
// nesting deeper than maxMsgpackDepth, bytes after the value, or damage.
// The caller then decodes b as the codec does, and shows what that gives.
func (m *msgpackJSON) append(dst, b []byte) ([]byte, bool) {
	out, end, ok := m.value(dst, b, 0, 0)
	if !ok || end != len(b) {
		return dst, false
	}
	return out, true
}

// value appends the JSON of the value at b[pos:] and returns where it
// ends.
func (m *msgpackJSON) value(dst, b []byte, pos, depth int) ([]byte, int, bool) {
	if pos >= len(b) || depth > maxMsgpackDepth {
		return dst, 0, false
	}
	c := b[pos]
	pos++
	switch {
	case c <= 0x7f:
		return strconv.AppendInt(dst, int64(c), 10), pos, true
	case c >= 0xe0:
		return strconv.AppendInt(dst, int64(int8(c)), 10), pos, true
	case c >= 0xa0 && c <= 0xbf:
		return m.str(dst, b, pos, int(c&0x1f))
	case c >= 0x90 && c <= 0x9f:
		return m.array(dst, b, pos, int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return m.object(dst, b, pos, int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return append(dst, "null"...), pos, true
	case 0xc2:
		return append(dst, "false"...), pos, true
	case 0xc3:
		return append(dst, "true"...), pos, true
	case 0xcb: // float64
		if len(b)-pos < 8 {
			return dst, 0, false
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b[pos:]))
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, 0, false
		}
		return appendFloat(dst, f, 64), pos + 8, true
	case 0xcc, 0xcd, 0xce, 0xcf: // uint8 to uint64
		n, next, ok := bigEndian(b, pos, 1<<(c-0xcc))
		return strconv.AppendUint(dst, n, 10), next, ok
	case 0xd0, 0xd1, 0xd2, 0xd3: // int8 to int64
		w := 1 << (c - 0xd0)
		n, next, ok := bigEndian(b, pos, w)
		// Sign-extend from w bytes.
		shift := 64 - 8*w
		return strconv.AppendInt(dst, int64(n<<shift)>>shift, 10), next, ok
	case 0xd9, 0xda, 0xdb: // str8 to str32
		n, next, ok := bigEndian(b, pos, 1<<(c-0xd9))
		if !ok {
			return dst, 0, false
		}
		return m.str(dst, b, next, int(min(n, math.MaxInt32)))
	case 0xdc, 0xdd: // array16, array32
		n, next, ok := bigEndian(b, pos, 2<<(c-0xdc))
		if !ok {
			return dst, 0, false
		}
		return m.array(dst, b, next, int(min(n, math.MaxInt32)), depth)
	case 0xde, 0xdf: // map16, map32
		n, next, ok := bigEndian(b, pos, 2<<(c-0xde))
		if !ok {
			return dst, 0, false
		}
		return m.object(dst, b, next, int(min(n, math.MaxInt32)), depth)
	}
	return dst, 0, false
}

// bigEndian reads a w-byte unsigned integer at b[pos:].
func bigEndian(b []byte, pos, w int) (uint64, int, bool) {
	if len(b)-pos < w {
		return 0, 0, false
	}
	var n uint64
	for _, x := range b[pos : pos+w] {
		n = n<<8 | uint64(x)
	}
	return n, pos + w, true
}

func (m *msgpackJSON) str(dst, b []byte, pos, n int) ([]byte, int, bool) {
	if len(b)-pos < n {
		return dst, 0, false
	}
	return appendString(dst, bytesString(b[pos:pos+n])), pos + n, true
}

func (m *msgpackJSON) array(dst, b []byte, pos, n, depth int) ([]byte, int, bool) {
	// Every element takes a byte at least: a longer claim is damage.
	if n > len(b)-pos {
		return dst, 0, false
	}
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, pos, ok = m.value(dst, b, pos, depth+1); !ok {
			return dst, 0, false
		}
	}
	return append(dst, ']'), pos, true
}

// object writes a map as encoding/json writes the map[string]any it
// decodes to: keys sorted, the last of equal keys kept.
func (m *msgpackJSON) object(dst, b []byte, pos, n, depth int) ([]byte, int, bool) {
	if n > (len(b)-pos)/2 {
		return dst, 0, false
	}
	// This map's members are appended after those of the maps that
	// contain it, and dropped when it is written.
	base := len(m.members)
	defer func() { m.members = m.members[:base] }()
	for range n {
		key, next, ok := strKey(b, pos)
		if !ok {
			return dst, 0, false
		}
		end, ok := skip(b, next)
		if !ok {
			return dst, 0, false
		}
		m.members = append(m.members, mpMember{key, next, end})
		pos = end
	}
	members := m.members[base:]
	slices.SortStableFunc(members, func(a, b mpMember) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	written := 0
	for i := range members {
		// The members may move while a nested map appends its own.
		mb := m.members[base+i]
		if i+1 < len(members) && m.members[base+i+1].key == mb.key {
			// Not written, but decoded all the same: it must be plain.
			mark := len(dst)
			var ok bool
			if dst, _, ok = m.value(dst, b[:mb.end], mb.start, depth+1); !ok {
				return dst[:mark], 0, false
			}
			dst = dst[:mark]
			continue
		}
		if written++; written > 1 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, mb.key)
		dst = append(dst, ':')
		var ok bool
		if dst, _, ok = m.value(dst, b[:mb.end], mb.start, depth+1); !ok {
			return dst, 0, false
		}
	}
	return append(dst, '}'), pos, true
}

// strKey reads a map key that is a msgpack string.
func strKey(b []byte, pos int) (string, int, bool) {
	if pos >= len(b) {
		return "", 0, false
	}
	c := b[pos]
	pos++
	n := 0
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		l, next, ok := bigEndian(b, pos, 1<<(c-0xd9))
		if !ok {
			return "", 0, false
		}
		n, pos = int(min(l, math.MaxInt32)), next
	default:
		return "", 0, false
	}
	if len(b)-pos < n {
		return "", 0, false
	}
	return bytesString(b[pos : pos+n]), pos + n, true
}

// skip returns where the value at b[pos:] ends, for the kinds value
// writes. Each value it counts takes a byte, so it ends within len(b)
// steps.
func skip(b []byte, pos int) (int, bool) {
	for pending := 1; pending > 0; pending-- {
		if pos >= len(b) {
			return 0, false
		}
		c := b[pos]
		pos++
		size, items := 0, 0
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0xa0 && c <= 0xbf:
			size = int(c & 0x1f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c == 0xcb || c == 0xcf || c == 0xd3:
			size = 8
		case c == 0xcc || c == 0xd0:
			size = 1
		case c == 0xcd || c == 0xd1:
			size = 2
		case c == 0xce || c == 0xd2:
			size = 4
		case c >= 0xd9 && c <= 0xdb:
			n, next, ok := bigEndian(b, pos, 1<<(c-0xd9))
			if !ok {
				return 0, false
			}
			size, pos = int(min(n, math.MaxInt32)), next
		case c >= 0xdc && c <= 0xdf:
			n, next, ok := bigEndian(b, pos, 2<<((c-0xdc)&1))
			if !ok {
				return 0, false
			}
			items, pos = int(min(n, math.MaxInt32)), next
			if c >= 0xde {
				items *= 2
			}
		default:
			return 0, false
		}
		if size > len(b)-pos || items > len(b)-pos {
			return 0, false
		}
		pos += size
		pending += items
	}
	return pos, true
}

func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
