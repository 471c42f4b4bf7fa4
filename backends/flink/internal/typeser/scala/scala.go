package scala

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
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
//   - NothingSerializer (Scala's Nothing): no value, for Nothing has none;
//     Flink's throws on every one. A collection or an Option of Nothing
//     is empty, and decodes; a value of Nothing is damage.

// kindNothing is Scala's Nothing.
const kindNothing = "Nothing"

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
	case strings.Contains(n, "NothingSerializer"):
		return kindNothing
	}
	return ""
}

// Family is Flink 1.x's Scala API (flink-scala).
var Family = &typeser.Family{
	Name: "scala",
	Kind: scalaKind,
	Snapshots: map[string]typeser.SnapshotParser{
		"TraversableSerializerSnapshot": parseTraversableSnapshot,
		"ScalaEnumSerializerSnapshot":   parseScalaEnumSnapshot,
	},
	Exprs: map[string]typeser.ExprLeaf{
		"traversable": {Class: "org.apache.flink.api.scala.typeutils.TraversableSerializerSnapshot"},
		"try":         {Class: "org.apache.flink.api.scala.typeutils.ScalaTrySerializerSnapshot"},
		"unit":        {Class: "org.apache.flink.api.scala.typeutils.UnitSerializer$UnitSerializerSnapshot"},
		"scalaenum":   {Class: "org.apache.flink.api.scala.typeutils.ScalaEnumSerializerSnapshot"},
	},
	Expr:   scalaTypeExpr,
	Walk:   walkScala,
	Sized:  scalaSized,
	Widths: map[string]int{"Unit": 1, "ScalaEnum": 4},
	Encode: encodeScala,
	Schema: scalaSchema,
	Notes: map[string]string{
		kindNothing: "Scala's Nothing has no values (Flink's NothingSerializer throws on every one): one is damage; a collection or an Option of Nothing is empty and decodes",
	},
}

// scalaTypeExpr is the type expression of the serializers of this file.
func scalaTypeExpr(s *typeser.SerializerSnapshot, kind string, nested func() string) (string, bool) {
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
func parseTraversableSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	r := sr.R
	at := r.Pos()
	if m := r.I32("composite magic"); r.Err == nil && m != typeser.CompositeMagic {
		r.FailAt(at, "composite magic %d, want %d", m, typeser.CompositeMagic)
		return
	}
	s.OuterVersion = r.I32("composite outer version")
	outer := r.Off
	r.UTF("collection builder (CanBuildFrom) source")
	if r.Err != nil {
		return
	}
	s.Outer = r.Buf[outer:r.Off:r.Off]
	if sr.NestedSnapshots(s, cont, depth) != 1 && r.Err == nil {
		r.Fail("a Scala collection serializer snapshot with %d element serializers", len(s.Nested))
	}
}

// parseScalaEnumSnapshot reads a ScalaEnumSerializerSnapshot: the
// Enumeration's class, then each value's name and id.
func parseScalaEnumSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	r := sr.R
	s.TypeClass = r.UTF("enumeration class")
	n := r.Count32(6, "enumeration value count")
	for i := 0; i < n && r.Err == nil; i++ {
		s.Constants = append(s.Constants, r.UTF("enumeration value name"))
		s.ConstantIDs = append(s.ConstantIDs, r.I32("enumeration value id"))
	}
}

// walkScala decodes (or, decode false, skips) one value of a serializer
// of this file; ok is false when s is none of them or lacks what its
// values need.
func walkScala(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (v any, ok bool) {
	switch typeser.KindOf(s) {
	case "Traversable":
		if len(s.Nested) != 1 {
			return nil, false
		}
		n := r.Count32(1, "collection size")
		var out []any
		if decode {
			out = make([]any, 0, n)
		}
		for i := 0; i < n && r.Err == nil; i++ {
			if !r.Bool("collection element flag") {
				out = append(out, nil)
				continue
			}
			if !decode {
				if !typeser.SkipValue(r, s.Nested[0], depth+1) {
					return nil, false
				}
				continue
			}
			e := typeser.DecodeAny(r, s.Nested[0], depth+1)
			if e == nil && r.Err == nil {
				// A present element that shows as null (None, a null
				// string) would be written back as a missing one.
				typeser.NotDecoded(r, s)
			}
			out = append(out, e)
		}
		return out, true
	case "Try":
		if len(s.Nested) != 2 {
			return nil, false
		}
		side, name := 1, "failure"
		if r.Bool("Try flag") {
			side, name = 0, "success"
		}
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[side], depth+1)
		}
		return map[string]any{name: typeser.DecodeAny(r, s.Nested[side], depth+1)}, true
	case kindNothing:
		r.Fail("a value of Scala's Nothing, which has none")
		return nil, true
	case "Unit":
		at := r.Pos()
		if b := r.U8("Unit"); r.Err == nil && b != 0 {
			r.FailAt(at, "Unit byte %d, Flink writes 0", b)
		}
		return unitText, true
	case "ScalaEnum":
		at := r.Pos()
		id := r.I32("enumeration value id")
		if len(s.ConstantIDs) == 0 || r.Err != nil || !decode {
			return id, true
		}
		for i, c := range s.ConstantIDs {
			if c == id {
				return s.Constants[i], true
			}
		}
		r.FailAt(at, "enumeration value id %d: %s has none", id, s.TypeClass)
		return nil, true
	}
	return nil, false
}

// scalaSized reports whether walkScala can skip values of s.
func scalaSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch typeser.KindOf(s) {
	case "Traversable":
		return len(s.Nested) == 1 && typeser.SizedDepth(s.Nested[0], depth+1)
	case "Try":
		return len(s.Nested) == 2 && typeser.SizedDepth(s.Nested[0], depth+1) && typeser.SizedDepth(s.Nested[1], depth+1)
	case "Unit", "ScalaEnum", kindNothing:
		return true
	}
	return false
}

// encodeScala writes a value of a serializer of this file; ok is false
// when s is none of them.
func encodeScala(b []byte, s *typeser.SerializerSnapshot, v any, depth int) (out []byte, ok bool, err error) {
	switch typeser.KindOf(s) {
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
			if b, err = typeser.EncodeAny(append(b, 1), s.Nested[0], e, depth+1); err != nil {
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
			b, err = typeser.EncodeAny(append(b, 1), s.Nested[0], x, depth+1)
			return b, true, err
		}
		if x, found := m["failure"]; isMap && found && len(m) == 1 {
			b, err = typeser.EncodeAny(append(b, 0), s.Nested[1], x, depth+1)
			return b, true, err
		}
		return nil, true, fmt.Errorf(`want {"success": ..} or {"failure": ..}, not %v`, v)
	case kindNothing:
		return nil, true, fmt.Errorf("no value of Scala's Nothing, which has none, so not %v", v)
	case "Unit":
		if v != unitText {
			return nil, true, fmt.Errorf("want %q, not %v", unitText, v)
		}
		return append(b, 0), true, nil
	case "ScalaEnum":
		if len(s.ConstantIDs) == 0 {
			n, err := typeser.Integer(v, 32)
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

// scalaSchema is the SQL type of the values walkScala decodes.
func scalaSchema(s *typeser.SerializerSnapshot, depth int) (snapshot.Schema, bool) {
	switch typeser.KindOf(s) {
	case "Traversable":
		if len(s.Nested) == 1 {
			elem := typeser.SchemaOf(s.Nested[0], depth+1)
			return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem, Partial: elem.Partial}, true
		}
	case "Try":
		if len(s.Nested) == 2 {
			return typeser.Struct([]string{"success", "failure"},
				[]snapshot.Schema{typeser.SchemaOf(s.Nested[0], depth+1), typeser.SchemaOf(s.Nested[1], depth+1)}), true
		}
	case "Unit":
		return snapshot.Schema{Kind: snapshot.SchemaString}, true
	case "ScalaEnum":
		if len(s.ConstantIDs) == 0 {
			return snapshot.Schema{Kind: snapshot.SchemaInt32}, true
		}
		return snapshot.Schema{Kind: snapshot.SchemaString}, true
	}
	return snapshot.Schema{}, false
}
