package storage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Checksummer is a Storage that can tell a file's CRC32C without sending
// its bytes to the caller: HDFS composes it from the checksums its
// datanodes keep beside every block. CRC32C returns the file's size and
// CRC32C, or an error wrapping errors.ErrUnsupported for a file it cannot
// tell it of (one whose blocks carry another checksum), which the caller
// then reads.
type Checksummer interface {
	CRC32C(ctx context.Context, path string) (size int64, crc uint32, err error)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileCRC32C returns the size and CRC32C of the file at p: from st where
// it is a Checksummer that can tell them, else by reading the file
// through buf.
func FileCRC32C(ctx context.Context, st Storage, p string, buf []byte) (int64, uint32, error) {
	if c, ok := st.(Checksummer); ok {
		n, crc, err := c.CRC32C(ctx, p)
		if !errors.Is(err, errors.ErrUnsupported) {
			return n, crc, err
		}
	}
	f, err := st.Open(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var crc uint32
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		k, err := f.Read(buf)
		crc = crc32.Update(crc, castagnoli, buf[:k])
		n += int64(k)
		if err == io.EOF {
			return n, crc, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s at offset %d: %w", st.URI(p), n, err)
		}
	}
}

// crc32cCombine is the CRC32C of a's bytes followed by b's, from their
// CRC32Cs and the length of b's: a's CRC advanced over lenB zero bytes
// (a linear map, applied as powers of two of a matrix over GF(2)), xored
// with b's.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	// One zero bit: shift right, and xor the polynomial in if a one fell out.
	var op [32]uint32
	op[0] = crc32.Castagnoli
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	// Eight zero bits (one byte), then a byte count's binary digits.
	for range 3 {
		op = gf2Square(op)
	}
	for ; lenB > 0; lenB >>= 1 {
		if lenB&1 != 0 {
			crcA = gf2Apply(op, crcA)
		}
		op = gf2Square(op)
	}
	return crcA ^ crcB
}

// gf2Apply multiplies vector v by matrix m, whose column i is m[i].
func gf2Apply(m [32]uint32, v uint32) uint32 {
	var out uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			out ^= m[i]
		}
	}
	return out
}

// gf2Square is m times m.
func gf2Square(m [32]uint32) [32]uint32 {
	var out [32]uint32
	for i := range m {
		out[i] = gf2Apply(m, m[i])
	}
	return out
}
