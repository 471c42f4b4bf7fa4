package snapshot

import (
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/protovalue"
)

// Schemas are what a user says about the classes of values that a snapshot
// names but does not describe, for the codecs to decode them by: the
// fields of classes a serializer writes field by field without naming them
// (Kryo's FieldSerializer) and Protobuf messages. A value that needs a
// schema nobody gave stays not decoded; one that does not decode with the
// schema given is not decoded either, never damage: the schema is the
// user's word, not the snapshot's.
//
// KeySerializersFrom is the other thing a user can say: where a snapshot
// does not record how its keys are written, another snapshot of the same
// job that does, for the formats to read the keys by.
type Schemas struct {
	// Classes are Java classes' fields and enums' constants.
	Classes *classlayout.Set
	// Protos are Protobuf messages, by their Java class.
	Protos *protovalue.Set
	// KeySerializersFrom is the location of a snapshot of the same job
	// whose recorded key serializers stand in, operator by operator (by
	// ID), for those a snapshot read does not record: a Flink changelog
	// checkpoint that has not materialized records none. A format takes
	// such a key serializer only where none is recorded, and only if
	// every key fits it; where the snapshot lacks the operator, records
	// none for it, or its serializer does not fit the keys, the open fails
	// with a *KeySerializersError. "" for none.
	KeySerializersFrom string
}

// Empty reports whether s holds no schema.
func (s *Schemas) Empty() bool {
	return s == nil || s.Classes.Len() == 0 && s.Protos.Len() == 0 && s.KeySerializersFrom == ""
}

// KeySerializersError is a snapshot named for the key serializers another
// does not record (Schemas.KeySerializersFrom) that cannot give them: it
// is not a snapshot the format reads, it has no operator of that ID, it
// records no key serializer for it, or the one it records does not fit
// the keys. The user's word was wrong, the snapshots are not damaged.
type KeySerializersError struct{ Message string }

func (e *KeySerializersError) Error() string { return e.Message }

// WithSchemas is c with s: the same factories, given s when they build a
// codec, and codecs of its own. Codecs built for c are not shared.
func (c *Codecs) WithSchemas(s *Schemas) *Codecs {
	if s.Empty() {
		return c
	}
	return &Codecs{exact: c.exact, prefixes: c.prefixes, schemas: s}
}

// Schemas are the schemas the codecs decode by (nil: none).
func (c *Codecs) Schemas() *Schemas {
	if c == nil {
		return nil
	}
	return c.schemas
}

// WithSchemas is r with codecs that decode by s and, when no OpenOptions
// say otherwise, formats that read by s.
func (r *Registry) WithSchemas(s *Schemas) *Registry {
	if s.Empty() {
		return r
	}
	out := *r
	out.Codecs = r.Codecs.WithSchemas(s)
	return &out
}
