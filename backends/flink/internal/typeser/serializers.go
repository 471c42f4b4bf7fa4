package typeser

import (
	"encoding/binary"
	"strings"
	"sync/atomic"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// KryoRegistration is one class the KryoSerializerSnapshot registers, in
// order: Kryo id 85 is the first. Kind is Flink's serializer definition
// type: 0 Kryo's default serializer, 1 a serializer class, 2 an instance.
type KryoRegistration struct {
	Class string `json:"class"`
	Kind  int32  `json:"kind"`
	// Serializer is the serializer's class, where Kind is 1 (a class).
	Serializer string `json:"serializer,omitempty"`
}

// SerializerSnapshot describes a serializer as a state file's header records
// it: the snapshot (or legacy config snapshot) class, the serializer class
// when known, and nested serializer snapshots of composite types.
type SerializerSnapshot struct {
	// Class is the TypeSerializerSnapshot class (Flink 1.7+), or the legacy
	// TypeSerializerConfigSnapshot class.
	Class string `json:"class"`
	// SerializerClass is the serializer class when the bytes name it (legacy
	// Java-serialized serializers, simple snapshots of version <= 2).
	SerializerClass string `json:"serializerClass,omitempty"`
	Version         int32  `json:"version"`
	// OuterClass is the class a composite snapshot names in its outer
	// snapshot (tuple class, case class, array component class...).
	OuterClass string                `json:"outerClass,omitempty"`
	Nested     []*SerializerSnapshot `json:"nested,omitempty"`
	// OuterVersion and Outer are a composite snapshot's outer version and
	// outer snapshot bytes (RowSerializer's says whether rows carry a kind).
	OuterVersion int32  `json:"outerVersion,omitempty"`
	Outer        []byte `json:"-"`
	// TypeClass is the class of the values (POJO, enum, Kryo, Avro).
	TypeClass string `json:"typeClass,omitempty"`
	// Fields names the POJO field of each nested snapshot (nil: missing).
	Fields []string `json:"fields,omitempty"`
	// Constants are an enum's constants by ordinal.
	Constants []string `json:"constants,omitempty"`
	// ConstantIDs are a Scala Enumeration's ids, one per name in Constants.
	ConstantIDs []int32 `json:"constantIds,omitempty"`
	// LogicalTypes are a RowData's field types.
	LogicalTypes []LogicalType `json:"logicalTypes,omitempty"`
	// Schema is an Avro schema (JSON).
	Schema string `json:"schema,omitempty"`
	// KryoRegistrations are a KryoSerializerSnapshot's registrations, in
	// order; Kryo5 says its values are Kryo 5's (Flink 2), not Kryo 2's.
	KryoRegistrations []KryoRegistration `json:"kryoRegistrations,omitempty"`
	Kryo5             bool               `json:"kryo5,omitempty"`
	// Legacy is the Java-serialized serializer a legacy config snapshot
	// (Flink 1.6 and before) stands beside (legacy.go).
	Legacy *javaser.Object `json:"-"`
	// Opaque is set when the snapshot body was not understood and was skipped
	// by finding where the next structure starts.
	Opaque bool `json:"opaque,omitempty"`
	// Raw is the stored snapshot, proxy version included (Flink 1.7+
	// headers; nil for the legacy layouts). A view into the header bytes.
	Raw []byte `json:"-"`
	// Versioned is the stored class name, version and body: how a nested
	// snapshot is written. A view into the stored bytes.
	Versioned []byte `json:"-"`
	// memo is safe to fill from the goroutines reading subtasks at once.
	memo atomic.Pointer[kindMemo]
	// familyMemo is FamilyMemo's, as safe.
	familyMemo atomic.Pointer[any]
	// table holds the families the snapshot was read with (nil: flink-core's
	// serializers only).
	table *Table
}

// Name returns the most specific class name known: the serializer class, else
// the snapshot class.
func (s *SerializerSnapshot) Name() string {
	if s == nil {
		return ""
	}
	if s.SerializerClass != "" {
		return s.SerializerClass
	}
	return s.Class
}

// TypeKey maps a snapshot to a short type name: "Long", "Integer", "String",
// "Boolean", "Double", "Float", "Short", "Byte", "Char", "byte[]", "Void",
// "VoidNamespace", "Tuple", "List", "Map", "TTL", "Timer", or "" when unknown.
func (s *SerializerSnapshot) TypeKey() string { return s.kinds().typeKey }

// FamilyMemo is what the snapshot's family keeps of it to read value
// after value: made by make once, or again where valid says what is
// kept no longer fits the snapshot (whose fields the header's parse
// fills in).
func (s *SerializerSnapshot) FamilyMemo(valid func(any) bool, make func() any) any {
	if p := s.familyMemo.Load(); p != nil && valid(*p) {
		return *p
	}
	v := make()
	s.familyMemo.Store(&v)
	return v
}

// kindMemo holds serKind and typeKey for the class names they were worked
// out from: values are decoded by them entry by entry, and matching class
// names each time cost most of a read.
type kindMemo struct {
	class, serializerClass, kind, typeKey string
	family                                *Family
	// width is fixedWidth(kind), which walking a value asks first.
	width int
	// sized is Sized's answer once asked: 1 yes, 2 no.
	sized atomic.Uint32
}

// kinds returns the memo, working it out again when the names changed
// (they are filled in while the header is parsed).
func (s *SerializerSnapshot) kinds() *kindMemo {
	if m := s.memo.Load(); m != nil && m.class == s.Class && m.serializerClass == s.SerializerClass {
		return m
	}
	m := &kindMemo{class: s.Class, serializerClass: s.SerializerClass, typeKey: s.shortType()}
	m.kind, m.family = classKind(s)
	m.width = fixedWidth(m.kind)
	s.memo.Store(m)
	return m
}

func (s *SerializerSnapshot) shortType() string {
	n := s.Name()
	if s.Class != "" && s.SerializerClass == "" {
		n = s.Class
	}
	short := n[strings.LastIndexAny(n, ".$")+1:]
	short = strings.TrimSuffix(strings.TrimSuffix(short, "Snapshot"), "ConfigSnapshot")
	short = strings.TrimSuffix(short, "Config")
	switch short {
	case "LongSerializer":
		return "Long"
	case "IntSerializer":
		return "Integer"
	case "StringSerializer":
		return "String"
	case "BooleanSerializer":
		return "Boolean"
	case "DoubleSerializer":
		return "Double"
	case "FloatSerializer":
		return "Float"
	case "ShortSerializer":
		return "Short"
	case "ByteSerializer":
		return "Byte"
	case "CharSerializer":
		return "Char"
	case "BytePrimitiveArraySerializer":
		return "byte[]"
	case "VoidSerializer":
		return "Void"
	case "VoidNamespaceSerializer":
		return "VoidNamespace"
	case "TupleSerializer":
		return "Tuple"
	case "ListSerializer":
		return "List"
	case "MapSerializer":
		return "Map"
	case "TtlSerializer":
		return "TTL"
	case "TimerSerializer":
		return "Timer"
	}
	return ""
}

const (
	CompositeMagic = 911108  // starts the outer part of a composite snapshot
	nestedMagic    = 1333245 // starts the nested snapshots of a composite snapshot
	// compositeVersion is the version every CompositeTypeSerializerSnapshot
	// is written with; lower ones are legacy layouts without the magic.
	compositeVersion = 3
)

// compositeClasses are Flink's CompositeTypeSerializerSnapshot subclasses
// (by simple name), whose snapshots of compositeVersion start with
// compositeMagic.
var compositeClasses = map[string]bool{
	"ListSerializerSnapshot": true, "MapSerializerSnapshot": true, "TimerSerializerSnapshot": true,
	"TtlStateFactory$TtlSerializerSnapshot": true, "GenericArraySerializerSnapshot": true,
	"TupleSerializerSnapshot": true, "JavaEitherSerializerSnapshot": true, "NullableSerializer$NullableSerializerSnapshot": true,
	"RowSerializer$RowSerializerSnapshot": true, "ArrayListSerializerSnapshot": true, "ScalaCaseClassSerializerSnapshot": true,
	"Tuple2CaseClassSerializerSnapshot": true, "ScalaOptionSerializerSnapshot": true,
	"StreamElementSerializer$StreamElementSerializerSnapshot": true, "CoGroupedStreams$UnionSerializerSnapshot": true,
}

// ContFunc reports whether the structure that follows a serializer snapshot
// plausibly starts at buffer index q. It lets the decoder skip snapshot bodies
// it does not understand by finding where the next structure begins.
type ContFunc func(q int) bool

// SnapshotProxy reads TypeSerializerSnapshotSerializationUtil's framing: an
// int proxy version (1 or 2), then a versioned snapshot.
func (sr *SnapReader) SnapshotProxy(cont ContFunc) *SerializerSnapshot {
	r := sr.R
	at := r.Pos()
	start := r.Off
	pv := r.I32("serializer snapshot proxy version")
	if r.Err == nil && pv != 1 && pv != 2 {
		r.FailAt(at, "serializer snapshot proxy version %d, want 1 or 2", pv)
	}
	s := sr.versioned(cont, 0)
	if s != nil && r.Err == nil {
		s.Raw = r.Buf[start:r.Off:r.Off]
	}
	return s
}

// proxied reads a snapshot in SnapshotProxy's framing nested depth deep.
func (sr *SnapReader) proxied(cont ContFunc, depth int) *SerializerSnapshot {
	r := sr.R
	if pv := r.I32("serializer snapshot proxy version"); r.Err != nil || pv != 1 && pv != 2 {
		return nil
	}
	return sr.versioned(cont, depth)
}

type SnapReader struct {
	R     *wire.Reader
	Table *Table
}

// Versioned reads a snapshot as TypeSerializerSnapshot's
// writeVersionedSnapshot frames it inside another: its class name, its
// version, then its body.
func (sr *SnapReader) Versioned(cont ContFunc, depth int) *SerializerSnapshot {
	return sr.versioned(cont, depth)
}

// versioned reads UTF class name, int version, then the snapshot body.
func (sr *SnapReader) versioned(cont ContFunc, depth int) *SerializerSnapshot {
	r := sr.R
	if depth > 32 {
		r.Fail("serializer snapshots nested deeper than 32")
		return nil
	}
	start := r.Off
	s := &SerializerSnapshot{Class: r.UTF("serializer snapshot class"), table: sr.Table}
	s.Version = r.I32("serializer snapshot version")
	if r.Err != nil {
		return nil
	}
	sr.body(s, cont, depth)
	if r.Err == nil {
		s.Versioned = r.Buf[start:r.Off:r.Off]
	}
	return s
}

func (sr *SnapReader) body(s *SerializerSnapshot, cont ContFunc, depth int) {
	r := sr.R
	if sr.exact(s, cont, depth) {
		return
	}
	if r.Remaining() >= 4 && int32(binary.BigEndian.Uint32(r.Buf[r.Off:])) == CompositeMagic {
		sr.composite(s, cont, depth)
		return
	}
	if s.Version < compositeVersion && sr.nestedOnly(s, cont, depth) {
		return
	}
	if s.Version == compositeVersion && compositeClasses[s.Class[strings.LastIndex(s.Class, ".")+1:]] {
		// Flink writes the magic for every composite snapshot of this version.
		r.Fail("%s: composite serializer snapshot without its magic number %d", s.Class, CompositeMagic)
		return
	}
	if s.Version == legacyAdapterVersion && sr.legacyAdapter(s, cont, depth) {
		return
	}
	if isSimpleSnapshot(s.Class) {
		if s.Version <= 2 && r.Remaining() >= 2 && plausibleClassUTF(r.Buf, r.Off) {
			s.SerializerClass = r.UTF("serializer class")
		}
		if cont(r.Off) {
			return
		}
	}
	// Legacy config snapshots and unknown snapshots: find the next structure.
	if cont(r.Off) {
		return
	}
	s.Opaque = true
	sr.skipTo(cont, "serializer snapshot "+s.Class)
}

// nestedOnly reads the body of a snapshot that Flink 1.7 wrote before
// CompositeTypeSerializerSnapshot's framing (ListSerializerSnapshot and
// MapSerializerSnapshot of version 1): the nested snapshots alone, and
// reports whether it did (cont holding where they end). On failure
// nothing is consumed.
func (sr *SnapReader) nestedOnly(s *SerializerSnapshot, cont ContFunc, depth int) bool {
	r := sr.R
	if r.Remaining() < 4 || int32(binary.BigEndian.Uint32(r.Buf[r.Off:])) != nestedMagic {
		return false
	}
	try := *r
	(&SnapReader{R: &try, Table: sr.Table}).NestedSnapshots(s, cont, depth)
	if try.Err != nil || !cont(try.Off) {
		s.Nested = nil
		return false
	}
	*r = try
	return true
}

// composite reads a CompositeTypeSerializerSnapshot: magic, outer version,
// outer snapshot, then nested snapshots.
func (sr *SnapReader) composite(s *SerializerSnapshot, cont ContFunc, depth int) {
	r := sr.R
	r.I32("composite magic")
	s.OuterVersion = r.I32("composite outer version")
	outer := r.Off
	// The outer snapshot is class specific: a class name for tuples, case
	// classes and arrays, nothing for lists, maps and TTL.
	if r.Remaining() >= 4 && int32(binary.BigEndian.Uint32(r.Buf[r.Off:])) != nestedMagic {
		if plausibleClassUTF(r.Buf, r.Off) {
			s.OuterClass = r.UTF("composite outer class")
		}
		if r.Remaining() >= 4 && int32(binary.BigEndian.Uint32(r.Buf[r.Off:])) != nestedMagic {
			s.Opaque = true
			sr.skipTo(func(q int) bool {
				return q+4 <= len(r.Buf) && int32(binary.BigEndian.Uint32(r.Buf[q:])) == nestedMagic
			}, "composite outer snapshot "+s.Class)
		}
	}
	if r.Err == nil {
		s.Outer = r.Buf[outer:r.Off:r.Off]
	}
	sr.NestedSnapshots(s, cont, depth)
}

// CompositeOuter reads a CompositeTypeSerializerSnapshot whose outer
// snapshot is class specific: the magic, the outer version, the outer
// snapshot (outer reads it, knowing s.OuterVersion), then the nested
// snapshots, of which there must be want.
func (sr *SnapReader) CompositeOuter(s *SerializerSnapshot, cont ContFunc, depth, want int, what string, outer func()) {
	r := sr.R
	at := r.Pos()
	if m := r.I32("composite magic"); r.Err == nil && m != CompositeMagic {
		r.FailAt(at, "composite serializer snapshot magic %d, want %d", m, CompositeMagic)
		return
	}
	s.OuterVersion = r.I32("composite outer version")
	start := r.Off
	outer()
	if r.Err != nil {
		return
	}
	s.Outer = r.Buf[start:r.Off:r.Off]
	if n := sr.NestedSnapshots(s, cont, depth); r.Err == nil && n != want {
		r.Fail("%s serializer snapshot with %d nested snapshots, want %d", what, n, want)
	}
}

// NestedSnapshots reads NestedSerializersSnapshotDelegate's block: magic,
// version, count, then the versioned snapshots, appended to s.Nested.
func (sr *SnapReader) NestedSnapshots(s *SerializerSnapshot, cont ContFunc, depth int) int {
	r := sr.R
	at := r.Pos()
	if m := r.I32("nested snapshots magic"); r.Err == nil && m != nestedMagic {
		r.FailAt(at, "nested serializer snapshots magic %d, want %d", m, nestedMagic)
	}
	r.I32("nested snapshots version")
	n := r.Count32(6, "nested snapshot count")
	for i := 0; i < n && r.Err == nil; i++ {
		next := cont
		if i < n-1 {
			next = func(q int) bool { return plausibleVersionedAt(r.Buf, q) }
		}
		s.Nested = append(s.Nested, sr.versioned(next, depth+1))
	}
	return n
}

// skipTo advances to the first index where cont holds.
func (sr *SnapReader) skipTo(cont ContFunc, what string) {
	r := sr.R
	if r.Err != nil {
		return
	}
	for q := r.Off; q <= len(r.Buf); q++ {
		if cont(q) {
			r.Off = q
			return
		}
	}
	r.Fail("cannot find the end of %s", what)
}

// isSimpleSnapshot reports snapshots that hold no configuration (Flink's
// simple serializer snapshots of basic types, namespaces and windows).
func isSimpleSnapshot(class string) bool {
	for _, s := range []string{
		"org.apache.flink.api.common.typeutils.base.",
		"org.apache.flink.runtime.state.VoidNamespaceSerializer$",
		"org.apache.flink.streaming.api.windowing.windows.",
	} {
		if strings.HasPrefix(class, s) && strings.HasSuffix(class, "SerializerSnapshot") &&
			!strings.Contains(class, "ListSerializer") && !strings.Contains(class, "MapSerializer") &&
			!strings.Contains(class, "EnumSerializer") && !strings.Contains(class, "GenericArray") {
			return true
		}
	}
	return false
}

// plausibleClassUTF reports whether a Java class name written with writeUTF
// starts at buf[q].
func plausibleClassUTF(buf []byte, q int) bool {
	if q+2 > len(buf) {
		return false
	}
	n := int(binary.BigEndian.Uint16(buf[q:]))
	if n < 3 || n > 1024 || q+2+n > len(buf) {
		return false
	}
	name := buf[q+2 : q+2+n]
	dot := false
	for i, c := range name {
		switch {
		case c == '.':
			if i == 0 || name[i-1] == '.' {
				return false
			}
			dot = true
		case c == '$' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		default:
			return false
		}
	}
	return dot
}

// plausibleVersionedAt reports whether a versioned snapshot (class name, then
// a small positive version) starts at buf[q].
func plausibleVersionedAt(buf []byte, q int) bool {
	if !plausibleClassUTF(buf, q) {
		return false
	}
	e := q + 2 + int(binary.BigEndian.Uint16(buf[q:]))
	if e+4 > len(buf) {
		return false
	}
	v := int32(binary.BigEndian.Uint32(buf[e:]))
	return v >= 0 && v < 1000
}

// UTFAt returns the writeUTF string at buf[q], if one fits.
func UTFAt(buf []byte, q int) (string, int, bool) {
	if q+2 > len(buf) {
		return "", 0, false
	}
	n := int(binary.BigEndian.Uint16(buf[q:]))
	if q+2+n > len(buf) {
		return "", 0, false
	}
	s, ok := wire.DecodeModifiedUTF8(buf[q+2 : q+2+n])
	return s, q + 2 + n, ok
}
