package kryo

import (
	"errors"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/protovalue"
	"github.com/stateutil/stateutil/snapshot"
)

// Beyond the classes Kryo and Flink give serializers (kryo.go), these are
// read here:
//   - java.util.Optional: Kryo 5's OptionalSerializer writes its value
//     with writeClassAndObject (null when empty); Kryo 2 has no serializer
//     of its own for it, and its FieldSerializer writes Optional's one
//     field, value, an Object, the same way. The JSON is
//     {"@class": "java.util.Optional", "@value": V}, and where the
//     snapshot declares Optional, V alone (null when empty) unless V is
//     an Optional or an object kept as its bytes.
//   - a class registered with a serializer of its own (the snapshot's
//     registration of kind 1 or 2): chill-protobuf's ProtobufSerializer
//     writes a message as a varint length and the message's bytes, which
//     decode by the user's descriptors (--proto-descriptors; JSON as
//     internal/protovalue says); one whose class the user marks
//     @WrittenBy by the writes declared (kryo_written.go); any other is
//     not decoded, and a value that is wholly one shows the bytes after
//     its class.
//   - a class under Kryo's FieldSerializer, by the fields the user
//     declares (--kryo-classes, internal/classlayout): every field,
//     inherited ones too, sorted by name, without names or a count; a
//     primitive as Kryo writes the primitive (int and long as zigzag
//     varints); any other field, when its class is final (Kryo.isFinal), as
//     writeObjectOrNull with the serializer of that class, else as
//     writeClassAndObject. The field's generic type tells a collection or a
//     map of the field its elements' (keys', values') class: where that is
//     final, they are written without it. Kryo 2 gives a field's
//     serializer the field's type arguments only (FieldSerializer's
//     ObjectField, MapSerializer.setGenerics); Kryo 5 hands them on to
//     the collections and maps inside it (Generics.nextGenericTypes). A
//     user's enum is its ordinal plus one. The JSON is the fields by name,
//     each as a Kryo value of its own, untagged where its class is the
//     field's type.
// A value that does not decode by the user's schema is not decoded, never
// damage: the schema is the user's word, the snapshot records none.

// chillProtobuf is chill-protobuf's serializer of Protobuf messages.
const chillProtobuf = "com.twitter.chill.protobuf.ProtobufSerializer"

// kryoRegisteredClass is the registration kind of a serializer given by
// its class (Flink's KryoRegistration.SerializerDefinitionType.CLASS).
const kryoRegisteredClass = 1

const kryoOptional = "java.util.Optional"

// kryoFinalJDK are the JDK classes whose values kryo.go decodes that
// Kryo's isFinal holds: a field or element declared of one is written
// without its class.
var kryoFinalJDK = []string{"java.lang.String", "java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte",
	"java.lang.Character", "java.lang.Boolean", "java.lang.Float", "java.lang.Double", "java.lang.Class", kryoOptional,
	"java.util.UUID", "java.net.URI", "java.util.regex.Pattern", "java.util.Locale"}

// kryoWrappers are the primitives' wrappers, whose serializers write what
// FieldSerializer writes for a primitive field.
var kryoWrappers = map[string]string{"int": "java.lang.Integer", "long": "java.lang.Long", "short": "java.lang.Short",
	"byte": "java.lang.Byte", "char": "java.lang.Character", "boolean": "java.lang.Boolean", "float": "java.lang.Float", "double": "java.lang.Double"}

// registration is the snapshot's registration of class, if any.
func registration(regs []typeser.KryoRegistration, class string) (typeser.KryoRegistration, bool) {
	i := slices.IndexFunc(regs, func(r typeser.KryoRegistration) bool { return r.Class == class })
	if i < 0 {
		return typeser.KryoRegistration{}, false
	}
	return regs[i], true
}

// userClass is the layout the user gives class, if any.
func userClass(s *snapshot.Schemas, class string) (*classlayout.Class, bool) {
	if s == nil {
		return nil, false
	}
	return s.Classes.Class(class)
}

func protoSet(s *snapshot.Schemas) *protovalue.Set {
	if s == nil {
		return nil
	}
	return s.Protos
}

// noRefs: Kryo writes no reference marker for the wrappers, nor, in Kryo
// 5, for enums, the user's included.
func (k *kryoIn) noRefs(class string) bool {
	return k.classes.of(class).noRefs
}

func isUserEnum(s *snapshot.Schemas, class string) bool {
	c, ok := userClass(s, class)
	return ok && c.Constants != nil
}

// isFinal is Kryo's isFinal for the classes known: those of kryoFinalJDK,
// the user's final classes and enums, arrays of final components.
func isFinal(s *snapshot.Schemas, class string) bool {
	if elem, ok := strings.CutPrefix(class, "["); ok {
		elem = strings.TrimLeft(elem, "[")
		if len(elem) == 1 {
			return true // a primitive
		}
		name, ok := strings.CutPrefix(strings.TrimSuffix(elem, ";"), "L")
		return ok && isFinal(s, name)
	}
	if c, ok := userClass(s, class); ok {
		return c.Final
	}
	return slices.Contains(kryoFinalJDK, class)
}

// concrete reports whether values of class are read here or in kryo.go:
// an untagged value in a place declared of that class is one of it.
func concrete(s *snapshot.Schemas, v5 bool, class string) bool {
	if class == "" {
		return false
	}
	if _, ok := userClass(s, class); ok || class == kryoOptional || userArray(s, class) != "" {
		return true
	}
	if _, ok := protoSet(s).Message(class); ok {
		return true
	}
	_, ok := kryoSerializerIn(class, v5)
	return ok && class != "java.lang.Object"
}

// userArray is the component class of an array of a user's class
// ("[Lcom.acme.Line;"), else "".
func userArray(s *snapshot.Schemas, class string) string {
	name, ok := strings.CutPrefix(class, "[L")
	if !ok || !strings.HasSuffix(name, ";") {
		return ""
	}
	name = strings.TrimSuffix(name, ";")
	if _, ok := userClass(s, name); !ok {
		return ""
	}
	return name
}

// extended reads an object of class that kryo.go does not: ok false
// leaves it to kryo.go.
func (k *kryoIn) extended(class string, info *kryoClass, marker bool, depth int) (any, bool) {
	if info.custom {
		return k.custom(class, info, marker, depth), true
	}
	if class == kryoOptional {
		if marker {
			if v, follows := k.ref(class); !follows {
				return v, true
			}
		}
		v := k.classAndObject(depth + 1)
		if k.r.Err != nil {
			return nil, true
		}
		return builtTagged(k, class, v), true
	}
	if info.builtin {
		return nil, false
	}
	if c := info.user; c != nil {
		return k.bySchema(class, func() any { return k.userObject(c, marker, depth) }), true
	}
	if elem := info.userArray; elem != "" {
		return k.bySchema(class, func() any { return k.readUserArray(class, elem, marker, depth) }), true
	}
	return nil, false
}

// bySchema reads an object by the user's schema: what does not decode by
// it is not decoded (class), never damage.
func (k *kryoIn) bySchema(class string, read func() any) any {
	if k.r.BySchema == nil && !k.skip { // a skip walk's reader is a copy, dropped
		k.r.BySchema = &snapshot.NotDecodedError{Serializer: k.serializer, ValueClass: class}
	}
	k.inSchema++
	v := read()
	k.inSchema--
	if k.inSchema == 0 && k.r.Err != nil && !errors.Is(k.r.Err, snapshot.ErrNotDecoded) {
		k.r.Err = nil
		k.tail = ""
		k.notDecoded(class)
		return nil
	}
	return v
}

// custom reads an object of a class registered with a serializer of its
// own.
func (k *kryoIn) custom(class string, info *kryoClass, marker bool, depth int) any {
	r := k.r
	if c := info.user; c != nil && writtenBy(c, info.reg) {
		// By what the user says the serializer writes (kryo_written.go);
		// a value wholly of the class that does not read so shows its
		// bytes as without it.
		at, names, refs := r.Off, len(k.names), len(k.refs)
		v := k.bySchema(class, func() any { return k.written(c, marker, depth) })
		if !k.wholly(class, depth) || r.Err == nil && r.Remaining() == 0 {
			return v
		}
		r.Off, r.Err, k.names, k.refs = at, nil, k.names[:names], k.refs[:refs]
	}
	md, isProto := protoSet(k.schemas).Message(class)
	if info.reg.Serializer == chillProtobuf && isProto {
		if marker {
			if v, follows := k.ref(class); !follows {
				return v
			}
		}
		at := r.Pos()
		n := k.varint("Protobuf message length")
		b := r.Take(k.count(uint64(n), 1, "Protobuf message length", at), "Protobuf message")
		if r.Err != nil || k.skip {
			// Skipped, a message ends where its length says, which is
			// all a walk needs; whether it decodes is the decoder's to
			// tell, value by value, as in a savepoint's.
			return nil
		}
		v, err := protovalue.Decode(md, b)
		if err != nil {
			k.notDecoded(class)
			return nil
		}
		return builtTagged(k, class, v)
	}
	if k.wholly(class, depth) && r.Remaining() > 0 {
		// The value is wholly an object no decoder here reads: it shows
		// the bytes Kryo wrote after its class.
		shown := r.Take(r.Remaining(), "Kryo "+class)
		k.notDecoded(class)
		var nd *snapshot.NotDecodedError
		if errors.As(r.Err, &nd) {
			nd.Bytes = shown
		}
		return nil
	}
	k.notDecoded(class)
	return nil
}

// wholly reports whether the object of class being read at depth is the
// whole value.
func (k *kryoIn) wholly(class string, depth int) bool {
	return depth == 0 && k.delimited && class == k.declared
}

// declaredValue is the value v of a serializer that declares Optional
// (its value, null when empty; anything but an Optional, which Flink never
// stores there, would read as an Optional's value: it is not decoded), a
// class read by the user's schemas (untagged where of that class, tagged
// where it would be taken for one), or a user's class of no schema (tagged
// where it would be taken for one); ok false leaves v to decodeKryo.
// tag is the class v's tag names.
func (k *kryoIn) declaredValue(v any, tag string) (any, bool) {
	switch {
	case k.r.Err != nil:
		return nil, false
	case k.skip && k.declared != kryoOptional:
		return v, true
	case k.skip && v != nil && tag == kryoOptional:
		return v, true // an Optional, which is what is checked below
	}
	if k.declared == kryoOptional {
		if m, ok := v.(map[string]any); ok && len(m) == 2 && m["@class"] == kryoOptional {
			if c, ok := m["@value"].(map[string]any); ok && (c["@class"] == kryoOptional || len(c) == 2 && c["@bytes"] != nil) {
				// An Optional of an Optional, or of an object kept as
				// its bytes, keeps its tag: its value alone would be
				// taken for the Optional, or for it not decoded.
				return v, true
			}
			return m["@value"], true
		}
		// A null, or an object of another class, which Flink never
		// stores there, would read as an Optional's value.
		k.notDecoded(kryoOptional)
		return nil, true
	}
	_, isUser := userClass(k.schemas, k.declared)
	_, isProto := protoSet(k.schemas).Message(k.declared)
	class := kryoClassOf(v, k.refs)
	switch {
	case isUser || isProto || userArray(k.schemas, k.declared) != "":
		return fieldJSON(k.schemas, k.v5, v, class, k.declared), true
	case kryoUserName(k.declared) && class != k.declared && kryoPlain(v):
		// Untagged, it would be taken for an object of the user's class,
		// whose fields stateutil does not know (kryo_schema_encode.go).
		return kryoTagged(class, v), true
	}
	return nil, false
}

// kryoUserName reports whether class is a user's, not the JDK's or
// Scala's.
func kryoUserName(class string) bool {
	for _, jdk := range []string{"java.", "javax.", "scala.", "["} {
		if strings.HasPrefix(class, jdk) {
			return false
		}
	}
	return class != ""
}

// userObject reads an object of a user's class or enum.
func (k *kryoIn) userObject(c *classlayout.Class, marker bool, depth int) any {
	r := k.r
	if marker && !k.noRefs(c.Name) {
		if v, follows := k.ref(c.Name); !follows {
			return v
		}
	}
	if c.Written {
		// Written with no registration of a serializer (Kryo's
		// @DefaultSerializer), or registered without one: by what the
		// user says it writes.
		return k.written(c, false, depth)
	}
	if c.Constants != nil {
		n := k.varint("Kryo enum ordinal")
		if r.Err == nil && (n == 0 || int(n) > len(c.Constants)) {
			r.Fail("Kryo enum %s: ordinal %d of %d constants", c.Name, int(n)-1, len(c.Constants))
		}
		if r.Err != nil {
			return nil
		}
		return builtTagged(k, c.Name, c.Constants[n-1])
	}
	var out map[string]any
	if !k.skip {
		out = make(map[string]any, len(c.Fields))
	}
	for _, f := range c.ByName {
		v := k.field(f.Type, depth+1)
		if r.Err != nil {
			return nil
		}
		if out != nil {
			out[f.Name] = v
		}
	}
	return builtTagged(k, c.Name, out)
}

// userArray reads an array of a user's class: final components without
// their class (ObjectArraySerializer's elementsAreSameType).
func (k *kryoIn) readUserArray(class, elem string, marker bool, depth int) any {
	r := k.r
	if marker {
		if v, follows := k.ref(class); !follows {
			return v
		}
	}
	at := r.Pos()
	n := k.varint("Kryo array length")
	if r.Err == nil && n == 0 {
		r.FailAt(at, "Kryo array object holds a null")
	}
	if r.Err != nil {
		return nil
	}
	cnt := k.count(uint64(n-1), 1, "Kryo array length", at)
	out := k.elems(cnt)
	final := k.classes.of(elem).final
	for i := 0; i < cnt && r.Err == nil; i++ {
		if final {
			out.add(k.elementOf(elem, true, depth+1), elem)
		} else {
			out.add(k.classAndObjectOf(depth + 1))
		}
	}
	return builtTagged(k, class, out.vals)
}

// field reads a field of declared type t: the JSON untagged where the
// class is t's.
func (k *kryoIn) field(t classlayout.Type, depth int) any {
	if w, ok := kryoWrappers[t.Class]; ok {
		return kryoUntagged(k.object(w, false, depth))
	}
	v, class := k.typed(t, true, depth, true)
	return k.fieldJSON(v, class, t.Class)
}

// fieldJSON is the package's fieldJSON of a value read: a skip walk's
// stays as read.
func (k *kryoIn) fieldJSON(v any, class, declared string) any {
	if k.skip {
		return v
	}
	return fieldJSON(k.schemas, k.v5, v, class, declared)
}

// fieldJSON is v, of class, in a place declared of class declared:
// untagged where its class is the declared one (but an empty Optional,
// which would read as null), tagged where an untagged value would be
// taken for one of the declared class.
func fieldJSON(s *snapshot.Schemas, v5 bool, v any, class, declared string) any {
	if v == nil || class == "" {
		return v
	}
	if class != declared {
		if concrete(s, v5, declared) && kryoPlain(v) {
			return kryoTagged(class, v)
		}
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		if val, ok := x["@value"]; ok && len(x) == 2 && x["@class"] == class && val != nil {
			return val
		}
	case *kryoMap:
		if !x.JSONKeys && x.Comparator == "" {
			plain := *x
			plain.Plain = true
			return &plain
		}
	}
	return v
}

// kryoPlain reports whether v's JSON names no class.
func kryoPlain(v any) bool {
	switch x := v.(type) {
	case *kryoMap:
		return (x.Plain || x.Class == "java.util.HashMap") && !x.JSONKeys && x.Comparator == ""
	case map[string]any:
		_, tagged := x["@class"]
		_, isRef := kryoRefID(x)
		return !tagged && !isRef
	}
	return v != nil
}

// typed reads a value of declared type t where Kryo writes it knowing t
// (a field, a generic element): with writeObjectOrNull (canBeNull) or
// writeObject where t's class is final, else with writeClassAndObject.
// The value's generic arguments go to the collection or map it is, as
// far as the Kryo version hands them on (top: t is a field's type). It
// returns the value as its class renders it, and its class ("" for null).
func (k *kryoIn) typed(t classlayout.Type, canBeNull bool, depth int, top bool) (any, string) {
	r := k.r
	args := t.Args
	if !k.v5 && !top {
		args = nil
	}
	if k.classes.of(t.Class).final {
		return k.known(t.Class, args, canBeNull, depth), t.Class
	}
	class := k.class()
	if class == "" || r.Err != nil {
		return nil, ""
	}
	if !k.noRefs(class) && r.Remaining() > 0 && r.Buf[r.Off] == 0 {
		r.Fail("Kryo %s with a null reference marker", class)
		return nil, ""
	}
	return k.objectOf(class, args, true, depth), class
}

// known reads an object of class written without its class: with
// writeObjectOrNull (canBeNull) or writeObject.
func (k *kryoIn) known(class string, args []classlayout.Type, canBeNull bool, depth int) any {
	r := k.r
	if k.noRefs(class) && canBeNull {
		if !r.Bool("Kryo not-null flag") {
			return nil
		}
		return k.objectOf(class, args, false, depth)
	}
	at := r.Pos()
	v := k.objectOf(class, args, true, depth)
	if v == nil && !canBeNull && r.Err == nil {
		r.FailAt(at, "Kryo null where Kryo writes an object")
	}
	return v
}

// kryoGeneric are the collections and maps whose serializers (Kryo's
// CollectionSerializer and MapSerializer) take their elements' classes
// from the generic type of where they are.
var kryoGeneric = map[string]bool{"java.util.ArrayList": true, "java.util.LinkedList": true, "java.util.HashSet": true,
	"java.util.LinkedHashSet": true, "java.util.ArrayDeque": true, "java.util.Vector": true, "java.util.TreeSet": true,
	"java.util.PriorityQueue": true, "java.util.HashMap": true, "java.util.LinkedHashMap": true, "java.util.Hashtable": true,
	"java.util.TreeMap": true}

// objectOf is object for a value with generic arguments args.
func (k *kryoIn) objectOf(class string, args []classlayout.Type, marker bool, depth int) any {
	if len(args) == 0 || !kryoGeneric[class] {
		return k.object(class, marker, depth)
	}
	if depth > 16 {
		k.r.Fail("Kryo values nested deeper than 16")
		return nil
	}
	if marker {
		if v, follows := k.ref(class); !follows {
			return v
		}
	}
	ser := k.classes.of(class).ser
	sorted := ser == kserSortedCollection || ser == kserSortedMap
	if ser == kserMap || ser == kserSortedMap {
		if len(args) != 2 {
			return k.mapOf(class, sorted, depth)
		}
		return k.genericMap(class, sorted, args[0], args[1], depth)
	}
	return k.genericCollection(class, sorted, args[len(args)-1], depth)
}

// genericCollection reads a collection whose elements are declared of
// type elem.
func (k *kryoIn) genericCollection(class string, sorted bool, elem classlayout.Type, depth int) any {
	r := k.r
	cmp := ""
	n, flag, at, ok := k.collectionHeader(class, sorted, &cmp)
	if !ok {
		return nil
	}
	var out kryoElems
	switch {
	case k.classes.of(elem.Class).final:
		// Kryo 5's flag says an element is null; Kryo 2's elements may be.
		mayBeNull := flag || !k.v5
		cnt := k.count(uint64(n), 1, "Kryo collection size", at)
		out = k.elems(cnt)
		for i := 0; i < cnt && r.Err == nil; i++ {
			out.add(k.typed(elem, mayBeNull, depth+1, false))
		}
		if r.Err == nil && k.v5 && flag && !out.null {
			r.FailAt(at, "Kryo collection flagged with nulls has none")
		}
	case k.v5 && flag && n > 0:
		out = k.sameClassElements(at, n, elem, depth)
	case k.v5 && flag:
		r.FailAt(at, "Kryo 5 empty collection flagged as of one class, which Kryo never writes")
	default:
		cnt := k.count(uint64(n), 1, "Kryo collection size", at)
		out = k.elems(cnt)
		for i := 0; i < cnt && r.Err == nil; i++ {
			out.add(k.typed(classlayout.Type{Args: elem.Args}, true, depth+1, false))
		}
		if k.v5 && r.Err == nil && n > 0 && !out.mixed {
			r.FailAt(at, "Kryo 5 collection of one class without its flag")
		}
	}
	if r.Err != nil {
		return nil
	}
	return k.taggedCollection(class, cmp, out.vals)
}

// sameClassElements reads Kryo 5's elements of one class, written once,
// then whether any is null.
func (k *kryoIn) sameClassElements(at int64, n uint32, elem classlayout.Type, depth int) kryoElems {
	r := k.r
	class := k.class()
	if r.Err != nil {
		return kryoElems{}
	}
	if class == "" {
		if n > 1<<16 {
			r.FailAt(at, "Kryo collection of %d null elements", n)
			return kryoElems{}
		}
		return k.nulls(int(n))
	}
	hasNull := r.Bool("Kryo collection has-null flag")
	cnt := k.count(uint64(n), 1, "Kryo collection size", at)
	out := k.elems(cnt)
	for i := 0; i < cnt && r.Err == nil; i++ {
		out.add(k.known(class, elem.Args, hasNull, depth+1), class)
	}
	if r.Err == nil && hasNull != out.null {
		r.FailAt(at, "Kryo collection has-null flag does not match its elements")
	}
	return out
}

// genericMap reads a map whose keys and values are declared of types
// key and val.
func (k *kryoIn) genericMap(class string, sorted bool, key, val classlayout.Type, depth int) any {
	r := k.r
	var m *kryoMap
	if !k.skip {
		m = &kryoMap{Class: class}
	}
	cmp := ""
	if sorted && !k.v5 && !k.comparator(class, &cmp) {
		return nil
	}
	at := r.Pos()
	n := uint64(k.varint("Kryo map size"))
	if k.v5 {
		if r.Err == nil && n == 0 {
			r.FailAt(at, "Kryo map size 0: Kryo 5 writes the size plus one")
		}
		n--
	}
	if sorted && k.v5 && !k.comparator(class, &cmp) {
		return nil
	}
	cnt := k.count(n, 2, "Kryo map size", at)
	for i := 0; i < cnt && r.Err == nil; i++ {
		kv, _ := k.typed(k.generic(key), true, depth+1, false)
		vv, _ := k.typed(k.generic(val), true, depth+1, false)
		if m != nil {
			m.add(kv, vv)
		}
	}
	if r.Err != nil || m == nil {
		return k.walked(r.Err == nil)
	}
	m.Comparator = cmp
	return m
}

// generic is what a collection or map knows of its elements' declared
// type t: where t's class is not final, only its arguments, which
// Kryo 5 hands on.
func (k *kryoIn) generic(t classlayout.Type) classlayout.Type {
	if k.classes.of(t.Class).final {
		return t
	}
	return classlayout.Type{Args: t.Args}
}
