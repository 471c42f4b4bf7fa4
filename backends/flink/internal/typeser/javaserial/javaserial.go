package javaserial

import (
	"encoding/hex"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// JavaSerializer writes each value as ObjectOutputStream does, a stream
// of its own: the header AC ED 00 05, then the object. A value shows as
// JSON built from the stream alone:
//
//   - null, a String, a boxed primitive (Integer ... Character, Boolean)
//     as the JSON null, string, number or boolean;
//   - an enum constant as {"@class": its enum, "@enum": its name};
//   - an array as a JSON array of its elements, a byte[] as 0x-prefixed
//     hex;
//   - a Class as {"@class": "java.lang.Class", "name": its name};
//   - any other object as {"@class": its class, then its serialized
//     fields by name (a field a subclass declares again as Class.name)},
//     and, where its writeObject or writeExternal wrote more, "@data": a
//     list of what it wrote (block data as 0x-prefixed hex, objects as
//     above);
//   - an object that holds itself, where it holds itself, as
//     {"@class": its class, "@cycle": true}.
//
// The JSON keeps no serialVersionUID or class descriptor, which Java
// needs to read the stream again, so values are not written back from
// it; a value given as {"@class", "@bytes"} is written back as its bytes.

// Family is flink-runtime's JavaSerializer.
var Family = &typeser.Family{
	Name: "java",
	Kind: kindOf,
	Exprs: map[string]typeser.ExprLeaf{
		"javaserialization": {Class: "org.apache.flink.runtime.state.JavaSerializer$JavaSerializerSnapshot"},
	},
	Expr: func(_ *typeser.SerializerSnapshot, kind string, _ func() string) (string, bool) {
		return "javaserialization", kind == kindJava
	},
	Walk:  walk,
	Sized: func(*typeser.SerializerSnapshot, int) bool { return true },
	Notes: map[string]string{
		kindJava: "Java serialization: decoded into its objects' classes and fields; the JSON keeps no serialVersionUID or class descriptor, " +
			"so a value is written back only as its bytes ({\"@class\", \"@bytes\"})",
	},
}

const kindJava = "JavaSerialization"

func kindOf(n string) string {
	if strings.HasPrefix(n, "org.apache.flink.runtime.state.JavaSerializer") {
		return kindJava
	}
	return ""
}

func walk(r *wire.Reader, s *typeser.SerializerSnapshot, _ int, decode bool) (any, bool) {
	if typeser.KindOf(s) != kindJava || r.Err != nil {
		return nil, false
	}
	obj, used, _, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
	if err != nil {
		r.Err = err
		r.Off = len(r.Buf)
		return nil, true
	}
	r.Off += used
	if !decode {
		return nil, true
	}
	v, ok := render(obj, map[any]bool{}, 0)
	if !ok {
		typeser.NotDecoded(r, s)
		return nil, true
	}
	return v, true
}

// boxes are the classes whose one field "value" is the value they box.
var boxes = map[string]bool{
	"java.lang.Integer": true, "java.lang.Long": true, "java.lang.Short": true, "java.lang.Byte": true,
	"java.lang.Double": true, "java.lang.Float": true, "java.lang.Boolean": true, "java.lang.Character": true,
}

// maxDepth bounds the nesting rendered, as javaser bounds what it parses.
const maxDepth = 64

// render turns one parsed Java value into JSON; ok is false for what the
// JSON above has no form for (a class descriptor written as data).
func render(v any, path map[any]bool, depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil, string, bool, int8, int16, int32, int64, float64:
		return x, true
	case float32:
		return float64(x), true
	case uint16: // a char
		return string(rune(x)), true
	case []byte:
		return "0x" + hex.EncodeToString(x), true
	case *javaser.Enum:
		return map[string]any{"@class": x.Class, "@enum": x.Constant}, true
	case *javaser.Class:
		return map[string]any{"@class": "java.lang.Class", "name": x.Name}, true
	case *javaser.Array:
		if path[x] {
			return map[string]any{"@class": x.Class, "@cycle": true}, true
		}
		if x.Class == "[B" {
			b := make([]byte, len(x.Elements))
			for i, e := range x.Elements {
				n, _ := e.(int8)
				b[i] = byte(n)
			}
			return "0x" + hex.EncodeToString(b), true
		}
		path[x] = true
		defer delete(path, x)
		return renderAll(x.Elements, path, depth)
	case *javaser.Object:
		if boxes[x.Class] && len(x.Fields) == 1 && len(x.Annotations) == 0 {
			return render(x.Fields[0].Value, path, depth+1)
		}
		if path[x] {
			return map[string]any{"@class": x.Class, "@cycle": true}, true
		}
		path[x] = true
		defer delete(path, x)
		out := map[string]any{"@class": x.Class}
		for _, f := range x.Fields {
			fv, ok := render(f.Value, path, depth+1)
			if !ok {
				return nil, false
			}
			name := f.Name
			if _, taken := out[name]; taken {
				name = f.Class + "." + f.Name
			}
			out[name] = fv
		}
		if len(x.Annotations) > 0 {
			data, ok := renderAll(x.Annotations, path, depth)
			if !ok {
				return nil, false
			}
			out["@data"] = data
		}
		return out, true
	}
	return nil, false
}

// renderAll renders the values of a list, one level deeper.
func renderAll(vs []any, path map[any]bool, depth int) ([]any, bool) {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		rv, ok := render(v, path, depth+1)
		if !ok {
			return nil, false
		}
		out = append(out, rv)
	}
	return out, true
}
