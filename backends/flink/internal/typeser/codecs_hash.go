package typeser

import (
	"math"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Java hashCodes of key types beyond those of hashAny, so that keys of
// these types can be re-hashed when max parallelism changes: Float, and
// the Table API's RowData keys, which are BinaryRowData at run time.

// hashMore hashes one key of a serializer hashAny does not know; ok is
// false when this file does not know it either.
func hashMore(r *wire.Reader, s *SerializerSnapshot) (h int32, ok bool) {
	if KindOf(s) == "Float" {
		v := math.Float32frombits(uint32(r.I32("float")))
		if v != v {
			return 0x7fc00000, true // Float.hashCode canonicalizes NaN
		}
		return int32(math.Float32bits(v)), true
	}
	return 0, false
}
