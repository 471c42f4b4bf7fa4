package javaser

import (
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// This file walks Java Object Serialization streams (the grammar of the Java
// Object Serialization Specification, chapter 6) far enough to account for
// every byte and to recover class names, field values, strings and enum
// constants. It instantiates nothing.

const (
	TcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcException      = 0x7B
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E

	scWriteMethod    = 0x01
	scBlockData      = 0x08
	ScSerializable   = 0x02
	scExternalizable = 0x04

	javaBaseHandle = 0x7E0000
	maxJavaDepth   = 64
)

// JavaObject is a walked Java object: its class and its serialized fields,
// from the top superclass down.
type Object struct {
	Class  string  `json:"class"`
	Fields []Field `json:"fields"`
	// Annotations holds what writeObject/writeExternal wrote beyond the
	// default fields: []byte block data and objects.
	Annotations []any `json:"-"`
}

// Field is one serialized field value: nil, bool, int8, uint16 (char),
// int16, int32, int64, float32, float64, string, *JavaObject, *JavaEnum,
// *JavaArray or *JavaClass.
type Field struct {
	Class string `json:"class"` // declaring class
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Field returns the value of the first field called name, or nil.
func (o *Object) Field(name string) any {
	for _, f := range o.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// Enum is a serialized enum constant.
type Enum struct {
	Class    string `json:"class"`
	Constant string `json:"constant"`
}

// Array is a serialized array.
type Array struct {
	Class    string `json:"class"`
	Elements []any  `json:"elements"`
}

// JavaClass is a serialized Class object.
type Class struct {
	Name string `json:"name"`
}

type javaClassDesc struct {
	name   string
	flags  byte
	fields []javaFieldDesc
	super  *javaClassDesc
}

type javaFieldDesc struct {
	typ       byte
	name      string
	className string
}

type javaWalker struct {
	r       *wire.Reader
	handles []any
	// Classes lists class names in the order their descriptors appear;
	// Strings lists string objects and enum constants in order.
	Classes []string
	Strings []string
}

// Parse walks one Java-serialized object (stream header AC ED 00 05,
// then one object) at the start of data. It returns the object, the number of
// bytes it took, and the class names and strings it met in order. file and
// base name the position of data in errors.
func Parse(data []byte, file string, base int64) (obj any, used int, classes, strs []string, err error) {
	w := &javaWalker{r: wire.NewReader(data, file, base)}
	v := w.stream()
	if w.r.Err != nil {
		return nil, 0, nil, nil, w.r.Err
	}
	return v, w.r.Off, w.Classes, w.Strings, nil
}

func (w *javaWalker) stream() any {
	r := w.r
	at := r.Pos()
	if magic := r.U16("Java stream magic"); r.Err == nil && magic != 0xACED {
		r.FailAt(at, "Java serialization magic is 0x%04X, want 0xACED", magic)
	}
	at = r.Pos()
	if v := r.U16("Java stream version"); r.Err == nil && v != 5 {
		r.FailAt(at, "Java serialization version %d, want 5", v)
	}
	for r.Err == nil {
		at = r.Pos()
		if r.Remaining() > 0 && r.Buf[r.Off] == tcReset {
			r.Off++
			w.handles = w.handles[:0]
			continue
		}
		v := w.content(0)
		if _, ok := v.([]byte); ok && r.Err == nil {
			r.FailAt(at, "Java stream starts with block data, want an object")
		}
		return v
	}
	return nil
}

func (w *javaWalker) newHandle(v any) int {
	w.handles = append(w.handles, v)
	return len(w.handles) - 1
}

// content reads one object or block of data.
func (w *javaWalker) content(depth int) any {
	r := w.r
	if r.Remaining() > 0 {
		switch r.Buf[r.Off] {
		case tcBlockData:
			r.Off++
			n := int(r.U8("Java block data length"))
			return r.Take(n, "Java block data")
		case tcBlockDataLong:
			r.Off++
			return r.Take(r.Count32(1, "Java block data length"), "Java block data")
		}
	}
	return w.object(depth)
}

func (w *javaWalker) object(depth int) any {
	r := w.r
	if depth > maxJavaDepth {
		r.Fail("Java objects nested deeper than %d", maxJavaDepth)
		return nil
	}
	at := r.Pos()
	tc := r.U8("Java type code")
	if r.Err != nil {
		return nil
	}
	switch tc {
	case TcNull:
		return nil
	case tcReference:
		h := r.I32("Java handle")
		idx := int64(h) - javaBaseHandle
		if r.Err == nil && (idx < 0 || idx >= int64(len(w.handles))) {
			r.FailAt(at, "Java back reference 0x%X to no handle", h)
			return nil
		}
		if r.Err != nil {
			return nil
		}
		return w.handles[idx]
	case tcString:
		s := r.UTF("Java string")
		w.newHandle(s)
		w.Strings = append(w.Strings, s)
		return s
	case tcLongString:
		at := r.Pos()
		n := r.I64("Java long string length")
		b := r.Take(r.Count(n, 1, "Java long string", at), "Java long string")
		s, ok := wire.DecodeModifiedUTF8(b)
		if !ok && r.Err == nil {
			r.FailAt(at, "Java long string: invalid modified UTF-8")
		}
		w.newHandle(s)
		w.Strings = append(w.Strings, s)
		return s
	case tcClassDesc, tcProxyClassDesc:
		r.Off--
		return w.classDesc(depth + 1)
	case tcClass:
		cd := w.classDesc(depth + 1)
		c := &Class{}
		if cd != nil {
			c.Name = cd.name
		}
		w.newHandle(c)
		return c
	case tcEnum:
		cd := w.classDesc(depth + 1)
		e := &Enum{}
		if cd != nil {
			e.Class = cd.name
		}
		w.newHandle(e)
		cat := r.Pos()
		name := w.object(depth + 1)
		s, ok := name.(string)
		if r.Err == nil && !ok {
			r.FailAt(cat, "Java enum constant name is not a string")
		}
		e.Constant = s
		return e
	case tcArray:
		cd := w.classDesc(depth + 1)
		if cd == nil {
			if r.Err == nil {
				r.FailAt(at, "Java array without class")
			}
			return nil
		}
		a := &Array{Class: cd.name}
		w.newHandle(a)
		elem := byte('L')
		if len(cd.name) >= 2 && cd.name[0] == '[' {
			elem = cd.name[1]
		}
		size := primSize(elem)
		n := r.Count32(size, "Java array length")
		a.Elements = make([]any, 0, n)
		for i := 0; i < n && r.Err == nil; i++ {
			a.Elements = append(a.Elements, w.value(elem, depth+1))
		}
		return a
	case tcObject:
		cd := w.classDesc(depth + 1)
		if cd == nil {
			if r.Err == nil {
				r.FailAt(at, "Java object without class")
			}
			return nil
		}
		o := &Object{Class: cd.name}
		w.newHandle(o)
		w.classData(o, cd, depth+1)
		return o
	case tcException:
		r.FailAt(at, "Java stream holds an exception written during serialization")
		return nil
	default:
		r.FailAt(at, "unknown Java type code 0x%02X", tc)
		return nil
	}
}

func primSize(t byte) int {
	switch t {
	case 'B', 'Z':
		return 1
	case 'C', 'S':
		return 2
	case 'I', 'F':
		return 4
	case 'J', 'D':
		return 8
	}
	return 1
}

// classDesc reads a class descriptor, null, or a reference to one.
func (w *javaWalker) classDesc(depth int) *javaClassDesc {
	r := w.r
	if depth > maxJavaDepth {
		r.Fail("Java class descriptors nested deeper than %d", maxJavaDepth)
		return nil
	}
	at := r.Pos()
	tc := r.U8("Java class descriptor")
	if r.Err != nil {
		return nil
	}
	switch tc {
	case TcNull:
		return nil
	case tcReference:
		r.Off--
		v := w.object(depth)
		cd, ok := v.(*javaClassDesc)
		if r.Err == nil && !ok {
			r.FailAt(at, "Java reference is not a class descriptor")
		}
		return cd
	case tcClassDesc:
		cd := &javaClassDesc{name: r.UTF("Java class name")}
		r.I64("Java serialVersionUID")
		w.newHandle(cd)
		w.Classes = append(w.Classes, cd.name)
		cd.flags = r.U8("Java class flags")
		n := r.Count(int64(r.U16("Java field count")), 3, "Java field count", r.Pos()-2)
		for i := 0; i < n && r.Err == nil; i++ {
			fat := r.Pos()
			f := javaFieldDesc{typ: r.U8("Java field type"), name: r.UTF("Java field name")}
			switch f.typ {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case 'L', '[':
				s, ok := w.object(depth + 1).(string)
				if r.Err == nil && !ok {
					r.FailAt(fat, "Java field %q: type name is not a string", f.name)
				}
				f.className = s
			default:
				if r.Err == nil {
					r.FailAt(fat, "Java field %q: unknown type code %q", f.name, f.typ)
				}
			}
			cd.fields = append(cd.fields, f)
		}
		w.annotation(depth + 1)
		cd.super = w.classDesc(depth + 1)
		return cd
	case tcProxyClassDesc:
		cd := &javaClassDesc{name: "$Proxy", flags: ScSerializable}
		w.newHandle(cd)
		n := r.Count32(2, "Java proxy interface count")
		for i := 0; i < n && r.Err == nil; i++ {
			w.Classes = append(w.Classes, r.UTF("Java proxy interface"))
		}
		w.annotation(depth + 1)
		cd.super = w.classDesc(depth + 1)
		return cd
	default:
		r.FailAt(at, "Java type code 0x%02X where a class descriptor belongs", tc)
		return nil
	}
}

// annotation reads contents up to and including TC_ENDBLOCKDATA.
func (w *javaWalker) annotation(depth int) []any {
	r := w.r
	var out []any
	for r.Err == nil {
		if r.Remaining() > 0 && r.Buf[r.Off] == tcEndBlockData {
			r.Off++
			return out
		}
		out = append(out, w.content(depth+1))
	}
	return out
}

func (w *javaWalker) classData(o *Object, cd *javaClassDesc, depth int) {
	r := w.r
	var chain []*javaClassDesc
	for c := cd; c != nil && r.Err == nil; c = c.super {
		if len(chain) > maxJavaDepth {
			r.Fail("Java class hierarchy deeper than %d", maxJavaDepth)
			return
		}
		chain = append(chain, c)
	}
	for i := len(chain) - 1; i >= 0 && r.Err == nil; i-- {
		c := chain[i]
		switch {
		case c.flags&scExternalizable != 0:
			if c.flags&scBlockData == 0 {
				r.Fail("Java class %s is externalizable without block data; its bytes cannot be walked", c.name)
				return
			}
			o.Annotations = append(o.Annotations, w.annotation(depth)...)
		case c.flags&ScSerializable != 0:
			for _, f := range c.fields {
				o.Fields = append(o.Fields, Field{Class: c.name, Name: f.name, Value: w.value(f.typ, depth)})
			}
			if c.flags&scWriteMethod != 0 {
				o.Annotations = append(o.Annotations, w.annotation(depth)...)
			}
		}
	}
}

func (w *javaWalker) value(t byte, depth int) any {
	r := w.r
	switch t {
	case 'B':
		return int8(r.U8("Java byte"))
	case 'Z':
		return r.U8("Java boolean") != 0
	case 'C':
		return r.U16("Java char")
	case 'S':
		return r.I16("Java short")
	case 'I':
		return r.I32("Java int")
	case 'F':
		return wire.Float32frombits(uint32(r.I32("Java float")))
	case 'J':
		return r.I64("Java long")
	case 'D':
		return r.F64("Java double")
	}
	return w.object(depth + 1)
}
