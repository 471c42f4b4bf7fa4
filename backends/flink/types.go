package flink

import (
	"strings"
)

// Serializers whose snapshots are parsed exactly, for what their values
// need: a POJO's field names and serializers, an enum's constants, the
// class of Kryo values, an Avro schema. A snapshot that does not parse
// as its class says falls back to being skipped (its values then show as
// bytes).

// optionalMapHeader starts Flink's LinkedOptionalMap serialization.
const optionalMapHeader = 0x4f2c69a3d70

// coreParsers parse flink-core's snapshots by their short class name; the
// families add theirs (family.go).
var coreParsers = map[string]snapshotParser{
	"PojoSerializerSnapshot": func(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
		s.TypeClass = sr.r.utf("POJO class")
		s.Fields, s.Nested = sr.optionalMap("POJO fields", depth, true)
		sr.optionalMap("POJO registered subclasses", depth, false)
		sr.optionalMap("POJO subclasses", depth, false)
	},
	"EnumSerializer$EnumSerializerSnapshot": func(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
		r := sr.r
		s.TypeClass = r.utf("enum class")
		n := r.count32(2, "enum constant count")
		s.Constants = make([]string, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			s.Constants = append(s.Constants, r.utf("enum constant"))
		}
	},
}

// parser is the parser of snapshots of class, if the table has one.
func (sr *snapReader) parser(class string) snapshotParser {
	if sr.table == nil {
		return nil
	}
	return sr.table.parsers[class[strings.LastIndex(class, ".")+1:]]
}

// exact parses the body of s by its class's layout, and reports whether
// it did (with cont holding where it ended). On failure nothing is
// consumed.
func (sr *snapReader) exact(s *SerializerSnapshot, cont contFunc, depth int) bool {
	parse := sr.parser(s.Class)
	if parse == nil {
		return false
	}
	saved := *sr.r
	try := *sr.r
	parse(&snapReader{r: &try, table: sr.table}, s, cont, depth)
	if try.err != nil || !cont(try.off) {
		*sr.r = saved
		s.TypeClass, s.Fields, s.Nested, s.Constants, s.Schema, s.LogicalTypes, s.KryoRegistrations = "", nil, nil, nil, "", nil, nil
		s.ConstantIDs, s.Outer, s.OuterVersion = nil, nil, 0
		return false
	}
	*sr.r = try
	return true
}

// optionalMap reads a LinkedOptionalMap: a header, a count, then per
// entry a name, an optional framed key and an optional framed value; with
// snapshots set the values are versioned serializer snapshots.
func (sr *snapReader) optionalMap(what string, depth int, snapshots bool) ([]string, []*SerializerSnapshot) {
	r := sr.r
	var names []string
	var snaps []*SerializerSnapshot
	sr.optionalMapEach(what, func(name string, frame []byte, base int64) {
		names = append(names, name)
		var snap *SerializerSnapshot
		if snapshots && frame != nil {
			fr := &snapReader{r: newReader(frame, r.file, base), table: sr.table}
			snap = fr.versioned(func(q int) bool { return q == len(frame) }, depth+1)
			if fr.r.err == nil && fr.r.remaining() > 0 {
				fr.r.fail("%d bytes after the serializer snapshot", fr.r.remaining())
			}
			if fr.r.err != nil {
				r.err = fr.r.err
			}
		}
		snaps = append(snaps, snap)
	})
	return names, snaps
}

// optionalMapEach reads a LinkedOptionalMap, calling each with every
// entry's name and value frame (nil when absent) at file offset base.
func (sr *snapReader) optionalMapEach(what string, each func(name string, frame []byte, base int64)) {
	r := sr.r
	at := r.pos()
	if h := r.i64(what + " header"); r.err == nil && h != optionalMapHeader {
		r.failAt(at, "%s: header 0x%x, want 0x%x", what, h, optionalMapHeader)
	}
	n := r.count32(4, what+" size")
	for i := 0; i < n && r.err == nil; i++ {
		name := r.utf(what + " name")
		if r.bool(what + " key flag") {
			r.bytes32(what + " key")
		}
		var frame []byte
		base := r.pos() + 4
		if r.bool(what + " value flag") {
			base = r.pos() + 4
			frame = r.bytes32(what + " value")
		}
		if r.err == nil {
			each(name, frame, base)
		}
	}
}

// primitiveArrays maps Flink's primitive array serializers onto their
// element kinds.
var primitiveArrays = map[string]string{
	"BooleanPrimitiveArraySerializer": "Boolean", "CharPrimitiveArraySerializer": "Char",
	"DoublePrimitiveArraySerializer": "Double", "FloatPrimitiveArraySerializer": "Float",
	"IntPrimitiveArraySerializer": "Integer", "LongPrimitiveArraySerializer": "Long",
	"ShortPrimitiveArraySerializer": "Short", "StringArraySerializer": "String",
}

// arrayKind classifies the serializers of arrays: "Array:<element kind>"
// for primitive and String arrays, "GenericArray" for arrays of objects.
func arrayKind(n string) string {
	if strings.Contains(n, "GenericArraySerializer") {
		return "GenericArray"
	}
	if !strings.Contains(n, "typeutils.base.array.") {
		return ""
	}
	short := n[strings.LastIndex(n, ".")+1:]
	if i := strings.IndexByte(short, '$'); i >= 0 {
		short = short[:i]
	}
	if k, ok := primitiveArrays[short]; ok {
		return "Array:" + k
	}
	return ""
}

// elementSnapshot is a snapshot of the element kind k, for walking arrays.
func elementSnapshot(k string) *SerializerSnapshot {
	class := coreExprs["java.lang."+k]
	if k == "Char" {
		class = coreExprs["java.lang.Character"]
	}
	return &SerializerSnapshot{Class: class}
}

// walkArray reads an array of primitives or strings: an int length, then
// the elements (a String array's elements are StringValues, null as 0).
func walkArray(r *reader, elem string, decode bool) []any {
	n := r.count32(0, "array length")
	if r.err != nil {
		return nil
	}
	s := elementSnapshot(elem)
	w := fixedLength(s)
	if w > 0 && n > r.remaining()/w {
		r.fail("array of %d elements of %d bytes, %d left", n, w, r.remaining())
		return nil
	}
	var out []any
	if decode {
		out = make([]any, 0, min(n, r.remaining()+1))
	}
	for i := 0; i < n && r.err == nil; i++ {
		if !decode {
			skipValue(r, s, 1)
			continue
		}
		out = append(out, decodeAny(r, s, 1))
	}
	return out
}

// rowKindBits says whether a Row serializer snapshot writes the row kind
// (two bits) in front of the null mask: from outer version 3 on, and in
// version 4 only where its outer snapshot's boolean says so.
func rowKindBits(s *SerializerSnapshot) int {
	switch {
	case s.OuterVersion < 3:
		return 0
	case s.OuterVersion == 3:
		return 2
	case len(s.Outer) == 1 && s.Outer[0] == 0:
		return 0
	}
	return 2
}

// walkRow reads a Row: a mask of row-kind bits and one null bit per
// field (most significant bit first), then the fields that are not null.
func walkRow(r *reader, s *SerializerSnapshot, depth int, decode bool) []any {
	kind := rowKindBits(s)
	bitsN := kind + len(s.Nested)
	mask := r.take((bitsN+7)/8, "row null mask")
	if r.err != nil {
		return nil
	}
	var out []any
	if decode {
		out = make([]any, 0, len(s.Nested))
	}
	for i, f := range s.Nested {
		bit := kind + i
		if mask[bit/8]&(0x80>>(bit%8)) != 0 {
			if decode {
				out = append(out, nil)
			}
			continue
		}
		if !decode {
			if !skipValue(r, f, depth+1) {
				notDecoded(r, f)
			}
			continue
		}
		out = append(out, decodeAny(r, f, depth+1))
	}
	return out
}

// POJO flags (PojoSerializer).
const (
	pojoNull        = 1
	pojoNoSubclass  = 2
	pojoSubclass    = 4
	pojoTaggedClass = 8
)

// walkPojo reads a POJO: a flags byte, then per field a null flag and the
// field's value. Subclass values (written by serializers the snapshot
// records apart) are refused.
func walkPojo(r *reader, s *SerializerSnapshot, depth int, decode bool) (any, bool) {
	at := r.pos()
	flags := r.u8("POJO flags")
	switch {
	case r.err != nil:
		return nil, true
	case flags == pojoNull:
		return nil, true
	case flags == pojoSubclass && plausibleClassUTF(r.buf, r.off), flags == pojoTaggedClass:
		// A subclass's fields are written by a serializer of its own,
		// which stateutil does not walk.
		notDecoded(r, s)
		return nil, false
	case flags != pojoNoSubclass:
		r.failAt(at, "POJO flags 0x%02x", flags)
		return nil, true
	}
	var out map[string]any
	if decode {
		out = make(map[string]any, len(s.Nested))
	}
	for i, f := range s.Nested {
		null := r.bool("POJO field null flag")
		var v any
		if !null && r.err == nil {
			if f == nil {
				// Flink keeps a field it no longer has in the snapshot, without its serializer.
				notDecoded(r, s)
				return nil, false
			}
			if decode {
				v = decodeAny(r, f, depth+1)
			} else if !skipValue(r, f, depth+1) {
				return nil, false
			}
		}
		if decode {
			out[s.Fields[i]] = v
		}
	}
	return out, true
}
