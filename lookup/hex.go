package lookup

import (
	"encoding/binary"
	"slices"
)

// appendHexDigits appends src in lowercase hex, as hex.AppendEncode does,
// 16 bytes at a time where the CPU has byte shuffles, else eight: dump
// writes every bytes-typed value this way, and a byte-at-a-time table
// lookup is most of its time.
func appendHexDigits(dst, src []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(src))[:n+2*len(src)]
	out := dst[n:]
	done := hexBlocks(out, src)
	src, out = src[done:], out[2*done:]
	for len(src) >= 8 {
		binary.BigEndian.PutUint64(out, hexWord(binary.BigEndian.Uint32(src)))
		binary.BigEndian.PutUint64(out[8:], hexWord(binary.BigEndian.Uint32(src[4:])))
		src, out = src[8:], out[16:]
	}
	for i, c := range src {
		out[2*i], out[2*i+1] = hexDigits[c>>4], hexDigits[c&0xf]
	}
	return dst
}

// hexWord spreads v's eight nibbles into the eight bytes of a word, most
// significant first, and makes each its ASCII digit.
func hexWord(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// A nibble of 10 or more carries into bit 4 when 6 is added: those
	// bytes get 'a'-'0'-10 more.
	letters := ((x + 0x0606060606060606) >> 4) & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}
