package tableruntime

import (
	"encoding/binary"
	"math/bits"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// hashBinaryRow hashes a RowData key, which is a BinaryRowData at run
// time: RowDataSerializer and BinaryRowDataSerializer write the row's
// binary form, an int length, then the bytes.
func hashBinaryRow(r *wire.Reader, s *typeser.SerializerSnapshot) (int32, bool) {
	switch typeser.KindOf(s) {
	case "RowData", "BinaryRow":
		n := r.Count32(1, "binary row length")
		b := r.Take(n, "binary row")
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
