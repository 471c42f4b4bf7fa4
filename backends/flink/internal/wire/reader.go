package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/stateutil/stateutil/snapshot"
)

// Reader decodes big-endian (Java DataOutputStream) values from a byte slice.
// The first failure is sticky: later reads return zero values, so a decoder can
// read a whole structure and check r.err once. Nothing is allocated from a
// length before that length has been checked against the bytes that remain.
type Reader struct {
	Buf  []byte
	Off  int
	File string
	Base int64 // offset of buf[0] in file
	Err  error
	// BySchema is set once part of the bytes was read by a schema the
	// user gave, not one the snapshot records: a value that then fails
	// is not decoded by that schema (it may not be the writer's), not
	// damage.
	BySchema *snapshot.NotDecodedError
}

func NewReader(buf []byte, file string, base int64) *Reader {
	return &Reader{Buf: buf, File: file, Base: base}
}

func (r *Reader) Remaining() int { return len(r.Buf) - r.Off }

// Pos is the current offset in the file.
func (r *Reader) Pos() int64 { return r.Base + int64(r.Off) }

// FailAt records a corruption error at file offset at (first error wins).
func (r *Reader) FailAt(at int64, format string, args ...any) {
	if r.Err == nil {
		r.Err = &CorruptError{File: r.File, Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
	r.Off = len(r.Buf)
}

func (r *Reader) Fail(format string, args ...any) { r.FailAt(r.Pos(), format, args...) }

func (r *Reader) need(n int, what string) bool {
	if r.Err != nil {
		return false
	}
	if n < 0 || n > r.Remaining() {
		r.Fail("truncated %s: need %d bytes, %d left", what, n, r.Remaining())
		return false
	}
	return true
}

func (r *Reader) Take(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	b := r.Buf[r.Off : r.Off+n]
	r.Off += n
	return b
}

func (r *Reader) U8(what string) byte {
	b := r.Take(1, what)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *Reader) Bool(what string) bool {
	at := r.Pos()
	switch v := r.U8(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.FailAt(at, "%s: boolean byte is %d, not 0 or 1", what, v)
		return false
	}
}

func (r *Reader) U16(what string) uint16 {
	b := r.Take(2, what)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

func (r *Reader) I16(what string) int16 { return int16(r.U16(what)) }

func (r *Reader) I32(what string) int32 {
	b := r.Take(4, what)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *Reader) I64(what string) int64 {
	b := r.Take(8, what)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *Reader) F64(what string) float64 { return math.Float64frombits(uint64(r.I64(what))) }

// Count validates a signed element count: it must be >= 0 and, with each
// element taking at least minSize bytes, fit in what remains.
func (r *Reader) Count(n int64, minSize int, what string, at int64) int {
	if r.Err != nil {
		return 0
	}
	if n < 0 {
		r.FailAt(at, "%s: negative count %d", what, n)
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > int64(r.Remaining()/minSize) {
		r.FailAt(at, "%s: count %d needs at least %d bytes, %d left", what, n, n*int64(minSize), r.Remaining())
		return 0
	}
	return int(n)
}

// Count32 reads an int count and validates it like count.
func (r *Reader) Count32(minSize int, what string) int {
	at := r.Pos()
	return r.Count(int64(r.I32(what)), minSize, what, at)
}

// Bytes32 reads an int length and that many bytes (a view into the buffer).
func (r *Reader) Bytes32(what string) []byte {
	if r.Err == nil && r.Remaining() >= 4 {
		// Most often: no message to name, so none is made.
		if n := int32(binary.BigEndian.Uint32(r.Buf[r.Off:])); n >= 0 && int(n) <= r.Remaining()-4 {
			r.Off += 4
			return r.Take(int(n), what)
		}
	}
	n := r.Count32(1, what+" length")
	return r.Take(n, what)
}

// UTF reads a Java writeUTF string: an unsigned 16-bit byte length, then
// modified UTF-8.
func (r *Reader) UTF(what string) string {
	at := r.Pos()
	n := int(r.U16(what + " length"))
	b := r.Take(n, what)
	if r.Err != nil {
		return ""
	}
	s, ok := DecodeModifiedUTF8(b)
	if !ok {
		r.FailAt(at, "%s: invalid modified UTF-8", what)
		return ""
	}
	return s
}

// DecodeModifiedUTF8 decodes Java's modified UTF-8 (NUL as C0 80, characters
// outside the BMP as two 3-byte surrogates) into a Go string.
func DecodeModifiedUTF8(b []byte) (string, bool) {
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

func Float32frombits(b uint32) float32 { return math.Float32frombits(b) }
