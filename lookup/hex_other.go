//go:build !amd64

package lookup

// hexBlocks encodes nothing: appendHexDigits does it all.
func hexBlocks(out, src []byte) int { return 0 }
