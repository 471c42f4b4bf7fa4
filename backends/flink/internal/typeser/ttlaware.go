package typeser

import "strings"

// Flink 2.x's TtlAwareSerializer (flink-runtime) wraps a state's
// serializer to check whether TTL was switched on or off between a
// snapshot and its restore; it writes each value as the serializer it
// wraps does. Its snapshot is a boolean (whether the wrapped serializer
// is a TTL one) and the wrapped serializer's snapshot, versioned: a list
// or map state's snapshot holds one around its element's or its value's
// serializer. Its values are walked, encoded, sized and hashed as the
// wrapped serializer's, like SingleThreadAccessCheckingTypeSerializer's.

// ttlAwarePrefix starts the names of TtlAwareSerializer, its list and
// map subclasses, and its snapshot.
const ttlAwarePrefix = "org.apache.flink.runtime.state.ttl.TtlAware"

// isTtlAware reports whether the class n is one of TtlAwareSerializer's.
func isTtlAware(n string) bool { return strings.HasPrefix(n, ttlAwarePrefix) }

// parseTtlAwareSnapshot reads a TtlAwareSerializerSnapshot: the TTL
// flag (kept as the outer part), then the wrapped serializer's
// snapshot.
func parseTtlAwareSnapshot(sr *SnapReader, s *SerializerSnapshot, cont ContFunc, depth int) {
	r := sr.R
	start := r.Off
	r.Bool("TTL-aware serializer snapshot flag")
	if r.Err != nil {
		return
	}
	s.Outer = r.Buf[start:r.Off:r.Off]
	if n := sr.versioned(cont, depth+1); n != nil {
		s.Nested = []*SerializerSnapshot{n}
	}
}
