package filesystem

import (
	"fmt"
	"testing"
)

// withTinyBuffers makes every section and operator-state blob take the
// streaming paths: chunked reads, checksums checked at the end.
func withTinyBuffers(t *testing.T, chunk, limit int64) {
	oldChunk, oldLimit := readChunk, verifyLimit
	readChunk, verifyLimit = chunk, limit
	t.Cleanup(func() { readChunk, verifyLimit = oldChunk, oldLimit })
}

func TestStreamingPaths(t *testing.T) {
	for _, tc := range []struct{ chunk, limit int64 }{{1, 0}, {7, 3}, {64, 40}} {
		withTinyBuffers(t, tc.chunk, tc.limit)
		name := fmt.Sprintf("chunk=%d,verify=%d/", tc.chunk, tc.limit)
		t.Run(name+"roundtrip", TestRoundTrip)
		t.Run(name+"flips", TestEveryByteFlipIsCorrupt)
		t.Run(name+"one key group", TestSingleKeyGroupReadsOnlyItsSection)
		t.Run(name+"hostile", TestHostileMetadata)
		t.Run(name+"hostile section", TestHostileSectionLength)
	}
}
