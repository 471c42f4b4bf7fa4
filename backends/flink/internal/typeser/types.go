package typeser

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
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
var coreParsers = map[string]SnapshotParser{
	"PojoSerializerSnapshot": func(sr *SnapReader, s *SerializerSnapshot, cont ContFunc, depth int) {
		s.TypeClass = sr.R.UTF("POJO class")
		s.Fields, s.Nested = sr.OptionalMap("POJO fields", depth, true)
		sr.OptionalMap("POJO registered subclasses", depth, false)
		sr.OptionalMap("POJO subclasses", depth, false)
	},
	"TtlAwareSerializerSnapshot": parseTtlAwareSnapshot,
	"EnumSerializer$EnumSerializerSnapshot": func(sr *SnapReader, s *SerializerSnapshot, cont ContFunc, depth int) {
		r := sr.R
		s.TypeClass = r.UTF("enum class")
		n := r.Count32(2, "enum constant count")
		s.Constants = make([]string, 0, n)
		for i := 0; i < n && r.Err == nil; i++ {
			s.Constants = append(s.Constants, r.UTF("enum constant"))
		}
	},
}

// parser is the parser of snapshots of class, if the table has one.
func (sr *SnapReader) parser(class string) SnapshotParser {
	if sr.Table == nil {
		return nil
	}
	return sr.Table.parsers[class[strings.LastIndex(class, ".")+1:]]
}

// exact parses the body of s by its class's layout, and reports whether
// it did (with cont holding where it ended). On failure nothing is
// consumed.
func (sr *SnapReader) exact(s *SerializerSnapshot, cont ContFunc, depth int) bool {
	parse := sr.parser(s.Class)
	if parse == nil {
		return false
	}
	saved := *sr.R
	try := *sr.R
	parse(&SnapReader{R: &try, Table: sr.Table}, s, cont, depth)
	if try.Err != nil || !cont(try.Off) {
		*sr.R = saved
		s.TypeClass, s.Fields, s.Nested, s.Constants, s.Schema, s.LogicalTypes, s.KryoRegistrations = "", nil, nil, nil, "", nil, nil
		s.ConstantIDs, s.Outer, s.OuterVersion = nil, nil, 0
		return false
	}
	*sr.R = try
	return true
}

// OptionalMap reads a LinkedOptionalMap: a header, a count, then per
// entry a name, an optional framed key and an optional framed value; with
// snapshots set the values are versioned serializer snapshots.
func (sr *SnapReader) OptionalMap(what string, depth int, snapshots bool) ([]string, []*SerializerSnapshot) {
	r := sr.R
	var names []string
	var snaps []*SerializerSnapshot
	sr.OptionalMapEach(what, func(name string, frame []byte, base int64) {
		names = append(names, name)
		var snap *SerializerSnapshot
		if snapshots && frame != nil {
			fr := &SnapReader{R: wire.NewReader(frame, r.File, base), Table: sr.Table}
			snap = fr.versioned(func(q int) bool { return q == len(frame) }, depth+1)
			if fr.R.Err == nil && fr.R.Remaining() > 0 {
				fr.R.Fail("%d bytes after the serializer snapshot", fr.R.Remaining())
			}
			if fr.R.Err != nil {
				r.Err = fr.R.Err
			}
		}
		snaps = append(snaps, snap)
	})
	return names, snaps
}

// OptionalMapEach reads a LinkedOptionalMap, calling each with every
// entry's name and value frame (nil when absent) at file offset base.
func (sr *SnapReader) OptionalMapEach(what string, each func(name string, frame []byte, base int64)) {
	r := sr.R
	at := r.Pos()
	if h := r.I64(what + " header"); r.Err == nil && h != optionalMapHeader {
		r.FailAt(at, "%s: header 0x%x, want 0x%x", what, h, optionalMapHeader)
	}
	n := r.Count32(4, what+" size")
	for i := 0; i < n && r.Err == nil; i++ {
		name := r.UTF(what + " name")
		if r.Bool(what + " key flag") {
			r.Bytes32(what + " key")
		}
		var frame []byte
		base := r.Pos() + 4
		if r.Bool(what + " value flag") {
			base = r.Pos() + 4
			frame = r.Bytes32(what + " value")
		}
		if r.Err == nil {
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

// elementSnapshot is a snapshot of the element kind k, for walking arrays:
// one per kind, shared, so that its kind is worked out once, not once per
// array read.
func elementSnapshot(k string) *SerializerSnapshot {
	if s := elementSnapshots[k]; s != nil {
		return s
	}
	return newElementSnapshot(k)
}

// elementSnapshots are the element kinds' snapshots: those of the
// primitive and String arrays, and Byte (ByteValue's).
var elementSnapshots = func() map[string]*SerializerSnapshot {
	out := map[string]*SerializerSnapshot{"Byte": newElementSnapshot("Byte")}
	for _, k := range primitiveArrays {
		out[k] = newElementSnapshot(k)
	}
	return out
}()

func newElementSnapshot(k string) *SerializerSnapshot {
	if k == "Char" {
		k = "Character"
	}
	return &SerializerSnapshot{Class: CoreExprs["java.lang."+k]}
}

// walkArray reads an array of primitives or strings: an int length, then
// the elements (a String array's elements are StringValues, null as 0).
func walkArray(r *wire.Reader, elem string, decode bool) []any {
	n := r.Count32(0, "array length")
	if r.Err != nil {
		return nil
	}
	s := elementSnapshot(elem)
	w := FixedLength(s)
	if w > 0 && n > r.Remaining()/w {
		r.Fail("array of %d elements of %d bytes, %d left", n, w, r.Remaining())
		return nil
	}
	var out []any
	if decode {
		out = make([]any, 0, min(n, r.Remaining()+1))
	}
	for i := 0; i < n && r.Err == nil; i++ {
		if !decode {
			SkipValue(r, s, 1)
			continue
		}
		out = append(out, DecodeAny(r, s, 1))
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
func walkRow(r *wire.Reader, s *SerializerSnapshot, depth int, decode bool) any {
	kind := rowKindBits(s)
	bitsN := kind + len(s.Nested)
	at := r.Pos()
	mask := r.Take((bitsN+7)/8, "row null mask")
	if r.Err != nil {
		return nil
	}
	var rowKind byte
	if kind == 2 { // RowKind.toByteValue(): its bit 0 first, then bit 1
		rowKind = mask[0]>>7 | mask[0]>>5&2
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
			if !SkipValue(r, f, depth+1) {
				NotDecoded(r, f)
			}
			continue
		}
		out = append(out, DecodeAny(r, f, depth+1))
	}
	if !decode || r.Err != nil {
		return nil
	}
	v, err := WithRowKind(rowKind, out)
	if err != nil {
		r.FailAt(at, "%v", err)
	}
	return v
}

// rowSnapshotClass is flink-core's RowSerializer's snapshot.
const rowSnapshotClass = "org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot"

// RowKinds are Flink's RowKind values by their byte value.
var RowKinds = []string{"INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"}

// WithRowKind keeps a row's kind where it is not INSERT (a deduplication
// keeps the last row as an update): {"@rowkind": KIND, "@row": row}.
func WithRowKind(kind byte, row any) (any, error) {
	switch {
	case kind == 0:
		return row, nil
	case int(kind) < len(RowKinds):
		return map[string]any{"@rowkind": RowKinds[kind], "@row": row}, nil
	}
	return nil, fmt.Errorf("row kind %d is none of Flink's", kind)
}

// RowKindOf takes a row given as WithRowKind shows it apart: its kind and
// the row.
func RowKindOf(v any) (byte, any, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 || m["@row"] == nil {
		return 0, v, nil
	}
	name, _ := m["@rowkind"].(string)
	if i := slices.Index(RowKinds, name); i >= 0 {
		return byte(i), m["@row"], nil
	}
	return 0, nil, fmt.Errorf("@rowkind %v is none of %s", m["@rowkind"], strings.Join(RowKinds, ", "))
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
func walkPojo(r *wire.Reader, s *SerializerSnapshot, depth int, decode bool) (any, bool) {
	at := r.Pos()
	flags := r.U8("POJO flags")
	switch {
	case r.Err != nil:
		return nil, true
	case flags == pojoNull:
		return nil, true
	case flags == pojoSubclass && plausibleClassUTF(r.Buf, r.Off), flags == pojoTaggedClass:
		// A subclass's fields are written by a serializer of its own,
		// which stateutil does not walk.
		NotDecoded(r, s)
		return nil, false
	case flags != pojoNoSubclass:
		r.FailAt(at, "POJO flags 0x%02x", flags)
		return nil, true
	}
	var out map[string]any
	if decode {
		out = make(map[string]any, len(s.Nested))
	}
	for i, f := range s.Nested {
		null := r.Bool("POJO field null flag")
		var v any
		if !null && r.Err == nil {
			if f == nil {
				// Flink keeps a field it no longer has in the snapshot, without its serializer.
				NotDecoded(r, s)
				return nil, false
			}
			if decode {
				v = DecodeAny(r, f, depth+1)
			} else if !SkipValue(r, f, depth+1) {
				return nil, false
			}
		}
		if decode {
			out[s.Fields[i]] = v
		}
	}
	return out, true
}

// JavaObject skips one Java-serialization stream.
func (sr *SnapReader) JavaObject(what string) {
	r := sr.R
	if r.Err != nil {
		return
	}
	_, used, _, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
	if err != nil {
		r.Err = fmt.Errorf("%s: %w", what, err)
		return
	}
	r.Off += used
}
