package flink

import (
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// family is the serializers of one Flink module or API beyond flink-core's
// built-in ones (Kryo, Avro, the Table runtime's, the Scala API's, the
// connectors'): what reading their serializer snapshots and walking their
// values asks of each. Its kinds are the names serKind gives its
// serializers. Every field but name is optional.
type family struct {
	name string
	// kind classifies one class name (a serializer's or its snapshot's):
	// the family's kind of serializer, or "".
	kind func(class string) string
	// snapshots parse the bodies of the family's serializer snapshots, by
	// the snapshot class's simple name.
	snapshots map[string]snapshotParser
	// exprs are the family's words of type expressions that stand for a
	// serializer snapshot by its class alone.
	exprs map[string]exprLeaf
	// expr is the type expression of a serializer of the family's kind.
	expr func(s *SerializerSnapshot, kind string, nested func() string) (string, bool)
	// walk decodes (decode set) or skips one value of s; ok is false where
	// s lacks what its values need.
	walk func(r *reader, s *SerializerSnapshot, depth int, decode bool) (v any, ok bool)
	// sized reports whether walk can walk values of s.
	sized func(s *SerializerSnapshot, depth int) bool
	// widths are the byte width of every value of each kind whose values
	// are all alike.
	widths map[string]int
	// encode writes a value given as walk decodes it; ok is false where s
	// lacks what its values need.
	encode func(b []byte, s *SerializerSnapshot, v any, depth int) (out []byte, ok bool, err error)
	// hash is the Java hashCode of one key of s; ok is false where the
	// family does not know it.
	hash func(r *reader, s *SerializerSnapshot) (h int32, ok bool)
	// stateCodecs decode and write the byte[] elements of operator states
	// that no serializer snapshot describes, by the state's name.
	stateCodecs map[string]func() stateCodec
}

// stateCodec decodes and writes the elements of one operator state.
type stateCodec interface {
	snapshot.Codec
	snapshot.Encoder
}

// exprLeaf is the serializer snapshot a word of a type expression stands
// for.
type exprLeaf struct {
	class string
	kryo5 bool
}

// snapshotParser reads the body of a serializer snapshot of one class into
// s, with cont telling where the structure after it starts.
type snapshotParser func(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int)

// serializerTable is the families a snapshot's serializers are read with,
// beside flink-core's own. Every serializer snapshot keeps the table it
// was read with, so that its values walk by it wherever they go.
type serializerTable struct {
	families    []*family
	byKind      map[string]*family
	parsers     map[string]snapshotParser
	exprs       map[string]exprLeaf
	stateCodecs map[string]func() stateCodec
}

// newSerializerTable builds the table of families. Two families claiming
// the same snapshot class, type expression or state name are a
// programming error.
func newSerializerTable(families ...*family) *serializerTable {
	t := &serializerTable{families: families, byKind: map[string]*family{},
		parsers: map[string]snapshotParser{}, exprs: map[string]exprLeaf{},
		stateCodecs: map[string]func() stateCodec{}}
	for class, p := range coreParsers {
		t.parsers[class] = p
	}
	for word, class := range coreExprs {
		t.exprs[word] = exprLeaf{class: class}
	}
	for _, f := range families {
		for class, p := range f.snapshots {
			if _, dup := t.parsers[class]; dup {
				panic(fmt.Sprintf("serializer family %s: snapshot class %s has a parser already", f.name, class))
			}
			t.parsers[class] = p
		}
		for word, leaf := range f.exprs {
			if _, dup := t.exprs[word]; dup {
				panic(fmt.Sprintf("serializer family %s: type expression %q is taken", f.name, word))
			}
			t.exprs[word] = leaf
		}
		for state, c := range f.stateCodecs {
			if _, dup := t.stateCodecs[state]; dup {
				panic(fmt.Sprintf("serializer family %s: state %q has a codec already", f.name, state))
			}
			t.stateCodecs[state] = c
		}
	}
	return t
}

// kindOf classifies a class name by the families: their kind, or "".
func (t *serializerTable) kindOf(class string) (string, *family) {
	if t == nil {
		return "", nil
	}
	for _, f := range t.families {
		if f.kind == nil {
			continue
		}
		if k := f.kind(class); k != "" {
			return k, f
		}
	}
	return "", nil
}

// familyOf is the family whose kind s is, or nil for flink-core's.
func familyOf(s *SerializerSnapshot) *family {
	if s == nil {
		return nil
	}
	return s.kinds().family
}

// bind makes s and its nested snapshots read their values by t.
func (t *serializerTable) bind(s *SerializerSnapshot) *SerializerSnapshot {
	if s == nil {
		return nil
	}
	s.table = t
	s.memo.Store(nil)
	for _, n := range s.Nested {
		t.bind(n)
	}
	return s
}
