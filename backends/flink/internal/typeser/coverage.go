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
// class, for the probes: none, one or two nested Long serializers, and
// what the kinds that need more record (a POJO's field names, an Avro
// schema, RowData's logical types).
func probeSnapshots(t *Table, class string) []*SerializerSnapshot {
	long := func() *SerializerSnapshot { return &SerializerSnapshot{Class: CoreExprs["java.lang.Long"]} }
	var out []*SerializerSnapshot
	for n := 0; n <= 2; n++ {
		s := &SerializerSnapshot{Class: class, Schema: `"long"`, LogicalTypes: []LogicalType{}}
		for i := 0; i < n; i++ {
			s.Nested = append(s.Nested, long())
			s.Fields = append(s.Fields, string(rune('a'+i)))
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
	if f := familyOf(probes[0]); f != nil {
		sup.Family = f.Name
		sup.Note = f.Notes[sup.Kind]
	} else {
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
	"Pojo": "a subclass's value, written by a serializer of its own, is not decoded",
}
