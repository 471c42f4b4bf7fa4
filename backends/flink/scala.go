package flink

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The serializers of Flink 1.x's Scala API (flink-scala) that write values
// of their own layout; case classes and Scala tuples (ScalaCaseClassSerializer,
// Tuple2CaseClassSerializer) are walked as tuples, Option and Either by the
// builtin walkers (Scala's Either writes true for Left, as Java's does).
//
//   - TraversableSerializer (any Scala collection): an int size, then per
//     element a null flag (true: present) and the element. Its snapshot's
//     outer part is the source of the CanBuildFrom Flink compiles to build
//     the collection on restore (kept, not needed here).
//   - TrySerializer: a flag (true: Success), then the value, or the
//     Throwable through Kryo.
//   - UnitSerializer: one byte, 0.
//   - EnumValueSerializer (an Enumeration): the value's id as an int; ids
//     are not ordinals, the snapshot lists each name with its id.

// unitText is how a Unit value shows.
const unitText = "()"

// scalaKind classifies the serializers of this file.
func scalaKind(n string) string {
	if !strings.Contains(n, "api.scala.typeutils.") {
		return ""
	}
	switch {
	case strings.Contains(n, "TraversableSerializer"):
		return "Traversable"
	case strings.Contains(n, "TrySerializer"):
		return "Try"
	case strings.Contains(n, "UnitSerializer"):
		return "Unit"
	case strings.Contains(n, "ScalaEnumSerializer") || strings.Contains(n, "EnumValueSerializer"):
		return "ScalaEnum"
	}
	return ""
}

// scalaFamily is Flink 1.x's Scala API (flink-scala).
var scalaFamily = &family{
	name: "scala",
	kind: scalaKind,
	snapshots: map[string]snapshotParser{
		"TraversableSerializerSnapshot": parseTraversableSnapshot,
		"ScalaEnumSerializerSnapshot":   parseScalaEnumSnapshot,
	},
	exprs: map[string]exprLeaf{
		"traversable": {class: "org.apache.flink.api.scala.typeutils.TraversableSerializerSnapshot"},
		"try":         {class: "org.apache.flink.api.scala.typeutils.ScalaTrySerializerSnapshot"},
		"unit":        {class: "org.apache.flink.api.scala.typeutils.UnitSerializer$UnitSerializerSnapshot"},
		"scalaenum":   {class: "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot"},
	},
	expr:   scalaTypeExpr,
	walk:   walkScala,
	sized:  scalaSized,
	widths: map[string]int{"Unit": 1, "ScalaEnum": 4},
	encode: encodeScala,
}

// scalaTypeExpr is the type expression of the serializers of this file.
func scalaTypeExpr(s *SerializerSnapshot, kind string, nested func() string) (string, bool) {
	switch kind {
	case "Traversable":
		if len(s.Nested) == 1 {
			return "traversable(" + nested() + ")", true
		}
	case "Try":
		if len(s.Nested) == 2 {
			return "try(" + nested() + ")", true
		}
	case "Unit":
		return "unit", true
	case "ScalaEnum":
		return "scalaenum", true
	}
	return "", false
}

// parseTraversableSnapshot reads a TraversableSerializerSnapshot: the
// composite framing with the CanBuildFrom source as its outer snapshot.
func parseTraversableSnapshot(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
	r := sr.r
	at := r.pos()
	if m := r.i32("composite magic"); r.err == nil && m != compositeMagic {
		r.failAt(at, "composite magic %d, want %d", m, compositeMagic)
		return
	}
	s.OuterVersion = r.i32("composite outer version")
	outer := r.off
	r.utf("collection builder (CanBuildFrom) source")
	if r.err != nil {
		return
	}
	s.Outer = r.buf[outer:r.off:r.off]
	if sr.nestedSnapshots(s, cont, depth) != 1 && r.err == nil {
		r.fail("a Scala collection serializer snapshot with %d element serializers", len(s.Nested))
	}
}

// parseScalaEnumSnapshot reads a ScalaEnumSerializerSnapshot: the
// Enumeration's class, then each value's name and id.
func parseScalaEnumSnapshot(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
	r := sr.r
	s.TypeClass = r.utf("enumeration class")
	n := r.count32(6, "enumeration value count")
	for i := 0; i < n && r.err == nil; i++ {
		s.Constants = append(s.Constants, r.utf("enumeration value name"))
		s.ConstantIDs = append(s.ConstantIDs, r.i32("enumeration value id"))
	}
}

// walkScala decodes (or, decode false, skips) one value of a serializer
// of this file; ok is false when s is none of them or lacks what its
// values need.
func walkScala(r *reader, s *SerializerSnapshot, depth int, decode bool) (v any, ok bool) {
	switch serKind(s) {
	case "Traversable":
		if len(s.Nested) != 1 {
			return nil, false
		}
		n := r.count32(1, "collection size")
		var out []any
		if decode {
			out = make([]any, 0, n)
		}
		for i := 0; i < n && r.err == nil; i++ {
			if !r.bool("collection element flag") {
				out = append(out, nil)
				continue
			}
			if !decode {
				if !skipValue(r, s.Nested[0], depth+1) {
					return nil, false
				}
				continue
			}
			e := decodeAny(r, s.Nested[0], depth+1)
			if e == nil && r.err == nil {
				// A present element that shows as null (None, a null
				// string) would be written back as a missing one.
				notDecoded(r, s)
			}
			out = append(out, e)
		}
		return out, true
	case "Try":
		if len(s.Nested) != 2 {
			return nil, false
		}
		side, name := 1, "failure"
		if r.bool("Try flag") {
			side, name = 0, "success"
		}
		if !decode {
			return nil, skipValue(r, s.Nested[side], depth+1)
		}
		return map[string]any{name: decodeAny(r, s.Nested[side], depth+1)}, true
	case "Unit":
		at := r.pos()
		if b := r.u8("Unit"); r.err == nil && b != 0 {
			r.failAt(at, "Unit byte %d, Flink writes 0", b)
		}
		return unitText, true
	case "ScalaEnum":
		at := r.pos()
		id := r.i32("enumeration value id")
		if len(s.ConstantIDs) == 0 || r.err != nil || !decode {
			return id, true
		}
		for i, c := range s.ConstantIDs {
			if c == id {
				return s.Constants[i], true
			}
		}
		r.failAt(at, "enumeration value id %d: %s has none", id, s.TypeClass)
		return nil, true
	}
	return nil, false
}

// scalaSized reports whether walkScala can skip values of s.
func scalaSized(s *SerializerSnapshot, depth int) bool {
	switch serKind(s) {
	case "Traversable":
		return len(s.Nested) == 1 && sizedDepth(s.Nested[0], depth+1)
	case "Try":
		return len(s.Nested) == 2 && sizedDepth(s.Nested[0], depth+1) && sizedDepth(s.Nested[1], depth+1)
	case "Unit", "ScalaEnum":
		return true
	}
	return false
}

// encodeScala writes a value of a serializer of this file; ok is false
// when s is none of them.
func encodeScala(b []byte, s *SerializerSnapshot, v any, depth int) (out []byte, ok bool, err error) {
	switch serKind(s) {
	case "Traversable":
		elems, isArray := v.([]any)
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		if !isArray {
			return nil, true, fmt.Errorf("want a JSON array, not %v", v)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
		for i, e := range elems {
			if e == nil {
				b = append(b, 0)
				continue
			}
			if b, err = encodeAny(append(b, 1), s.Nested[0], e, depth+1); err != nil {
				return nil, true, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, true, nil
	case "Try":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		m, isMap := v.(map[string]any)
		if x, found := m["success"]; isMap && found && len(m) == 1 {
			b, err = encodeAny(append(b, 1), s.Nested[0], x, depth+1)
			return b, true, err
		}
		if x, found := m["failure"]; isMap && found && len(m) == 1 {
			b, err = encodeAny(append(b, 0), s.Nested[1], x, depth+1)
			return b, true, err
		}
		return nil, true, fmt.Errorf(`want {"success": ..} or {"failure": ..}, not %v`, v)
	case "Unit":
		if v != unitText {
			return nil, true, fmt.Errorf("want %q, not %v", unitText, v)
		}
		return append(b, 0), true, nil
	case "ScalaEnum":
		if len(s.ConstantIDs) == 0 {
			n, err := integer(v, 32)
			return binary.BigEndian.AppendUint32(b, uint32(n)), true, err
		}
		for i, c := range s.Constants {
			if c == v {
				return binary.BigEndian.AppendUint32(b, uint32(s.ConstantIDs[i])), true, nil
			}
		}
		return nil, true, fmt.Errorf("want one of the values %v of %s, not %v", s.Constants, s.TypeClass, v)
	}
	return nil, false, nil
}
