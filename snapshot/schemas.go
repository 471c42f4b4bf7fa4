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
type Schemas struct {
	// Classes are Java classes' fields and enums' constants.
	Classes *classlayout.Set
	// Protos are Protobuf messages, by their Java class.
	Protos *protovalue.Set
}

// Empty reports whether s holds no schema.
func (s *Schemas) Empty() bool {
	return s == nil || s.Classes.Len() == 0 && s.Protos.Len() == 0
}

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
