package keygroup

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
)

// OperatorIDOfUID is the OperatorID Flink derives from an operator's uid
// (StreamGraphHasherV2's user-specified hash): MurmurHash3 x64 128-bit,
// seed 0, over the uid's UTF-8 bytes, as Guava's murmur3_128 lays its
// result out (h1 then h2, each little-endian). The hex form is the
// model's operator id.
func OperatorIDOfUID(uid string) string {
	h := murmur3x64128([]byte(uid), 0)
	return hex.EncodeToString(h[:])
}

func murmur3x64128(data []byte, seed uint64) [16]byte {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	h1, h2 := seed, seed
	n := len(data)
	i := 0
	for ; i+16 <= n; i += 16 {
		k1 := binary.LittleEndian.Uint64(data[i:])
		k2 := binary.LittleEndian.Uint64(data[i+8:])
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	tail := data[i:]
	var k1, k2 uint64
	for j := len(tail) - 1; j >= 8; j-- {
		k2 ^= uint64(tail[j]) << (8 * (j - 8))
	}
	for j := min(len(tail), 8) - 1; j >= 0; j-- {
		k1 ^= uint64(tail[j]) << (8 * j)
	}
	if len(tail) > 8 {
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
	}
	if len(tail) > 0 {
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:], h1)
	binary.LittleEndian.PutUint64(out[8:], h2)
	return out
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
