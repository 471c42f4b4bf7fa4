package kryo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/protovalue"
)

// What kryo_schema.go reads, written back from its JSON.

func (k *kryoOut) noRefs(class string) bool {
	return kryoNoRefs(class, k.v5) || k.v5 && isUserEnum(k.schemas, class)
}

// declares reports whether an untagged top-level value is one of the
// class the serializer declares.
func (k *kryoOut) declares(class string) bool {
	_, isUser := userClass(k.schemas, class)
	_, isProto := protoSet(k.schemas).Message(class)
	return kryoDeclared(class) || isUser || isProto || userArray(k.schemas, class) != ""
}

// untypedUserValue reports whether v, untagged, would be written as a
// JDK class (a HashMap for an object) where the serializer declares a
// user's class that stateutil has no layout of: a value no such state
// holds, taken for one of the declared class.
func (k *kryoOut) untypedUserValue(declared string, v any) bool {
	return kryoUserName(declared) && !k.declares(declared) && kryoUntaggedValue(v) && kryoClassOf(v, nil) != declared
}

// kryoTaggedAs reports whether v is {"@class": class, "@value": ...}.
func kryoTaggedAs(v any, class string) bool {
	m, ok := v.(map[string]any)
	_, hasValue := m["@value"]
	return ok && len(m) == 2 && m["@class"] == class && hasValue
}

// kryoWhole is Family.Whole: a value wholly an object of a class with a
// serializer of its own is shown as the bytes after its class.
func kryoWhole(s *typeser.SerializerSnapshot, class string, shown []byte) ([]byte, bool) {
	if reg, ok := registration(s.KryoRegistrations, class); !ok || reg.Kind == 0 || class != s.TypeClass {
		return nil, false
	}
	k := &kryoOut{v5: s.Kryo5, regs: s.KryoRegistrations, names: map[string]int{}, tailEnd: -1}
	k.class(class)
	return append(k.b, shown...), true
}

// refMarker writes an object's reference marker, or the back-reference v
// is (done).
func (k *kryoOut) refMarker(class string, v any) (done bool, err error) {
	if m, ok := v.(map[string]any); ok {
		if id, isRef := kryoRefID(m); isRef {
			if id < 0 || id >= int64(len(k.refs)) || k.refs[id] != class {
				return true, fmt.Errorf("reference to object %d, not one of class %s", id, class)
			}
			k.varint(uint64(id) + 2)
			return true, nil
		}
	}
	k.b = append(k.b, 1)
	k.refs = append(k.refs, class)
	return false, nil
}

// extended writes an object of class that kryo_encode.go does not; ok
// false leaves it to kryo_encode.go.
func (k *kryoOut) extended(class string, v any, marker bool, depth int) (ok bool, err error) {
	if reg, isReg := registration(k.regs, class); isReg && reg.Kind != 0 {
		if c, ok := userClass(k.schemas, class); ok && writtenBy(c, reg) {
			if marker {
				if done, err := k.refMarker(class, v); done {
					return true, err
				}
			}
			return true, k.written(c, v, depth)
		}
		md, isProto := protoSet(k.schemas).Message(class)
		if reg.Serializer != chillProtobuf || !isProto {
			return true, fmt.Errorf("values of class %s, which a serializer of its own writes, are written only whole, as the bytes that serializer wrote", class)
		}
		if marker {
			if done, err := k.refMarker(class, v); done {
				return true, err
			}
		}
		b, err := protovalue.Encode(md, v)
		if err != nil {
			return true, err
		}
		k.varint(uint64(len(b)))
		k.b = append(k.b, b...)
		return true, nil
	}
	if class == kryoOptional {
		if marker {
			if done, err := k.refMarker(class, v); done {
				return true, err
			}
		}
		return true, k.classAndObject(v, depth+1)
	}
	if _, builtin := kryoSerializerIn(class, k.v5); builtin {
		return false, nil
	}
	c, isUser := userClass(k.schemas, class)
	elem := userArray(k.schemas, class)
	if !isUser && elem == "" {
		return false, nil
	}
	if v == nil {
		return true, fmt.Errorf("want a value of class %s, not null", class)
	}
	if marker && !k.noRefs(class) {
		if done, err := k.refMarker(class, v); done {
			return true, err
		}
	}
	if isUser {
		return true, k.userObject(c, v, depth)
	}
	return true, k.userArray(elem, v, depth)
}

func (k *kryoOut) userObject(c *classlayout.Class, v any, depth int) error {
	if c.Written {
		return k.written(c, v, depth)
	}
	if c.Constants != nil {
		i := slices.Index(c.Constants, fmt.Sprint(v))
		if _, isString := v.(string); !isString || i < 0 {
			return fmt.Errorf("%v is no constant of %s", v, c.Name)
		}
		k.varint(uint64(i) + 1)
		return nil
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want the fields of %s by name, not %v", c.Name, v)
	}
	for name := range fields {
		if !slices.ContainsFunc(c.Fields, func(f classlayout.Field) bool { return f.Name == name }) {
			return fmt.Errorf("%s has no field %q", c.Name, name)
		}
	}
	for _, f := range c.ByName {
		fv, ok := fields[f.Name]
		if !ok {
			return fmt.Errorf("%s: field %q is missing", c.Name, f.Name)
		}
		if err := k.field(f.Type, fv, depth+1); err != nil {
			return fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
		}
	}
	return nil
}

func (k *kryoOut) userArray(elem string, v any, depth int) error {
	vs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want an array, not %v", v)
	}
	k.varint(uint64(len(vs)) + 1)
	final := isFinal(k.schemas, elem)
	for _, e := range vs {
		var err error
		if final {
			err = k.known(elem, nil, e, true, depth+1)
		} else {
			err = k.classAndObject(e, depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// field writes a field of declared type t.
func (k *kryoOut) field(t classlayout.Type, v any, depth int) error {
	if w, ok := kryoWrappers[t.Class]; ok {
		if m, tagged := v.(map[string]any); tagged && m["@class"] == w && len(m) == 2 {
			v = m["@value"]
		}
		if v == nil {
			return fmt.Errorf("a %s field holds no null", t.Class)
		}
		return k.object(w, v, false, depth)
	}
	return k.typed(t, v, true, depth, true)
}

// typed writes a value of declared type t where Kryo writes it knowing t
// (kryo_schema.go's typed).
func (k *kryoOut) typed(t classlayout.Type, v any, canBeNull bool, depth int, top bool) error {
	args := t.Args
	if !k.v5 && !top {
		args = nil
	}
	if isFinal(k.schemas, t.Class) {
		return k.known(t.Class, args, v, canBeNull, depth)
	}
	if v == nil {
		k.b = append(k.b, 0)
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		if _, isRef := kryoRefID(m); isRef {
			return k.classAndObject(v, depth)
		}
	}
	class, payload, err := kryoSplit(v)
	if err != nil {
		return err
	}
	if _, isMap := v.(*kryoMap); !isMap && kryoUntaggedValue(v) && concrete(k.schemas, k.v5, t.Class) {
		class, payload = t.Class, v
	}
	k.class(class)
	return k.objectOf(class, args, payload, true, depth)
}

// known writes an object of class without its class: writeObjectOrNull
// (canBeNull) or writeObject. v is its JSON, tagged or not.
func (k *kryoOut) known(class string, args []classlayout.Type, v any, canBeNull bool, depth int) error {
	if v == nil {
		if !canBeNull {
			return fmt.Errorf("a null where Kryo writes an object of class %s", class)
		}
		k.b = append(k.b, 0) // the null flag, or the null reference
		return nil
	}
	payload := v
	if m, ok := v.(map[string]any); ok {
		if _, isRef := kryoRefID(m); !isRef {
			if c, tagged := m["@class"].(string); tagged {
				if c != class {
					return fmt.Errorf("a %s where Kryo writes an object of class %s", c, class)
				}
				_, payload, _ = kryoSplit(v)
			}
		}
	}
	if m, ok := v.(*kryoMap); ok && m.Class != class {
		return fmt.Errorf("a %s where Kryo writes an object of class %s", m.Class, class)
	}
	if k.noRefs(class) {
		if canBeNull {
			k.b = append(k.b, 1)
		}
		return k.objectOf(class, args, payload, false, depth)
	}
	return k.objectOf(class, args, payload, true, depth)
}

// objectOf is object for a value with generic arguments args.
func (k *kryoOut) objectOf(class string, args []classlayout.Type, v any, marker bool, depth int) error {
	if len(args) == 0 || !kryoGeneric[class] {
		return k.object(class, v, marker, depth)
	}
	if depth > 16 {
		return errors.New("a Kryo value nested deeper than 16")
	}
	if marker {
		if v == nil {
			k.b = append(k.b, 0)
			return nil
		}
		if done, err := k.refMarker(class, v); done {
			return err
		}
	}
	ser, _ := kryoSerializerIn(class, k.v5)
	sorted := ser == kserSortedCollection || ser == kserSortedMap
	if ser == kserMap || ser == kserSortedMap {
		if len(args) != 2 {
			return k.mapOf(v, sorted, depth)
		}
		return k.genericMap(v, sorted, args[0], args[1], depth)
	}
	return k.genericCollection(v, sorted, args[len(args)-1], depth)
}

func (k *kryoOut) genericCollection(v any, sorted bool, elem classlayout.Type, depth int) error {
	v, cmp := kryoAttr(v)
	vs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want an array, not %v", v)
	}
	if cmp != nil && !sorted {
		return fmt.Errorf("a comparator %v for a collection that has none", cmp)
	}
	final := isFinal(k.schemas, elem.Class)
	if !k.v5 {
		if sorted {
			if err := k.comparator(cmp); err != nil {
				return err
			}
		}
		k.varint(uint64(len(vs)))
		for _, e := range vs {
			var err error
			if final {
				err = k.typed(elem, e, true, depth+1, false)
			} else {
				err = k.classAndObject(e, depth+1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// Kryo 5 flags a collection of a final class as holding nulls, any
	// other as of one class, which it then writes once.
	hasNull := containsNil(vs)
	same := !final && len(vs) > 0 && k.sameClass(vs, depth)
	class := ""
	for _, e := range vs {
		if c := kryoClassOf(e, k.refs); same && e != nil && class == "" {
			class = c
		}
	}
	k.flagged(final && hasNull || same, uint64(len(vs))+1)
	if sorted {
		if err := k.comparator(cmp); err != nil {
			return err
		}
	}
	switch {
	case same && class == "":
		k.b = append(k.b, 0) // every element is null
		return nil
	case same:
		k.class(class)
		k.b = append(k.b, map[bool]byte{false: 0, true: 1}[hasNull])
	}
	for _, e := range vs {
		var err error
		switch {
		case final:
			err = k.known(elem.Class, elem.Args, e, hasNull, depth+1)
		case class != "":
			err = k.known(class, elem.Args, e, hasNull, depth+1)
		default:
			err = k.typed(classlayout.Type{Args: elem.Args}, e, true, depth+1, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (k *kryoOut) genericMap(v any, sorted bool, key, val classlayout.Type, depth int) error {
	v, cmp := kryoAttr(v)
	if m, ok := v.(*kryoMap); ok && m.Comparator != "" {
		cmp = m.Comparator
	}
	keys, vals, err := kryoEntries(v)
	if err != nil {
		return err
	}
	if cmp != nil && !sorted {
		return fmt.Errorf("a comparator %v for a map that has none", cmp)
	}
	if _, decoded := v.(*kryoMap); sorted && !decoded {
		keys, vals = javaSortedEntries(keys, vals, cmp)
	}
	if sorted && !k.v5 {
		if err := k.comparator(cmp); err != nil {
			return err
		}
	}
	n := uint64(len(keys))
	if k.v5 {
		n++
	}
	k.varint(n)
	if sorted && k.v5 {
		if err := k.comparator(cmp); err != nil {
			return err
		}
	}
	kt, vt := k.generic(key), k.generic(val)
	for i := range keys {
		if err := k.typed(kt, keys[i], true, depth+1, false); err != nil {
			return err
		}
		if err := k.typed(vt, vals[i], true, depth+1, false); err != nil {
			return err
		}
	}
	return nil
}

// generic is kryoIn.generic for the writer.
func (k *kryoOut) generic(t classlayout.Type) classlayout.Type {
	if isFinal(k.schemas, t.Class) {
		return t
	}
	return classlayout.Type{Args: t.Args}
}
