package upgrade

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// The serializer snapshots Flink 2.x writes where Flink 1.x wrote Kryo's,
// as Flink 2.3.0 writes them (TypeInformation.of a POJO, its
// PojoSerializer's field serializers' snapshots): a POJO field declared
// List<T> or Collection<T> is NullableSerializer(ListSerializer(
// NullableSerializer(T))), Set<T> NullableSerializer(SetSerializer(T)),
// Map<K,V> NullableSerializer(MapSerializer(NullableSerializer(K), V)).
// T, K and V are the field's type arguments, which the savepoint does not
// record: the values tell them, when every element (key, value) of every
// value of the field is of one class that Flink serializes itself.

const (
	typeutils        = "org.apache.flink.api.common.typeutils.base."
	runtimeTU        = "org.apache.flink.api.java.typeutils.runtime."
	pojoSnapshot     = runtimeTU + "PojoSerializerSnapshot"
	nullableSnapshot = runtimeTU + "NullableSerializer$NullableSerializerSnapshot"
	listSnapshot     = typeutils + "ListSerializerSnapshot"
	mapSnapshot      = typeutils + "MapSerializerSnapshot"
	setSnapshot      = typeutils + "SetSerializerSnapshot"
	compositeVersion = 3
	nestedMagic      = 1333245
)

// basicSnapshots are the snapshots of Flink's serializers of the boxed
// classes a collection's elements may be: what Flink 2.x gives a type
// argument of that class.
var basicSnapshots = map[string]string{
	"java.lang.String": typeutils + "StringSerializer$StringSerializerSnapshot", "java.lang.Long": typeutils + "LongSerializer$LongSerializerSnapshot",
	"java.lang.Integer": typeutils + "IntSerializer$IntSerializerSnapshot", "java.lang.Short": typeutils + "ShortSerializer$ShortSerializerSnapshot",
	"java.lang.Byte": typeutils + "ByteSerializer$ByteSerializerSnapshot", "java.lang.Boolean": typeutils + "BooleanSerializer$BooleanSerializerSnapshot",
	"java.lang.Double": typeutils + "DoubleSerializer$DoubleSerializerSnapshot", "java.lang.Float": typeutils + "FloatSerializer$FloatSerializerSnapshot",
	"java.lang.Character": typeutils + "CharSerializer$CharSerializerSnapshot",
}

// collField is a POJO field that Flink 1.x gave to Kryo and Flink 2.x
// gives to its collection serializers.
type collField struct {
	node  *typeser.SerializerSnapshot // its Kryo serializer's snapshot
	pojo  *typeser.SerializerSnapshot
	field string
	kind  string // List, Set or Map
	// The classes of the elements (a map's keys) and of a map's values
	// seen, and the type arguments settled from them.
	elems, vals []string
	elem, val   string
	// nested and flat count the elements (a map's keys; [1]: its values)
	// that are collections or maps, and those that are not: a field of
	// nested collections stays Kryo's in Flink 2.x.
	nested, flat [2]int
}

// name is the field as POJO.field, the POJO's simple name.
func (f *collField) name() string {
	return f.pojo.TypeClass[strings.LastIndexAny(f.pojo.TypeClass, ".$")+1:] + "." + f.field
}

// see records the classes one value of the field holds: why it blocks,
// or "".
func (f *collField) see(env *Env, v any) string {
	if v == nil {
		return ""
	}
	if f.kind == "Map" {
		keys, vals, ok := env.Entries(v)
		if !ok {
			return fmt.Sprintf("a value that is not a map Kryo's MapSerializer wrote (%s)", kryoClass(env, v))
		}
		f.elems = addClasses(env, f.elems, keys)
		f.vals = addClasses(env, f.vals, vals)
		f.count(env, keys, 0)
		f.count(env, vals, 1)
		return ""
	}
	elems, ok := env.Elements(v)
	if !ok {
		return fmt.Sprintf("a value that is not a collection Kryo's CollectionSerializer wrote (%s)", kryoClass(env, v))
	}
	f.elems = addClasses(env, f.elems, elems)
	f.count(env, elems, 0)
	return ""
}

func (f *collField) count(env *Env, vs []any, side int) {
	for _, v := range vs {
		_, list := env.Elements(v)
		_, _, dict := env.Entries(v)
		switch {
		case v == nil:
		case list || dict:
			f.nested[side]++
		default:
			f.flat[side]++
		}
	}
}

// staysKryo reports whether the field holds nested collections, which
// Flink 2.x serializes with Kryo as Flink 1.x did: a List<List<Long>>,
// a Map<String, List<String>>. Every element (key, value) that is not
// null is then a collection or a map.
func (f *collField) staysKryo() bool {
	for side := range f.nested {
		if f.nested[side] > 0 && f.flat[side] == 0 {
			return true
		}
	}
	return false
}

func kryoClass(env *Env, v any) string {
	c, _ := env.ElementClass(v)
	return c
}

func addClasses(env *Env, seen []string, vs []any) []string {
	for _, v := range vs {
		if c := kryoClass(env, v); c != "" && !slices.Contains(seen, c) {
			seen = append(seen, c)
		}
	}
	return seen
}

// settle picks the type arguments: why it cannot, or "".
func (f *collField) settle() string {
	if f.kind != "Map" {
		var why string
		f.elem, why = typeArgument(f.elems, "element")
		return why
	}
	var why string
	if f.elem, why = typeArgument(f.elems, "key"); why != "" {
		return why
	}
	f.val, why = typeArgument(f.vals, "value")
	return why
}

func typeArgument(classes []string, what string) (string, string) {
	sort.Strings(classes)
	switch {
	case len(classes) == 0:
		return "", fmt.Sprintf("no value holds a %s that is not null, so nothing tells the %s type Flink 2.x serializes it with", what, what)
	case len(classes) > 1:
		return "", fmt.Sprintf("its %ss are of %s: Flink 2.x serializes them by the field's declared type argument, which the savepoint does not record", what, strings.Join(classes, ", "))
	case basicSnapshots[classes[0]] == "":
		return "", fmt.Sprintf("its %ss are %s, which Flink 2.x serializes by the field's declared type argument (a POJO, a nested collection or Kryo), which the savepoint does not record", what, classes[0])
	}
	return classes[0], ""
}

// expr describes the field's new serializer.
func (f *collField) expr() string {
	short := func(c string) string {
		if c == "" {
			return "T"
		}
		return c[strings.LastIndex(c, ".")+1:]
	}
	switch f.kind {
	case "Map":
		return fmt.Sprintf("NullableSerializer(MapSerializer(NullableSerializer(%s), %s))", short(f.elem), short(f.val))
	case "Set":
		return fmt.Sprintf("NullableSerializer(SetSerializer(%s))", short(f.elem))
	}
	return fmt.Sprintf("NullableSerializer(ListSerializer(NullableSerializer(%s)))", short(f.elem))
}

// snapshot is the field's new serializer snapshot (versioned bytes).
func (f *collField) snapshot() []byte {
	leaf := func(c string) []byte { return versioned(basicSnapshots[c], 3, nil) }
	switch f.kind {
	case "Map":
		return nullable(composite(mapSnapshot, 1, nil, nullable(leaf(f.elem)), leaf(f.val)))
	case "Set":
		return nullable(composite(setSnapshot, 1, nil, leaf(f.elem)))
	}
	return nullable(composite(listSnapshot, 1, nil, nullable(leaf(f.elem))))
}

// versioned is a snapshot as Flink nests it: class, version, body.
func versioned(class string, version int32, body []byte) []byte {
	w := &wire.Writer{}
	w.UTF(class)
	w.I32(version)
	w.Raw(body)
	return w.B
}

// composite is a CompositeTypeSerializerSnapshot of compositeVersion.
func composite(class string, outerVersion int32, outer []byte, nested ...[]byte) []byte {
	w := &wire.Writer{}
	w.I32(typeser.CompositeMagic)
	w.I32(outerVersion)
	w.Raw(outer)
	w.I32(nestedMagic)
	w.I32(1)
	w.I32(int32(len(nested)))
	for _, n := range nested {
		w.Raw(n)
	}
	return versioned(class, compositeVersion, w.B)
}

// nullable wraps a snapshot in NullableSerializer's, without padding.
func nullable(inner []byte) []byte {
	return composite(nullableSnapshot, 2, binary.BigEndian.AppendUint32(nil, 0), inner)
}

// rewritten is s's versioned bytes with the nodes in repl replaced: a
// POJO's field snapshots are framed in its body, a composite's nested
// snapshots follow its outer snapshot; anything else must be replaced
// whole or left alone.
func rewritten(s *typeser.SerializerSnapshot, repl map[*typeser.SerializerSnapshot][]byte) ([]byte, error) {
	if b, ok := repl[s]; ok {
		return b, nil
	}
	changed := false
	nested := make([][]byte, len(s.Nested))
	for i, n := range s.Nested {
		if n == nil {
			continue
		}
		b, err := rewritten(n, repl)
		if err != nil {
			return nil, err
		}
		nested[i] = b
		changed = changed || !bytes.Equal(b, n.Versioned)
	}
	if !changed {
		return s.Versioned, nil
	}
	if s.Class == pojoSnapshot {
		return pojoRewritten(s, nested)
	}
	if s.Version == compositeVersion && len(s.Outer) > 0 || s.OuterVersion != 0 {
		old := make([][]byte, len(s.Nested))
		for i, n := range s.Nested {
			old[i] = n.Versioned
		}
		if b := composite(s.Class, s.OuterVersion, s.Outer, old...); !bytes.Equal(b, s.Versioned) {
			return nil, fmt.Errorf("serializer %s: its snapshot is not the composite stateutil would write again", s.Class)
		}
		return composite(s.Class, s.OuterVersion, s.Outer, nested...), nil
	}
	return nil, fmt.Errorf("serializer %s: stateutil does not rewrite what it holds", s.Class)
}

// pojoRewritten is a PojoSerializerSnapshot's bytes with its field
// snapshots replaced by nested (in field order); its registered and
// non-registered subclasses are copied.
func pojoRewritten(s *typeser.SerializerSnapshot, nested [][]byte) ([]byte, error) {
	b := s.Versioned
	r := wire.NewReader(b, "POJO serializer snapshot", 0)
	r.UTF("class")
	r.I32("version")
	r.UTF("POJO class")
	out, err := typeser.CopyOptionalMap(r, slices.Clone(b[:r.Off]), "POJO fields", func(i int, _ string, frame []byte) ([]byte, error) {
		if i >= len(nested) || !bytes.Equal(frame, s.Nested[i].Versioned) {
			return nil, fmt.Errorf("POJO %s: field %d's serializer is not the one read", s.TypeClass, i)
		}
		return nested[i], nil
	})
	if err != nil {
		return nil, err
	}
	return append(out, b[r.Off:]...), nil
}
