package tableruntime

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// The Table planner's serializers that its operators' state holds besides
// RowData (rowdata.go):
//   - ExternalSerializer: a DataView's keys and values (a DISTINCT
//     aggregate's MapView), written by its nested serializer of the
//     internal representation; its outer snapshot is the Java-serialized
//     DataType and a flag.
//   - StringDataSerializer: an int byte length, then UTF-8.
//   - SortedMapSerializer: Top-N's sort keys to counts, written as a
//     MapSerializer writes (an int size, then per entry the key, a null
//     flag and the value) in the comparator's order; its snapshot is the
//     Java-serialized comparator and the nested snapshots. Its values are
//     [key, value] pairs in that order, since a JSON object keeps none.

// plannerKind classifies the serializers of this file.
func plannerKind(n string) string {
	switch {
	case strings.Contains(n, "table.runtime.typeutils.ExternalSerializer"):
		return "External"
	case strings.Contains(n, "table.runtime.typeutils.StringDataSerializer"):
		return "StringData"
	case strings.Contains(n, "table.runtime.typeutils.SortedMapSerializer"):
		return "SortedMap"
	}
	return ""
}

// parseExternalSnapshot reads an ExternalSerializerSnapshot: the composite
// framing, an outer snapshot of a Java-serialized DataType and a boolean,
// then the internal serializer's snapshot.
func parseExternalSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	sr.CompositeOuter(s, cont, depth, 1, "external", func() {
		sr.JavaObject("external data type")
		sr.R.Bool("internal input flag")
	})
}

// parseSortedMapSnapshot reads a SortedMapSerializerSnapshot: the
// Java-serialized comparator, then the key and value snapshots.
func parseSortedMapSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	sr.JavaObject("sorted map comparator")
	if n := sr.NestedSnapshots(s, cont, depth); sr.R.Err == nil && n != 2 {
		sr.R.Fail("sorted map serializer snapshot with %d nested snapshots, want 2", n)
	}
}

// walkPlanner reads one value of a serializer of this file, decoding it
// when decode is set. It reports false where its snapshot lacks what the
// walk needs.
func walkPlanner(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	switch typeser.KindOf(s) {
	case "External":
		if len(s.Nested) != 1 {
			return nil, false
		}
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[0], depth+1)
		}
		return typeser.DecodeAny(r, s.Nested[0], depth+1), true
	case "StringData":
		at := r.Pos()
		b := r.Bytes32("string data")
		if r.Err == nil && !utf8.Valid(b) {
			r.FailAt(at, "string data of %d bytes is not UTF-8", len(b))
		}
		return string(b), true
	case "SortedMap":
		return walkPairs(r, s, depth, decode, false)
	}
	return nil, false
}

// plannerSized reports whether walkPlanner can walk values of s.
func plannerSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch typeser.KindOf(s) {
	case "External":
		return len(s.Nested) == 1 && typeser.SizedDepth(s.Nested[0], depth+1)
	case "StringData":
		return true
	case "SortedMap":
		return len(s.Nested) == 2 && typeser.SizedDepth(s.Nested[0], depth+1) && typeser.SizedDepth(s.Nested[1], depth+1)
	}
	return false
}

// encodePlanner writes a value of a serializer of this file from the JSON
// walkPlanner makes; it reports false for other serializers.
func encodePlanner(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	switch typeser.KindOf(s) {
	case "External":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		b, err := typeser.EncodeAny(b, s.Nested[0], v, depth+1)
		return b, true, err
	case "StringData":
		text, ok := v.(string)
		if !ok {
			return nil, true, fmt.Errorf("want a string, not %v", v)
		}
		return typeser.AppendBytes32(b, []byte(text)), true, nil
	case "SortedMap":
		return encodePairs(b, s, v, depth, false)
	}
	return nil, false, nil
}

// walkPairs reads a map as the planner's SortedMapSerializer and the
// DataViews' NullAwareMapSerializer write it: an int size, then per entry
// the key (after a null flag where keys may be null), a null flag and the
// value; decoded as [key, value] pairs in their order.
func walkPairs(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode, nullKeys bool) (any, bool) {
	if len(s.Nested) != 2 {
		return nil, false
	}
	n := r.Count32(2, "map size")
	out := []any{}
	for i := 0; i < n && r.Err == nil; i++ {
		var kv [2]any
		for j, what := range []string{"map key null flag", "map value null flag"} {
			if (j == 1 || nullKeys) && r.Bool(what) {
				continue
			}
			if !decode {
				if !typeser.SkipValue(r, s.Nested[j], depth+1) {
					return nil, false
				}
				continue
			}
			kv[j] = typeser.DecodeAny(r, s.Nested[j], depth+1)
		}
		if decode {
			out = append(out, []any{kv[0], kv[1]})
		}
	}
	return out, true
}

// encodePairs writes the [key, value] pairs walkPairs makes.
func encodePairs(b []byte, s *typeser.SerializerSnapshot, v any, depth int, nullKeys bool) ([]byte, bool, error) {
	if len(s.Nested) != 2 {
		return nil, false, nil
	}
	pairs, ok := v.([]any)
	if !ok {
		return nil, true, fmt.Errorf("want a JSON array of [key, value] pairs, not %v", v)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(pairs)))
	for i, p := range pairs {
		kv, ok := p.([]any)
		if !ok || len(kv) != 2 {
			return nil, true, fmt.Errorf("entry %d: want [key, value], not %v", i, p)
		}
		var err error
		for j, part := range []string{"key", "value"} {
			if j == 0 && !nullKeys {
				b, err = typeser.EncodeAny(b, s.Nested[0], kv[0], depth+1)
			} else {
				b, err = typeser.EncodeNullFlagged(b, s.Nested[j], kv[j], depth)
			}
			if err != nil {
				return nil, true, fmt.Errorf("entry %d %s: %w", i, part, err)
			}
		}
	}
	return b, true, nil
}
