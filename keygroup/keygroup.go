// Package keygroup is Apache Flink's key-group arithmetic, bit for bit: the
// murmur hash of a key's Java hashCode, the key group of a key, the
// key-group range of a subtask, and the subtask of a key group.
package keygroup

import (
	"errors"
	"fmt"
	"math/bits"
)

// UpperBoundMaxParallelism is the largest max parallelism Flink allows.
const UpperBoundMaxParallelism = 1 << 15

// ErrInvalidParallelism reports a parallelism or max parallelism outside
// 0 < p <= maxP <= 32768.
var ErrInvalidParallelism = errors.New("invalid parallelism")

// Range is an inclusive range of key groups [Start, End]. An empty range has
// End < Start.
type Range struct {
	Start int `json:"start" msgpack:"s"`
	End   int `json:"end" msgpack:"e"`
}

// Len is the number of key groups in the range.
func (r Range) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Contains reports whether kg lies in the range.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Intersect is the overlap of two ranges (possibly empty).
func (r Range) Intersect(o Range) Range {
	return Range{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
}

func (r Range) String() string {
	if r.Len() == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%d,%d]", r.Start, r.End)
}

// Check validates 0 < parallelism <= maxParallelism <= 32768.
func Check(parallelism, maxParallelism int) error {
	if maxParallelism <= 0 || maxParallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("%w: max parallelism %d is outside 1..%d", ErrInvalidParallelism, maxParallelism, UpperBoundMaxParallelism)
	}
	if parallelism <= 0 {
		return fmt.Errorf("%w: parallelism %d must be at least 1", ErrInvalidParallelism, parallelism)
	}
	if parallelism > maxParallelism {
		return fmt.Errorf("%w: parallelism %d exceeds max parallelism %d", ErrInvalidParallelism, parallelism, maxParallelism)
	}
	return nil
}

// Murmur is Flink's MathUtils.murmurHash of a 32-bit hash code: a
// non-negative int.
func Murmur(code int32) int32 {
	c := uint32(code)
	c *= 0xcc9e2d51
	c = bits.RotateLeft32(c, 15)
	c *= 0x1b873593
	c = bits.RotateLeft32(c, 13)
	c = c*5 + 0xe6546b64
	c ^= 4
	c ^= c >> 16
	c *= 0x85ebca6b
	c ^= c >> 13
	c *= 0xc2b2ae35
	c ^= c >> 16
	v := int32(c)
	switch {
	case v >= 0:
		return v
	case v != -1<<31:
		return -v
	}
	return 0
}

// OfHash is the key group of a key whose Java hashCode is code.
func OfHash(code int32, maxParallelism int) int {
	// Murmur is never negative: the remainder is unsigned, and for a
	// power of two (Flink's defaults all are) a mask, not a division,
	// which cost as much as the hash on a re-hash of small entries.
	h, m := uint32(Murmur(code)), uint32(maxParallelism)
	if m != 0 && m&(m-1) == 0 {
		return int(h & (m - 1))
	}
	return int(h % m)
}

// RangeOf is the key-group range Flink assigns to subtask index of an
// operator at the given parallelism.
func RangeOf(maxParallelism, parallelism, index int) Range {
	mp, p, i := int64(maxParallelism), int64(parallelism), int64(index)
	return Range{
		Start: int((i*mp + p - 1) / p),
		End:   int(((i+1)*mp - 1) / p),
	}
}

// SubtaskOf is the subtask index that owns key group kg.
func SubtaskOf(kg, maxParallelism, parallelism int) int {
	return int(int64(kg) * int64(parallelism) / int64(maxParallelism))
}

// DefaultMaxParallelism is the max parallelism Flink derives from an
// operator's parallelism when none is configured.
func DefaultMaxParallelism(parallelism int) int {
	n := parallelism + parallelism/2
	pow := 1
	for pow < n {
		pow <<= 1
	}
	return min(max(pow, 128), UpperBoundMaxParallelism)
}
