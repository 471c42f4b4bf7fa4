package typeser

import "github.com/stateutil/stateutil/snapshot"

// WithSchemas is t reading values by the user's schemas s: the same
// families, the same snapshot parsers.
func (t *Table) WithSchemas(s *snapshot.Schemas) *Table {
	if s.Empty() {
		return t
	}
	out := *t
	out.schemas = s
	return &out
}

// Schemas are the user's schemas the values of s are read by (nil: none).
func (s *SerializerSnapshot) Schemas() *snapshot.Schemas {
	if s == nil || s.table == nil {
		return nil
	}
	return s.table.schemas
}

// CodecFactoryWith is CodecFactory for codecs that read by schemas s.
func (t *Table) CodecFactoryWith(typ snapshot.Type, s *snapshot.Schemas) (snapshot.Codec, error) {
	return t.WithSchemas(s).CodecFactory(typ)
}
