package lookup

import "golang.org/x/sys/cpu"

var haveSSSE3 = cpu.X86.HasSSSE3

// hexSSSE3 writes the 2n hex digits of src's first n bytes (n a positive
// multiple of 16) to dst, 16 bytes at a time with byte shuffles.
//
//go:noescape
func hexSSSE3(dst, src *byte, n int)

// hexBlocks encodes the longest prefix of src that is a multiple of 16
// bytes into out, where the CPU can, and returns its length.
func hexBlocks(out, src []byte) int {
	n := len(src) &^ 15
	if n == 0 || !haveSSSE3 {
		return 0
	}
	hexSSSE3(&out[0], &src[0], n)
	return n
}
