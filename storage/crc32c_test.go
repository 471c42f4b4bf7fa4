package storage

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// Combining the CRC32Cs of two pieces gives the CRC32C of the whole, as
// hash/crc32 computes it over the bytes, for pieces of every length
// around the powers of two the combination walks.
func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for _, cut := range []int{0, 1, 2, 7, 8, 9, 511, 512, 4096, 65535, 65536, 100000, len(data)} {
		for _, end := range []int{cut, cut + 1, cut + 3, cut + 512, len(data)} {
			if end > len(data) {
				continue
			}
			a, b := data[:cut], data[cut:end]
			got := crc32cCombine(crc32.Checksum(a, tab), crc32.Checksum(b, tab), int64(len(b)))
			if want := crc32.Checksum(data[:end], tab); got != want {
				t.Fatalf("combine of %d and %d bytes: %08x, want %08x", len(a), len(b), got, want)
			}
		}
	}
}
