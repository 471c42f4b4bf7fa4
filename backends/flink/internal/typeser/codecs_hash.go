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
	if h, ok := hashTemporal(r, KindOf(s)); ok {
		return h, true
	}
	if h, ok := hashValueType(r, s, KindOf(s)); ok {
		return h, true
	}
	if KindOf(s) == "Float" {
		return javaFloatBits(math.Float32frombits(uint32(r.I32("float")))), true
	}
	return 0, false
}

// javaFloatBits is Float.floatToIntBits: every NaN is 0x7fc00000.
func javaFloatBits(f float32) int32 {
	if f != f {
		return 0x7fc00000
	}
	return int32(math.Float32bits(f))
}

// javaDoubleBits is Double.doubleToLongBits: every NaN is
// 0x7ff8000000000000 (Go's math.NaN() is not that one).
func javaDoubleBits(d float64) int64 {
	if d != d {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(d))
}
