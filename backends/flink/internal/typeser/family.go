package typeser

import (
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// Family is the serializers of one Flink module or API beyond flink-core's
// built-in ones (Kryo, Avro, the Table runtime's, the Scala API's, the
// connectors'): what reading their serializer snapshots and walking their
// values asks of each. Its kinds are the names serKind gives its
// serializers. Every field but name is optional.
type Family struct {
	Name string
	// Kind classifies one class name (a serializer's or its snapshot's):
	// the family's kind of serializer, or "".
	Kind func(class string) string
	// Snapshots parse the bodies of the family's serializer snapshots, by
	// the snapshot class's simple name.
	Snapshots map[string]SnapshotParser
	// Exprs are the family's words of type expressions that stand for a
	// serializer snapshot by its class alone.
	Exprs map[string]ExprLeaf
	// Expr is the type expression of a serializer of the family's kind.
	Expr func(s *SerializerSnapshot, kind string, nested func() string) (string, bool)
	// Walk decodes (decode set) or skips one value of s; ok is false where
	// s lacks what its values need.
	Walk func(r *wire.Reader, s *SerializerSnapshot, depth int, decode bool) (v any, ok bool)
	// Sized reports whether walk can walk values of s.
	Sized func(s *SerializerSnapshot, depth int) bool
	// Widths are the byte width of every value of each kind whose values
	// are all alike.
	Widths map[string]int
	// Encode writes a value given as walk decodes it; ok is false where s
	// lacks what its values need.
	Encode func(b []byte, s *SerializerSnapshot, v any, depth int) (out []byte, ok bool, err error)
	// Hash is the Java hashCode of one key of s; ok is false where the
	// family does not know it.
	Hash func(r *wire.Reader, s *SerializerSnapshot) (h int32, ok bool)
	// Schema describes the values walk decodes for s (snapshot.Schema);
	// ok is false where it cannot, and the values are then any JSON.
	Schema func(s *SerializerSnapshot, depth int) (schema snapshot.Schema, ok bool)
	// Notes say, by kind, what decoding the family's values needs beyond
	// their bytes, or why they are not decoded (the coverage table's).
	Notes map[string]string
	// StateCodecs decode and write the byte[] elements of operator states
	// that no serializer snapshot describes, by the state's name.
	StateCodecs map[string]func() StateCodec
}

// StateCodec decodes and writes the elements of one operator state.
type StateCodec interface {
	snapshot.Codec
	snapshot.Encoder
}

// ExprLeaf is the serializer snapshot a word of a type expression stands
// for.
type ExprLeaf struct {
	Class        string
	Kryo5        bool
	OuterVersion int32
}

// SnapshotParser reads the body of a serializer snapshot of one class into
// s, with cont telling where the structure after it starts.
type SnapshotParser func(sr *SnapReader, s *SerializerSnapshot, cont ContFunc, depth int)

// Table is the families a snapshot's serializers are read with,
// beside flink-core's own. Every serializer snapshot keeps the table it
// was read with, so that its values walk by it wherever they go.
type Table struct {
	families    []*Family
	byKind      map[string]*Family
	parsers     map[string]SnapshotParser
	exprs       map[string]ExprLeaf
	stateCodecs map[string]func() StateCodec
}

// NewTable builds the table of families. Two families claiming
// the same snapshot class, type expression or state name are a
// programming error.
func NewTable(families ...*Family) *Table {
	t := &Table{families: families, byKind: map[string]*Family{},
		parsers: map[string]SnapshotParser{}, exprs: map[string]ExprLeaf{},
		stateCodecs: map[string]func() StateCodec{}}
	for class, p := range coreParsers {
		t.parsers[class] = p
	}
	for word, class := range CoreExprs {
		t.exprs[word] = ExprLeaf{Class: class}
	}
	// A Row's expression says whether its serializer writes the row kind
	// (from outer version 3 on, as Flink 1.11+ writes it).
	t.exprs["row"] = ExprLeaf{Class: rowSnapshotClass, OuterVersion: 2}
	t.exprs["rowkind"] = ExprLeaf{Class: rowSnapshotClass, OuterVersion: 3}
	for simple, kind := range temporalKinds {
		t.exprs[temporalExprs[kind]] = ExprLeaf{Class: basePackage + simple + "$" + simple + "Snapshot"}
	}
	for _, f := range families {
		for class, p := range f.Snapshots {
			if _, dup := t.parsers[class]; dup {
				panic(fmt.Sprintf("serializer family %s: snapshot class %s has a parser already", f.Name, class))
			}
			t.parsers[class] = p
		}
		for word, leaf := range f.Exprs {
			if _, dup := t.exprs[word]; dup {
				panic(fmt.Sprintf("serializer family %s: type expression %q is taken", f.Name, word))
			}
			t.exprs[word] = leaf
		}
		for state, c := range f.StateCodecs {
			if _, dup := t.stateCodecs[state]; dup {
				panic(fmt.Sprintf("serializer family %s: state %q has a codec already", f.Name, state))
			}
			t.stateCodecs[state] = c
		}
	}
	return t
}

// kindOf classifies a class name by the families: their kind, or "".
func (t *Table) kindOf(class string) (string, *Family) {
	if t == nil {
		return "", nil
	}
	for _, f := range t.families {
		if f.Kind == nil {
			continue
		}
		if k := f.Kind(class); k != "" {
			return k, f
		}
	}
	return "", nil
}

// familyOf is the family whose kind s is, or nil for flink-core's.
func familyOf(s *SerializerSnapshot) *Family {
	if s == nil {
		return nil
	}
	return s.kinds().family
}

// Bind makes s and its nested snapshots read their values by t.
func (t *Table) Bind(s *SerializerSnapshot) *SerializerSnapshot {
	if s == nil {
		return nil
	}
	s.table = t
	s.memo.Store(nil)
	for _, n := range s.Nested {
		t.Bind(n)
	}
	return s
}
