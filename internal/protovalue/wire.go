package protovalue

import (
	"errors"
	"math"
	"slices"
	"unicode/utf16"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// marshal appends m as Java's generated writeTo writes it: the fields set,
// in field-number order (oneofs too); repeated scalars packed where the
// field is; a map's entries sorted by key, each with its key and its value
// even where they are the default.
func marshal(b []byte, m protoreflect.Message, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("messages nested too deep")
	}
	fields := m.Descriptor().Fields()
	order := make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range order {
		order[i] = fields.Get(i)
	}
	slices.SortFunc(order, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number()) - int(b.Number()) })
	var err error
	for _, fd := range order {
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			b, err = marshalMap(b, fd, v.Map(), depth)
		case fd.IsList() && fd.IsPacked():
			var packed []byte
			list := v.List()
			for i := 0; i < list.Len(); i++ {
				packed = appendScalar(packed, fd, list.Get(i))
			}
			b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
			b = protowire.AppendBytes(b, packed)
		case fd.IsList():
			list := v.List()
			for i := 0; i < list.Len() && err == nil; i++ {
				b, err = marshalField(b, fd, list.Get(i), depth)
			}
		default:
			b, err = marshalField(b, fd, v, depth)
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// marshalField appends one tagged value of fd.
func marshalField(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		sub, err := marshal(nil, v.Message(), depth+1)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		return protowire.AppendBytes(b, sub), nil
	case protoreflect.GroupKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.StartGroupType)
		b, err := marshal(b, v.Message(), depth+1)
		if err != nil {
			return nil, err
		}
		return protowire.AppendTag(b, fd.Number(), protowire.EndGroupType), nil
	}
	b = protowire.AppendTag(b, fd.Number(), wireType(fd.Kind()))
	return appendScalar(b, fd, v), nil
}

// marshalMap appends a map's entries in the order Java's generated code
// writes them: sorted by key (a String's by its UTF-16 units).
func marshalMap(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map, depth int) ([]byte, error) {
	var keys []protoreflect.MapKey
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(x, y protoreflect.MapKey) int { return compareKeys(fd.MapKey().Kind(), x, y) })
	for _, k := range keys {
		entry, err := marshalField(nil, fd.MapKey(), k.Value(), depth)
		if err != nil {
			return nil, err
		}
		if entry, err = marshalField(entry, fd.MapValue(), m.Get(k), depth); err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		b = protowire.AppendBytes(b, entry)
	}
	return b, nil
}

func compareKeys(kind protoreflect.Kind, x, y protoreflect.MapKey) int {
	switch kind {
	case protoreflect.StringKind:
		return slices.Compare(utf16.Encode([]rune(x.String())), utf16.Encode([]rune(y.String())))
	case protoreflect.BoolKind:
		return boolInt(x.Bool()) - boolInt(y.Bool())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		// Java sorts its (signed) longs and ints as they are.
		if kind == protoreflect.Uint32Kind || kind == protoreflect.Fixed32Kind {
			return cmpInt(int64(int32(uint32(x.Uint()))), int64(int32(uint32(y.Uint()))))
		}
		return cmpInt(int64(x.Uint()), int64(y.Uint()))
	}
	return cmpInt(x.Int(), y.Int())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	}
	return protowire.VarintType
}

// appendScalar appends a scalar's payload, without its tag.
func appendScalar(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protowire.AppendVarint(b, protowire.EncodeBool(v.Bool()))
	case protoreflect.EnumKind:
		return protowire.AppendVarint(b, uint64(int64(v.Enum())))
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return protowire.AppendVarint(b, uint64(v.Int()))
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v.Int()))
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		return protowire.AppendVarint(b, v.Uint())
	case protoreflect.Fixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Uint()))
	case protoreflect.Sfixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Int()))
	case protoreflect.Fixed64Kind:
		return protowire.AppendFixed64(b, v.Uint())
	case protoreflect.Sfixed64Kind:
		return protowire.AppendFixed64(b, uint64(v.Int()))
	case protoreflect.FloatKind:
		return protowire.AppendFixed32(b, math.Float32bits(float32(v.Float())))
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(b, math.Float64bits(v.Float()))
	case protoreflect.StringKind:
		return protowire.AppendString(b, v.String())
	case protoreflect.BytesKind:
		return protowire.AppendBytes(b, v.Bytes())
	}
	return b
}
