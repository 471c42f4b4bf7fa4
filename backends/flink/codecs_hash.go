package flink

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Java hashCodes of key types beyond those of hashAny, so that keys of
// these types can be re-hashed when max parallelism changes: Float, and
// the Table API's RowData keys, which are BinaryRowData at run time.

// hashMore hashes one key of a serializer hashAny does not know; ok is
// false when this file does not know it either.
func hashMore(r *reader, s *SerializerSnapshot) (h int32, ok bool) {
	if serKind(s) == "Float" {
		v := math.Float32frombits(uint32(r.i32("float")))
		if v != v {
			return 0x7fc00000, true // Float.hashCode canonicalizes NaN
		}
		return int32(math.Float32bits(v)), true
	}
	return 0, false
}

// hashBinaryRow hashes a RowData key, which is a BinaryRowData at run
// time: RowDataSerializer and BinaryRowDataSerializer write the row's
// binary form, an int length, then the bytes.
func hashBinaryRow(r *reader, s *SerializerSnapshot) (int32, bool) {
	switch serKind(s) {
	case "RowData", "BinaryRow":
		n := r.count32(1, "binary row length")
		b := r.take(n, "binary row")
		return BinaryRowHash(b), true
	}
	return 0, false
}

// BinaryRowHash is BinaryRowData.hashCode of a row's bytes: Flink's
// MurmurHashUtil over its memory by 4-byte words read little-endian (a
// binary row's size is a multiple of 8), seed 42, with the trailing bytes
// mixed one at a time should there be any, and finalized with the length.
func BinaryRowHash(b []byte) int32 {
	h := uint32(42)
	i := 0
	for ; i+4 <= len(b); i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(b[i:])))
	}
	for ; i < len(b); i++ {
		h = mixH1(h, mixK1(uint32(int32(int8(b[i])))))
	}
	h ^= uint32(len(b))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h)
}

func mixK1(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}
