package kryo

import (
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/classlayout"
)

// A class written by a Kryo serializer of the user's own, read and
// written by what the user says it writes (a class marked @WrittenBy in
// --kryo-classes; internal/classlayout): after its reference marker, its
// members in the order declared, each as Kryo's Output or Kryo writes it.
// Kryo 2 and Kryo 5 write the same calls alike but for the fixed-width
// numbers (writeShort, writeChar, writeInt, writeLong, writeFloat,
// writeDouble), big-endian in Kryo 2 and little-endian in Kryo 5, and for
// writeString, which writes an ASCII string of 2 to 63 characters as ASCII
// in Kryo 2 and of 2 to 32 in Kryo 5 (kryo.go's string). The JSON is the
// members by name, as a user class's fields are.

// kryoWriteWrappers are the writes that write what Kryo's serializer of a
// primitive's wrapper writes, by the primitive.
var kryoWriteWrappers = map[classlayout.Write]string{classlayout.WriteBoolean: "boolean", classlayout.WriteByte: "byte",
	classlayout.WriteShort: "short", classlayout.WriteChar: "char", classlayout.WriteFloat: "float", classlayout.WriteDouble: "double",
	classlayout.WriteVarIntZigzag: "int", classlayout.WriteVarLongZigzag: "long"}

// writtenBy reports whether c's writes describe the bytes of a class the
// snapshot registers as reg: not where the registration names another
// serializer than the one the user names.
func writtenBy(c *classlayout.Class, reg typeser.KryoRegistration) bool {
	return c.Written && (c.WrittenBy == "" || reg.Kind != kryoRegisteredClass || reg.Serializer == c.WrittenBy)
}

// written reads an object of c, a Written class.
func (k *kryoIn) written(c *classlayout.Class, marker bool, depth int) any {
	r := k.r
	if marker {
		if v, follows := k.ref(c.Name); !follows {
			return v
		}
	}
	var out map[string]any
	if !k.skip {
		out = make(map[string]any, len(c.Fields))
	}
	for _, f := range c.Fields {
		v := k.write(f, depth+1)
		if r.Err != nil {
			return nil
		}
		if out != nil {
			out[f.Name] = v
		}
	}
	return builtTagged(k, c.Name, out)
}

// write reads one member of a Written class.
func (k *kryoIn) write(f classlayout.Field, depth int) any {
	r := k.r
	if p, ok := kryoWriteWrappers[f.Write]; ok {
		return k.field(classlayout.Type{Class: p}, depth)
	}
	switch f.Write {
	case classlayout.WriteInt:
		return built(k, int32(uint32(k.fixed(4, "Kryo int"))))
	case classlayout.WriteLong:
		return built(k, int64(k.fixed(8, "Kryo long")))
	case classlayout.WriteVarInt:
		return built(k, int32(k.varint("Kryo variable-length int")))
	case classlayout.WriteVarLong:
		return built(k, int64(k.varlong("Kryo variable-length long", 9)))
	case classlayout.WriteString:
		s, ok := k.string("Kryo string", false)
		if !ok {
			return nil
		}
		return built(k, s)
	case classlayout.WriteObject, classlayout.WriteObjectOrNull:
		if depth > 16 {
			r.Fail("Kryo values nested deeper than 16")
			return nil
		}
		v := k.known(f.Type.Class, nil, f.Write == classlayout.WriteObjectOrNull, depth)
		return k.fieldJSON(v, f.Type.Class, f.Type.Class)
	case classlayout.WriteClassAndObject:
		return k.classAndObject(depth)
	}
	r.Fail("Kryo write %s, which stateutil does not read", f.Write)
	return nil
}

// written writes an object of c, a Written class, from its members by
// name.
func (k *kryoOut) written(c *classlayout.Class, v any, depth int) error {
	members, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want the members of %s by name, not %v", c.Name, v)
	}
	for name := range members {
		if !slices.ContainsFunc(c.Fields, func(f classlayout.Field) bool { return f.Name == name }) {
			return fmt.Errorf("%s has no member %q", c.Name, name)
		}
	}
	for _, f := range c.Fields {
		mv, ok := members[f.Name]
		if !ok {
			return fmt.Errorf("%s: member %q is missing", c.Name, f.Name)
		}
		if err := k.write(f, mv, depth+1); err != nil {
			return fmt.Errorf("%s.%s: %w", c.Name, f.Name, err)
		}
	}
	return nil
}

// write writes one member of a Written class.
func (k *kryoOut) write(f classlayout.Field, v any, depth int) error {
	if p, ok := kryoWriteWrappers[f.Write]; ok {
		return k.field(classlayout.Type{Class: p}, v, depth)
	}
	switch f.Write {
	case classlayout.WriteInt, classlayout.WriteVarInt:
		n, ok := kryoInteger(v)
		if !ok || n < -1<<31 || n >= 1<<31 {
			return fmt.Errorf("want a 32-bit integer, not %v", v)
		}
		if f.Write == classlayout.WriteInt {
			k.fixed(4, uint64(uint32(n)))
		} else {
			k.varint(uint64(uint32(n)))
		}
		return nil
	case classlayout.WriteLong, classlayout.WriteVarLong:
		n, ok := kryoInteger(v)
		if !ok {
			return fmt.Errorf("want a 64-bit integer, not %v", v)
		}
		if f.Write == classlayout.WriteLong {
			k.fixed(8, uint64(n))
		} else {
			k.varlong(uint64(n))
		}
		return nil
	case classlayout.WriteString:
		if v == nil {
			k.flagged(true, 0)
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string or null, not %v", v)
		}
		k.string(s, false)
		return nil
	case classlayout.WriteObject, classlayout.WriteObjectOrNull:
		if depth > 16 {
			return fmt.Errorf("a Kryo value nested deeper than 16")
		}
		return k.known(f.Type.Class, nil, v, f.Write == classlayout.WriteObjectOrNull, depth)
	case classlayout.WriteClassAndObject:
		return k.classAndObject(v, depth)
	}
	return fmt.Errorf("a Kryo write %s, which stateutil does not write", f.Write)
}
