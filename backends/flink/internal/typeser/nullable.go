package typeser

import (
	"encoding/binary"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Flink 2.x serializes a POJO field declared List<T>, Set<T> or Map<K,V>
// with NullableSerializer around ListSerializer, SetSerializer or
// MapSerializer (FLINK-FORMATS.md §9), and NullableSerializer also wraps
// nullable fields and values elsewhere.

// nullPadding is the number of zero bytes a NullableSerializer writes
// after the flag of a null value (its outer snapshot's int: the wrapped
// serializer's fixed length where Flink pads nulls, else 0), and whether
// the snapshot records one.
func nullPadding(s *SerializerSnapshot) (int, bool) {
	if len(s.Outer) == 0 && s.OuterVersion == 0 {
		return 0, true // built from a type expression: no padding
	}
	if len(s.Outer) != 4 {
		return 0, false
	}
	n := int32(binary.BigEndian.Uint32(s.Outer))
	return int(n), n >= 0 && n <= 1<<16
}

// nullableLength is NullableSerializer.getLength(): fixed where nulls are
// padded to the wrapped serializer's width.
func nullableLength(s *SerializerSnapshot) int {
	if p, ok := nullPadding(s); ok && p > 0 && len(s.Nested) == 1 && FixedLength(s.Nested[0]) == p {
		return p + 1
	}
	return -1
}

// walkNullable reads a NullableSerializer value: a boolean null flag,
// then the padding of a null or the wrapped serializer's value. It
// reports false where the wrapped value cannot be walked.
func walkNullable(r *wire.Reader, s *SerializerSnapshot, depth int, decode bool) (any, bool) {
	pad, ok := nullPadding(s)
	if !ok || len(s.Nested) != 1 {
		return nil, false
	}
	if r.Bool("null flag") {
		at := r.Pos()
		for _, c := range r.Take(pad, "null padding") {
			if c != 0 {
				r.FailAt(at, "null padding holds %d, Flink writes zeros", c)
				break
			}
		}
		return nil, true
	}
	if !decode {
		return nil, SkipValue(r, s.Nested[0], depth+1)
	}
	return DecodeAny(r, s.Nested[0], depth+1), true
}

// walkSet reads a SetSerializer value: an int size, then per element a
// null flag and the element. Elements are kept in the order written.
func walkSet(r *wire.Reader, s *SerializerSnapshot, depth int, decode bool) ([]any, bool) {
	if len(s.Nested) != 1 {
		return nil, false
	}
	n := r.Count32(1, "set size")
	return WalkElements(r, s.Nested[0], n, depth, decode, func(int) bool { return r.Bool("set element null flag") })
}

// WalkElements reads n elements of elem one after another, decoding them
// when decode is set, but for those absent(i) says were not written (a
// null flag or mask read for element i). It reports false where elem
// cannot be walked.
func WalkElements(r *wire.Reader, elem *SerializerSnapshot, n, depth int, decode bool, absent func(i int) bool) ([]any, bool) {
	var out []any
	if decode {
		out = make([]any, 0, n)
	}
	for i := 0; i < n && r.Err == nil; i++ {
		if absent(i) {
			out = append(out, nil)
			continue
		}
		if !decode {
			if !SkipValue(r, elem, depth+1) {
				return nil, false
			}
			continue
		}
		out = append(out, DecodeAny(r, elem, depth+1))
	}
	return out, true
}

// builtinKind classifies the serializers of this file.
func builtinKind(n string) string {
	switch {
	case strings.Contains(n, "runtime.NullableSerializer"):
		return "Nullable"
	case strings.Contains(n, "typeutils.base.SetSerializer"):
		return "Set"
	}
	return ""
}
