package typeser

import (
	"errors"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// Support is what stateutil does with the values of one serializer
// snapshot class: whether it decodes them and writes them back, worked
// out by asking the decoder and the encoder themselves (Table.Support).
type Support struct {
	// Kind is the kind the class is (KindOf), "" when no decoder knows it.
	Kind string `json:"kind,omitempty"`
	// Family is the family that knows it, "" for flink-core's own.
	Family  string `json:"family,omitempty"`
	Decoded bool   `json:"decoded"`
	Encoded bool   `json:"encoded"`
	// Note says what decoding needs, or why values are not decoded.
	Note string `json:"note,omitempty"`
}

// probeSnapshots are what a snapshot of a class may hold besides its
// class, for the probes: none to six nested Long serializers (a
// composite's fields), and what the kinds that need more record (a
// POJO's field names, an Avro schema, as many BIGINT logical types: a
// RowData's fields, an ArrayData's element, a MapData's key and value;
// the class of a Value serializer's values).
func probeSnapshots(t *Table, class string) []*SerializerSnapshot {
	long := func() *SerializerSnapshot { return &SerializerSnapshot{Class: CoreExprs["java.lang.Long"]} }
	var out []*SerializerSnapshot
	for n := 0; n <= 6; n++ {
		s := &SerializerSnapshot{Class: class, SerializerClass: legacyConfigs[class].probe, Schema: `"long"`, LogicalTypes: []LogicalType{}, TypeClass: typesPackage + "LongValue"}
		for i := 0; i < n; i++ {
			s.Nested = append(s.Nested, long())
			s.Fields = append(s.Fields, string(rune('a'+i)))
			s.LogicalTypes = append(s.LogicalTypes, LogicalType{Root: "BIGINT"})
		}
		out = append(out, t.Bind(s))
	}
	return out
}

// probeValue is a value no encoder takes, so that an encoder that exists
// refuses it for its shape, not for want of an encoder.
type probeValue struct{}

// Support probes the decoder and the encoder of class: a class is decoded
// when decoding a value of it reads bytes (an empty value is then
// truncated, damage) rather than stopping as not decoded, and encoded when
// encoding refuses a value for its shape rather than for want of an
// encoder.
func (t *Table) Support(class string) Support {
	probes := probeSnapshots(t, class)
	sup := Support{Kind: KindOf(probes[0])}
	switch f := familyOf(probes[0]); {
	case legacyConfigs[class].note != "":
		sup.Note = legacyConfigs[class].note
	case f != nil:
		sup.Family = f.Name
		sup.Note = f.Notes[sup.Kind]
	default:
		sup.Note = coreNotes[sup.Kind]
	}
	for _, s := range probes {
		r := wire.NewReader(nil, "probe", 0)
		DecodeAny(r, s, 0)
		if !errors.Is(r.Err, snapshot.ErrNotDecoded) {
			sup.Decoded = true
		}
		if _, err := EncodeAny(nil, s, probeValue{}, 0); !errors.Is(err, ErrNoEncoder) {
			sup.Encoded = true
		}
	}
	if !sup.Decoded && sup.Note == "" {
		sup.Note = "no decoder of this serializer's values"
	}
	return sup
}

// coreNotes say what flink-core's decoders need beyond the bytes.
var coreNotes = map[string]string{
	"Pojo":            "a subclass's value, written by a serializer of its own, is not decoded",
	kindCopyableValue: "Flink's own Value classes decode; a class of the user's writes itself and is not decoded",
	kindValue:         "Flink's own Value classes decode; a class of the user's writes itself and is not decoded",
}

// legacyConfigs are the config snapshots of Flink 1.6 and before whose
// class does not name the serializer of the values: the serializer a
// snapshot stands beside (Java-serialized) does (legacy.go). Those that
// real Flink's bytes witness (testdata/flink-serializer-vectors) are
// probed with the serializer Flink wrote them for.
var legacyConfigs = map[string]struct{ probe, note string }{
	"org.apache.flink.api.common.typeutils.ParameterlessTypeSerializerConfig": {basePackage + "LongSerializer",
		"Flink 1.6's config of the basic types' serializers: values decode as the serializer it stands beside writes them"},
	"org.apache.flink.api.common.typeutils.base.CollectionSerializerConfigSnapshot": {basePackage + "ListSerializer",
		"Flink 1.6's config of ListSerializer and ArrayListSerializer: values decode as the serializer it stands beside writes them"},
	"org.apache.flink.api.common.typeutils.CompositeSerializer$ConfigSnapshot": {"",
		"Flink 1.6's config of TtlSerializer, CompositeSerializer's one subclass: its class does not say the values' layout; " +
			"read beside a TtlSerializer they are TTL values, user value first, which no Flink 1.6 state here witnesses"},
	"org.apache.flink.api.common.typeutils.BackwardsCompatibleSerializerSnapshot": {"",
		"never in a snapshot: Flink cannot write or read it (both throw); it stands in memory for a Flink 1.6 serializer restored without its config"},
}
