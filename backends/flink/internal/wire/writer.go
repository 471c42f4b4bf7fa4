package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Writer is a big-endian (Java DataOutputStream) encoder. The first error is
// sticky, like the reader's.
type Writer struct {
	B   []byte
	Err error
}

// AppendModifiedUTF8 appends s in Java's modified UTF-8: NUL as C0 80,
// characters beyond the BMP as two 3-byte surrogates.
func AppendModifiedUTF8(b []byte, s string) []byte {
	for _, r := range s {
		if r == utf8.RuneError {
			r = 0xFFFD
		}
		units := []uint16{uint16(r)}
		if r > 0xFFFF {
			a, c := utf16.EncodeRune(r)
			units = []uint16{uint16(a), uint16(c)}
		}
		for _, u := range units {
			switch {
			case u != 0 && u < 0x80:
				b = append(b, byte(u))
			case u < 0x800:
				b = append(b, 0xC0|byte(u>>6), 0x80|byte(u&0x3F))
			default:
				b = append(b, 0xE0|byte(u>>12), 0x80|byte(u>>6&0x3F), 0x80|byte(u&0x3F))
			}
		}
	}
	return b
}

// U8, Bool, U16, I32, I64 and Raw append one value as DataOutputStream
// writes it.
func (o *Writer) U8(v byte)    { o.B = append(o.B, v) }
func (o *Writer) Bool(v bool)  { o.U8(map[bool]byte{false: 0, true: 1}[v]) }
func (o *Writer) U16(v uint16) { o.B = binary.BigEndian.AppendUint16(o.B, v) }
func (o *Writer) I32(v int32)  { o.B = binary.BigEndian.AppendUint32(o.B, uint32(v)) }
func (o *Writer) I64(v int64)  { o.B = binary.BigEndian.AppendUint64(o.B, uint64(v)) }
func (o *Writer) Raw(b []byte) { o.B = append(o.B, b...) }

// Bytes32 appends b after its int length.
func (o *Writer) Bytes32(b []byte) {
	o.I32(int32(len(b)))
	o.Raw(b)
}

// Fail records the first error.
func (o *Writer) Fail(format string, args ...any) {
	if o.Err == nil {
		o.Err = fmt.Errorf(format, args...)
	}
}

// UTF writes s as Java's writeUTF: an unsigned 16-bit length, then
// modified UTF-8 (NUL as C0 80, characters beyond the BMP as two 3-byte
// surrogates).
func (o *Writer) UTF(s string) {
	enc := AppendModifiedUTF8(nil, s)
	if len(enc) > 0xFFFF {
		o.Fail("string of %d encoded bytes is longer than the 65535 Java's writeUTF takes", len(enc))
		enc = enc[:0]
	}
	o.U16(uint16(len(enc)))
	o.Raw(enc)
}
