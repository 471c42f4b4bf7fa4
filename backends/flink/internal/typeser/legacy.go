package typeser

import (
	"encoding/binary"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Flink 1.6 and before described a serializer by a config snapshot
// (TypeSerializerConfigSnapshot) beside the Java-serialized serializer
// itself. Flink 1.7 to 1.16 read such snapshots and write them back for
// states restored but not registered again: the snapshot class, the
// adapter version 0x7a53c4f0, the serializer (an int proxy version, an
// int length, Java serialization), then the config's own version and
// content:
//
//   - ParameterlessTypeSerializerConfig (the basic types' serializers): a
//     UTF serialization format identifier;
//   - CompositeTypeSerializerConfigSnapshot's subclasses (lists, maps,
//     timers, stream elements ...): the nested serializers and their
//     configs "with resilience" (legacySerializers);
//   - GenericTypeSerializerConfigSnapshot's (Value types, Kryo ...): the
//     UTF type class and, for KryoRegistrationSerializerConfigSnapshot's,
//     the Kryo registrations.
//
// The serializer's class names the kind of its values (SerializerClass);
// the Java object keeps what else they need (Legacy).

// legacyAdapterVersion is the snapshot version Flink 1.7+ writes for legacy
// TypeSerializerConfigSnapshots.
const legacyAdapterVersion = 0x7a53c4f0

// legacyAdapter reads a legacy config snapshot's body after its adapter
// version, and reports whether it found where it ends (cont holding).
func (sr *SnapReader) legacyAdapter(s *SerializerSnapshot, cont ContFunc, depth int) bool {
	r := sr.R
	r.I32("legacy serializer proxy version")
	at := r.Pos() + 4
	if js := r.Bytes32("legacy serializer"); r.Err == nil {
		if obj, _, classes, _, err := javaser.Parse(js, r.File, at); err == nil && len(classes) > 0 {
			s.SerializerClass = classes[0]
			s.Legacy, _ = obj.(*javaser.Object)
			if len(s.Nested) == 0 {
				s.Nested = sr.legacyTupleFields(obj)
			}
		}
	}
	r.I32("legacy config snapshot version")
	if strings.HasSuffix(s.Class, ".ParameterlessTypeSerializerConfig") && plausibleClassUTF(r.Buf, r.Off) {
		r.UTF("serialization format identifier")
	}
	return r.Err != nil || cont(r.Off) || sr.legacyNested(s, cont, depth) || sr.legacyGeneric(s, cont)
}

// legacyTupleFields finds the field serializers a Java-serialized
// TupleSerializer holds (Flink 1.3-1.7 savepoints carry no other snapshot
// of them), so that its values can be walked: nil unless every field's
// serializer is a plain object whose class names it.
func (sr *SnapReader) legacyTupleFields(obj any) []*SerializerSnapshot {
	o, ok := obj.(*javaser.Object)
	if !ok || !strings.HasSuffix(o.Class, ".TupleSerializer") {
		return nil
	}
	arr, ok := o.Field("fieldSerializers").(*javaser.Array)
	if !ok || len(arr.Elements) == 0 {
		return nil
	}
	var out []*SerializerSnapshot
	for _, e := range arr.Elements {
		f, ok := e.(*javaser.Object)
		if !ok || f.Class == "" {
			return nil
		}
		out = append(out, &SerializerSnapshot{SerializerClass: f.Class, table: sr.Table})
	}
	return out
}

// LegacySerializers reads TypeSerializerSerializationUtil's "with
// resilience" block (Flink 1.3 to 1.6): int n, n pairs of offsets, int
// length, then the Java-serialized serializers and their config snapshots.
// The block is skipped by its length.
func (sr *SnapReader) LegacySerializers(what string) []*SerializerSnapshot {
	return sr.legacySerializers(what, 0)
}

// legacySerializers reads a "with resilience" block. Each config snapshot
// that Flink 1.7+ wrote (a proxy version, then a snapshot) is parsed
// whole; of an older one, only its class and version are recovered. The
// Java-serialized serializer names the serializer's class.
func (sr *SnapReader) legacySerializers(what string, depth int) []*SerializerSnapshot {
	r := sr.R
	if depth > 32 {
		r.Fail("serializer snapshots nested deeper than 32")
		return nil
	}
	n := r.Count32(8, what+" count")
	offs := make([][2]int32, n)
	for i := range offs {
		offs[i][0] = r.I32(what + " serializer offset")
		offs[i][1] = r.I32(what + " config offset")
	}
	base := r.Pos() + 4
	blk := r.Bytes32(what + " block")
	if r.Err != nil {
		return nil
	}
	out := make([]*SerializerSnapshot, n)
	for i, o := range offs {
		so, co := int(o[0]), int(o[1])
		end := len(blk)
		if i+1 < n {
			end = int(offs[i+1][0])
		}
		if so < 0 || co < so || end < co || end > len(blk) {
			r.FailAt(base, "%s: serializer offsets %d/%d outside the %d-byte block", what, so, co, len(blk))
			return nil
		}
		s := sr.legacyConfig(blk[co:end], base+int64(co), depth)
		out[i] = s
		// serializer: int proxy version, int length, Java serialization.
		if co-so >= 8 {
			obj, _, classes, _, err := javaser.Parse(blk[so+8:co], r.File, base+int64(so)+8)
			if err == nil && len(classes) > 0 {
				s.SerializerClass = classes[0]
				s.Legacy, _ = obj.(*javaser.Object)
				if len(s.Nested) == 0 {
					s.Nested = sr.legacyTupleFields(obj)
				}
			} else if i := strings.Index(string(blk[so:co]), "sr\x00"); i >= 0 {
				if name, _, ok := UTFAt(blk[so:co], i+2); ok {
					s.SerializerClass = name
				}
			}
		}
	}
	return out
}

// legacyConfig reads the config snapshot of a "with resilience" block, at
// file offset base: whole where Flink 1.7+ wrote it (a proxy version, then
// a snapshot); else as Flink 1.6 and before wrote it (an optional int
// proxy version, the UTF class, the int version, then the content, of
// which a composite's nested serializers are read).
func (sr *SnapReader) legacyConfig(b []byte, base int64, depth int) *SerializerSnapshot {
	r := wire.NewReader(b, sr.R.File, base)
	s := (&SnapReader{R: r, Table: sr.Table}).proxied(func(q int) bool { return q == len(b) }, depth+1)
	whole := s != nil && r.Err == nil && r.Remaining() == 0
	if whole && !s.Opaque {
		return s
	}
	old := &SerializerSnapshot{table: sr.Table}
	q := 0
	if q+6 <= len(b) && binary.BigEndian.Uint16(b[q:]) == 0 && plausibleClassUTF(b, q+4) {
		q += 4
	}
	if name, e, ok := UTFAt(b, q); ok && plausibleClassUTF(b, q) && e+4 <= len(b) {
		old.Class = name
		old.Version = int32(binary.BigEndian.Uint32(b[e:]))
		cr := wire.NewReader(b, sr.R.File, base)
		cr.Off = e + 4
		(&SnapReader{R: cr, Table: sr.Table}).legacyNested(old, func(q int) bool { return q == len(b) }, depth+1)
	}
	if whole && len(old.Nested) == 0 {
		return s
	}
	return old
}

// legacyNested reads, where a legacy composite config snapshot's content
// starts, the "with resilience" block of its nested serializers and their
// configs into s.Nested, and reports whether it did (with cont holding
// where it ends). On failure nothing is consumed.
func (sr *SnapReader) legacyNested(s *SerializerSnapshot, cont ContFunc, depth int) bool {
	if len(s.Nested) > 0 || sr.R.Err != nil {
		return false
	}
	try := *sr.R
	nested := (&SnapReader{R: &try, Table: sr.Table}).legacySerializers("nested serializers", depth)
	if try.Err != nil || len(nested) == 0 || !cont(try.Off) {
		return false
	}
	*sr.R = try
	s.Nested = nested
	return true
}

// legacyGeneric reads, where a legacy GenericTypeSerializerConfigSnapshot's
// content starts, its type class and, where they follow, the Kryo
// registrations of a KryoRegistrationSerializerConfigSnapshot (per
// registration its key, its class, its serializer definition: 0 none, 1 a
// serializer class, 2 a Java-serialized serializer), and reports whether
// it ended where cont holds. The type class is the values' class for the
// Value serializers. On failure nothing is consumed.
func (sr *SnapReader) legacyGeneric(s *SerializerSnapshot, cont ContFunc) bool {
	if sr.R.Err != nil || !plausibleClassUTF(sr.R.Buf, sr.R.Off) {
		return false
	}
	try := *sr.R
	tr := &SnapReader{R: &try, Table: sr.Table}
	typeClass := try.UTF("legacy type class")
	if !cont(try.Off) {
		n := try.Count32(2+2+4, "legacy Kryo registration count")
		for i := 0; i < n && try.Err == nil; i++ {
			try.UTF("legacy Kryo registration key")
			try.UTF("legacy Kryo registration class")
			switch kind := try.I32("legacy Kryo registration kind"); kind {
			case 0:
			case 1:
				try.UTF("legacy Kryo registration serializer class")
			case 2:
				tr.JavaObject("legacy Kryo registration serializer")
			default:
				try.Fail("legacy Kryo registration kind %d", kind)
			}
		}
	}
	if try.Err != nil || !cont(try.Off) {
		return false
	}
	*sr.R = try
	if k := valueKind(s.SerializerClass); (k == kindValue || k == kindCopyableValue) && s.TypeClass == "" {
		s.TypeClass = typeClass
	}
	return true
}
