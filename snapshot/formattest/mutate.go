package formattest

import (
	"encoding/binary"
	"slices"
)

// EditSize is the length of one edit in the input of a fuzz target that
// mutates files with Mutate: a kind, a file selector, a 24-bit position
// and a value byte. Inputs stay small however large the files are, so the
// fuzzer minimizes what it finds quickly.
const EditSize = 6

// maxEdits bounds the edits Mutate applies from one input.
const maxEdits = 64

// editInts are the values an int-sized edit writes: the lengths, counts
// and offsets that decoders must not trust.
var editInts = []int64{0, 1, -1, 0x7fffffff, -0x80000000, 0xffff, 0x10000, 1 << 40}

// Mutate applies edits (EditSize bytes each, at most 64) to copies of the
// named files and returns the files it changed. A selector below 128
// edits names[0]; others pick among the rest of names. Kinds: set a byte,
// flip bits, truncate, write a big-endian int or long from a set of
// hostile values, insert a byte, delete a byte. Files grow by at most one
// byte per edit.
func Mutate(files map[string][]byte, names []string, edits []byte) map[string][]byte {
	out := map[string][]byte{}
	for n := 0; n+EditSize <= len(edits) && n < maxEdits*EditSize; n += EditSize {
		e := edits[n : n+EditSize]
		name := names[0]
		if e[1] >= 128 && len(names) > 1 {
			name = names[1+int(e[1]-128)%(len(names)-1)]
		}
		b, ok := out[name]
		if !ok {
			b = slices.Clone(files[name])
		}
		pos := int(e[2])<<16 | int(e[3])<<8 | int(e[4])
		v := e[5]
		switch e[0] % 7 {
		case 0:
			if len(b) > 0 {
				b[pos%len(b)] = v
			}
		case 1:
			if len(b) > 0 {
				b[pos%len(b)] ^= v | 1
			}
		case 2:
			b = b[:pos%(len(b)+1)]
		case 3:
			if len(b) >= 4 {
				binary.BigEndian.PutUint32(b[pos%(len(b)-3):], uint32(editInts[int(v)%len(editInts)]))
			}
		case 4:
			if len(b) >= 8 {
				binary.BigEndian.PutUint64(b[pos%(len(b)-7):], uint64(editInts[int(v)%len(editInts)]))
			}
		case 5:
			b = slices.Insert(b, pos%(len(b)+1), v)
		case 6:
			if len(b) > 0 {
				b = slices.Delete(b, pos%len(b), pos%len(b)+1)
			}
		}
		out[name] = b
	}
	return out
}
