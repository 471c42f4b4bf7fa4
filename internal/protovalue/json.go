package protovalue

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stateutil/stateutil/internal/nonfinite"
)

// toJSON is m's set fields by proto name.
func toJSON(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			obj := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				obj[mapKeyText(k)] = scalarJSON(fd.MapValue(), e)
				return true
			})
			out[string(fd.Name())] = obj
		case fd.IsList():
			list := v.List()
			arr := make([]any, list.Len())
			for i := range arr {
				arr[i] = scalarJSON(fd, list.Get(i))
			}
			out[string(fd.Name())] = arr
		default:
			out[string(fd.Name())] = scalarJSON(fd, v)
		}
		return true
	})
	return out
}

// mapKeyText is a map key as a JSON object's member name: a string as
// itself, an integer or a boolean as its JSON text.
func mapKeyText(k protoreflect.MapKey) string {
	switch v := k.Interface().(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(k.Interface())
}

func scalarJSON(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return toJSON(v.Message())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return json.Number(strconv.Itoa(int(v.Enum())))
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return "0x" + hex.EncodeToString(v.Bytes())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f := v.Float()
		if s, ok := nonfinite.Text(f); ok {
			return s
		}
		return f
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return json.Number(strconv.FormatUint(v.Uint(), 10))
	}
	return json.Number(strconv.FormatInt(v.Int(), 10))
}

// fromJSON sets m's fields from a message's JSON.
func fromJSON(m protoreflect.Message, v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("messages nested deeper than %d", maxDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want an object of fields, not %v", v)
	}
	fields := m.Descriptor().Fields()
	for name, fv := range obj {
		fd := fields.ByName(protoreflect.Name(name))
		if fd == nil {
			return fmt.Errorf("no field %q", name)
		}
		if err := setField(m, fd, fv, depth); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
	}
	return nil
}

func setField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any, depth int) error {
	switch {
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want an object, not %v", v)
		}
		mp := m.Mutable(fd).Map()
		for text, ev := range obj {
			k, err := scalarValue(fd.MapKey(), text)
			if err != nil {
				return fmt.Errorf("key %q: %w", text, err)
			}
			val, err := elementValue(mp.NewValue, fd.MapValue(), ev, depth)
			if err != nil {
				return fmt.Errorf("key %q: %w", text, err)
			}
			mp.Set(k.MapKey(), val)
		}
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want an array, not %v", v)
		}
		list := m.Mutable(fd).List()
		for i, e := range arr {
			val, err := elementValue(list.NewElement, fd, e, depth)
			if err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
			list.Append(val)
		}
	default:
		val, err := elementValue(func() protoreflect.Value { return m.NewField(fd) }, fd, v, depth)
		if err != nil {
			return err
		}
		m.Set(fd, val)
	}
	return nil
}

// elementValue is one value of fd's kind; fresh makes an empty message.
func elementValue(fresh func() protoreflect.Value, fd protoreflect.FieldDescriptor, v any, depth int) (protoreflect.Value, error) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		msg := fresh()
		return msg, fromJSON(msg.Message(), v, depth+1)
	}
	return scalarValue(fd, v)
}

func scalarValue(fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		switch x := v.(type) {
		case bool:
			return protoreflect.ValueOfBool(x), nil
		case string: // a map key
			b, err := strconv.ParseBool(x)
			return protoreflect.ValueOfBool(b), err
		}
		return protoreflect.Value{}, fmt.Errorf("want true or false, not %v", v)
	case protoreflect.StringKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, fmt.Errorf("want a string, not %v", v)
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		s, _ := v.(string)
		h, isHex := strings.CutPrefix(s, "0x")
		b, err := hex.DecodeString(h)
		if !isHex || err != nil {
			return protoreflect.Value{}, fmt.Errorf("want 0x-prefixed hex, not %v", v)
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		if s, ok := v.(string); ok {
			if ev := fd.Enum().Values().ByName(protoreflect.Name(s)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
		}
		n, err := integer(v, 32, true)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("want a constant of %s, not %v", fd.Enum().FullName(), v)
		}
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f, err := float(v)
		if err != nil {
			return protoreflect.Value{}, err
		}
		if fd.Kind() == protoreflect.FloatKind {
			if math.IsNaN(f) {
				return protoreflect.ValueOfFloat32(math.Float32frombits(javaNaN32)), nil
			}
			return protoreflect.ValueOfFloat32(float32(f)), nil
		}
		if math.IsNaN(f) {
			f = math.Float64frombits(javaNaN64)
		}
		return protoreflect.ValueOfFloat64(f), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := integer(v, 32, true)
		return protoreflect.ValueOfInt32(int32(n)), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := integer(v, 64, true)
		return protoreflect.ValueOfInt64(n), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := integer(v, 32, false)
		return protoreflect.ValueOfUint32(uint32(n)), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := integer(v, 64, false)
		return protoreflect.ValueOfUint64(uint64(n)), err
	}
	return protoreflect.Value{}, fmt.Errorf("fields of kind %s are not written", fd.Kind())
}

// Java's canonical NaNs.
const (
	javaNaN32 = 0x7FC00000
	javaNaN64 = 0x7FF8000000000000
)

// integer reads an integer of bits bits, signed or not, from a JSON
// number (json.Number or float64) or, for map keys, its text.
func integer(v any, bits int, signed bool) (int64, error) {
	var text string
	switch x := v.(type) {
	case json.Number:
		text = x.String()
	case string:
		text = x
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("want an integer, not %v", v)
		}
		text = strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		text = strconv.Itoa(x)
	case int64:
		text = strconv.FormatInt(x, 10)
	default:
		return 0, fmt.Errorf("want an integer, not %v", v)
	}
	if signed {
		n, err := strconv.ParseInt(text, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("want a %d-bit integer, not %s", bits, text)
		}
		return n, nil
	}
	n, err := strconv.ParseUint(text, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("want an unsigned %d-bit integer, not %s", bits, text)
	}
	return int64(n), nil
}

func float(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case json.Number:
		return x.Float64()
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case string:
		if f, ok := nonfinite.Parse(x); ok {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want a number, not %v", v)
}
