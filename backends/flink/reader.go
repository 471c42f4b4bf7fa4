package flink

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// reader decodes big-endian (Java DataOutputStream) values from a byte slice.
// The first failure is sticky: later reads return zero values, so a decoder can
// read a whole structure and check r.err once. Nothing is allocated from a
// length before that length has been checked against the bytes that remain.
type reader struct {
	buf  []byte
	off  int
	file string
	base int64 // offset of buf[0] in file
	err  error
}

func newReader(buf []byte, file string, base int64) *reader {
	return &reader{buf: buf, file: file, base: base}
}

func (r *reader) remaining() int { return len(r.buf) - r.off }

// pos is the current offset in the file.
func (r *reader) pos() int64 { return r.base + int64(r.off) }

// failAt records a corruption error at file offset at (first error wins).
func (r *reader) failAt(at int64, format string, args ...any) {
	if r.err == nil {
		r.err = &CorruptError{File: r.file, Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
	r.off = len(r.buf)
}

func (r *reader) fail(format string, args ...any) { r.failAt(r.pos(), format, args...) }

func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || n > r.remaining() {
		r.fail("truncated %s: need %d bytes, %d left", what, n, r.remaining())
		return false
	}
	return true
}

func (r *reader) take(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u8(what string) byte {
	b := r.take(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) bool(what string) bool {
	at := r.pos()
	switch v := r.u8(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.failAt(at, "%s: boolean byte is %d, not 0 or 1", what, v)
		return false
	}
}

func (r *reader) u16(what string) uint16 {
	b := r.take(2, what)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (r *reader) i16(what string) int16 { return int16(r.u16(what)) }

func (r *reader) i32(what string) int32 {
	b := r.take(4, what)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) i64(what string) int64 {
	b := r.take(8, what)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) f64(what string) float64 { return math.Float64frombits(uint64(r.i64(what))) }

// count validates a signed element count: it must be >= 0 and, with each
// element taking at least minSize bytes, fit in what remains.
func (r *reader) count(n int64, minSize int, what string, at int64) int {
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.failAt(at, "%s: negative count %d", what, n)
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > int64(r.remaining()/minSize) {
		r.failAt(at, "%s: count %d needs at least %d bytes, %d left", what, n, n*int64(minSize), r.remaining())
		return 0
	}
	return int(n)
}

// count32 reads an int count and validates it like count.
func (r *reader) count32(minSize int, what string) int {
	at := r.pos()
	return r.count(int64(r.i32(what)), minSize, what, at)
}

// bytes32 reads an int length and that many bytes (a view into the buffer).
func (r *reader) bytes32(what string) []byte {
	if r.err == nil && r.remaining() >= 4 {
		// Most often: no message to name, so none is made.
		if n := int32(binary.BigEndian.Uint32(r.buf[r.off:])); n >= 0 && int(n) <= r.remaining()-4 {
			r.off += 4
			return r.take(int(n), what)
		}
	}
	n := r.count32(1, what+" length")
	return r.take(n, what)
}

// utf reads a Java writeUTF string: an unsigned 16-bit byte length, then
// modified UTF-8.
func (r *reader) utf(what string) string {
	at := r.pos()
	n := int(r.u16(what + " length"))
	b := r.take(n, what)
	if r.err != nil {
		return ""
	}
	s, ok := decodeModifiedUTF8(b)
	if !ok {
		r.failAt(at, "%s: invalid modified UTF-8", what)
		return ""
	}
	return s
}

// decodeModifiedUTF8 decodes Java's modified UTF-8 (NUL as C0 80, characters
// outside the BMP as two 3-byte surrogates) into a Go string.
func decodeModifiedUTF8(b []byte) (string, bool) {
	ascii := true
	for _, c := range b {
		if c == 0 || c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), true
	}
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c != 0 && c < 0x80:
			units = append(units, uint16(c))
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return "", false
			}
			units = append(units, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return "", false
			}
			units = append(units, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			return "", false
		}
	}
	return utf16ToString(units), true
}

// utf16ToString converts UTF-16 code units to UTF-8, replacing unpaired
// surrogates with U+FFFD.
func utf16ToString(units []uint16) string {
	out := make([]byte, 0, len(units))
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if u >= 0xD800 && u < 0xDC00 && i+1 < len(units) {
			if l := rune(units[i+1]); l >= 0xDC00 && l < 0xE000 {
				u = 0x10000 + (u-0xD800)<<10 + (l - 0xDC00)
				i++
			}
		}
		if u >= 0xD800 && u < 0xE000 {
			u = utf8.RuneError
		}
		out = utf8.AppendRune(out, u)
	}
	return string(out)
}

func float32frombits(b uint32) float32 { return math.Float32frombits(b) }
