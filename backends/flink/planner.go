package flink

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
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
func parseExternalSnapshot(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
	r := sr.r
	at := r.pos()
	if m := r.i32("composite magic"); r.err == nil && m != compositeMagic {
		r.failAt(at, "composite serializer snapshot magic %d, want %d", m, compositeMagic)
	}
	s.OuterVersion = r.i32("composite outer version")
	outer := r.off
	sr.javaObject("external data type")
	r.bool("internal input flag")
	if r.err == nil {
		s.Outer = r.buf[outer:r.off:r.off]
	}
	if n := sr.nestedSnapshots(s, cont, depth); r.err == nil && n != 1 {
		r.fail("external serializer snapshot with %d nested snapshots, want 1", n)
	}
}

// parseSortedMapSnapshot reads a SortedMapSerializerSnapshot: the
// Java-serialized comparator, then the key and value snapshots.
func parseSortedMapSnapshot(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
	sr.javaObject("sorted map comparator")
	if n := sr.nestedSnapshots(s, cont, depth); sr.r.err == nil && n != 2 {
		sr.r.fail("sorted map serializer snapshot with %d nested snapshots, want 2", n)
	}
}

// javaObject skips one Java-serialization stream.
func (sr *snapReader) javaObject(what string) {
	r := sr.r
	if r.err != nil {
		return
	}
	_, used, _, _, err := ParseJavaObject(r.buf[r.off:], r.file, r.pos())
	if err != nil {
		r.err = fmt.Errorf("%s: %w", what, err)
		return
	}
	r.off += used
}

// walkPlanner reads one value of a serializer of this file, decoding it
// when decode is set. It reports false where its snapshot lacks what the
// walk needs.
func walkPlanner(r *reader, s *SerializerSnapshot, depth int, decode bool) (any, bool) {
	switch serKind(s) {
	case "External":
		if len(s.Nested) != 1 {
			return nil, false
		}
		if !decode {
			return nil, skipValue(r, s.Nested[0], depth+1)
		}
		return decodeAny(r, s.Nested[0], depth+1), true
	case "StringData":
		at := r.pos()
		b := r.bytes32("string data")
		if r.err == nil && !utf8.Valid(b) {
			r.failAt(at, "string data of %d bytes is not UTF-8", len(b))
		}
		return string(b), true
	case "SortedMap":
		if len(s.Nested) != 2 {
			return nil, false
		}
		n := r.count32(2, "sorted map size")
		var out []any
		for i := 0; i < n && r.err == nil; i++ {
			if !decode {
				if !skipValue(r, s.Nested[0], depth+1) || !r.bool("sorted map value null flag") && !skipValue(r, s.Nested[1], depth+1) {
					return nil, false
				}
				continue
			}
			k := decodeAny(r, s.Nested[0], depth+1)
			var v any
			if !r.bool("sorted map value null flag") {
				v = decodeAny(r, s.Nested[1], depth+1)
			}
			out = append(out, []any{k, v})
		}
		if decode && out == nil {
			out = []any{}
		}
		return out, true
	}
	return nil, false
}

// plannerSized reports whether walkPlanner can walk values of s.
func plannerSized(s *SerializerSnapshot, depth int) bool {
	switch serKind(s) {
	case "External":
		return len(s.Nested) == 1 && sizedDepth(s.Nested[0], depth+1)
	case "StringData":
		return true
	case "SortedMap":
		return len(s.Nested) == 2 && sizedDepth(s.Nested[0], depth+1) && sizedDepth(s.Nested[1], depth+1)
	}
	return false
}

// encodePlanner writes a value of a serializer of this file from the JSON
// walkPlanner makes; it reports false for other serializers.
func encodePlanner(b []byte, s *SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	switch serKind(s) {
	case "External":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		b, err := encodeAny(b, s.Nested[0], v, depth+1)
		return b, true, err
	case "StringData":
		text, ok := v.(string)
		if !ok {
			return nil, true, fmt.Errorf("want a string, not %v", v)
		}
		return appendBytes32(b, []byte(text)), true, nil
	case "SortedMap":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		pairs, ok := v.([]any)
		if !ok {
			return nil, true, fmt.Errorf("want a JSON array of [key, value] pairs, not %v", v)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(pairs)))
		var err error
		for i, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return nil, true, fmt.Errorf("entry %d: want [key, value], not %v", i, p)
			}
			if b, err = encodeAny(b, s.Nested[0], kv[0], depth+1); err != nil {
				return nil, true, fmt.Errorf("entry %d key: %w", i, err)
			}
			if b, err = encodeNullFlagged(b, s.Nested[1], kv[1], depth); err != nil {
				return nil, true, fmt.Errorf("entry %d value: %w", i, err)
			}
		}
		return b, true, nil
	}
	return nil, false, nil
}
