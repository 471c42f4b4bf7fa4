package flink

import (
	"fmt"
	"strings"
)

// This file walks Java Object Serialization streams (the grammar of the Java
// Object Serialization Specification, chapter 6) far enough to account for
// every byte and to recover class names, field values, strings and enum
// constants. It instantiates nothing.

const (
	tcNull           = 0x70
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
	scSerializable   = 0x02
	scExternalizable = 0x04

	javaBaseHandle = 0x7E0000
	maxJavaDepth   = 64
)

// JavaObject is a walked Java object: its class and its serialized fields,
// from the top superclass down.
type JavaObject struct {
	Class  string      `json:"class"`
	Fields []JavaField `json:"fields"`
	// Annotations holds what writeObject/writeExternal wrote beyond the
	// default fields: []byte block data and objects.
	Annotations []any `json:"-"`
}

// JavaField is one serialized field value: nil, bool, int8, uint16 (char),
// int16, int32, int64, float32, float64, string, *JavaObject, *JavaEnum,
// *JavaArray or *JavaClass.
type JavaField struct {
	Class string `json:"class"` // declaring class
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Field returns the value of the first field called name, or nil.
func (o *JavaObject) Field(name string) any {
	for _, f := range o.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// JavaEnum is a serialized enum constant.
type JavaEnum struct {
	Class    string `json:"class"`
	Constant string `json:"constant"`
}

// JavaArray is a serialized array.
type JavaArray struct {
	Class    string `json:"class"`
	Elements []any  `json:"elements"`
}

// JavaClass is a serialized Class object.
type JavaClass struct {
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
	r       *reader
	handles []any
	// Classes lists class names in the order their descriptors appear;
	// Strings lists string objects and enum constants in order.
	Classes []string
	Strings []string
}

// ParseJavaObject walks one Java-serialized object (stream header AC ED 00 05,
// then one object) at the start of data. It returns the object, the number of
// bytes it took, and the class names and strings it met in order. file and
// base name the position of data in errors.
func ParseJavaObject(data []byte, file string, base int64) (obj any, used int, classes, strs []string, err error) {
	w := &javaWalker{r: newReader(data, file, base)}
	v := w.stream()
	if w.r.err != nil {
		return nil, 0, nil, nil, w.r.err
	}
	return v, w.r.off, w.Classes, w.Strings, nil
}

func (w *javaWalker) stream() any {
	r := w.r
	at := r.pos()
	if magic := r.u16("Java stream magic"); r.err == nil && magic != 0xACED {
		r.failAt(at, "Java serialization magic is 0x%04X, want 0xACED", magic)
	}
	at = r.pos()
	if v := r.u16("Java stream version"); r.err == nil && v != 5 {
		r.failAt(at, "Java serialization version %d, want 5", v)
	}
	for r.err == nil {
		at = r.pos()
		if r.remaining() > 0 && r.buf[r.off] == tcReset {
			r.off++
			w.handles = w.handles[:0]
			continue
		}
		v := w.content(0)
		if _, ok := v.([]byte); ok && r.err == nil {
			r.failAt(at, "Java stream starts with block data, want an object")
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
	if r.remaining() > 0 {
		switch r.buf[r.off] {
		case tcBlockData:
			r.off++
			n := int(r.u8("Java block data length"))
			return r.take(n, "Java block data")
		case tcBlockDataLong:
			r.off++
			return r.take(r.count32(1, "Java block data length"), "Java block data")
		}
	}
	return w.object(depth)
}

func (w *javaWalker) object(depth int) any {
	r := w.r
	if depth > maxJavaDepth {
		r.fail("Java objects nested deeper than %d", maxJavaDepth)
		return nil
	}
	at := r.pos()
	tc := r.u8("Java type code")
	if r.err != nil {
		return nil
	}
	switch tc {
	case tcNull:
		return nil
	case tcReference:
		h := r.i32("Java handle")
		idx := int64(h) - javaBaseHandle
		if r.err == nil && (idx < 0 || idx >= int64(len(w.handles))) {
			r.failAt(at, "Java back reference 0x%X to no handle", h)
			return nil
		}
		if r.err != nil {
			return nil
		}
		return w.handles[idx]
	case tcString:
		s := r.utf("Java string")
		w.newHandle(s)
		w.Strings = append(w.Strings, s)
		return s
	case tcLongString:
		at := r.pos()
		n := r.i64("Java long string length")
		b := r.take(r.count(n, 1, "Java long string", at), "Java long string")
		s, ok := decodeModifiedUTF8(b)
		if !ok && r.err == nil {
			r.failAt(at, "Java long string: invalid modified UTF-8")
		}
		w.newHandle(s)
		w.Strings = append(w.Strings, s)
		return s
	case tcClassDesc, tcProxyClassDesc:
		r.off--
		return w.classDesc(depth + 1)
	case tcClass:
		cd := w.classDesc(depth + 1)
		c := &JavaClass{}
		if cd != nil {
			c.Name = cd.name
		}
		w.newHandle(c)
		return c
	case tcEnum:
		cd := w.classDesc(depth + 1)
		e := &JavaEnum{}
		if cd != nil {
			e.Class = cd.name
		}
		w.newHandle(e)
		cat := r.pos()
		name := w.object(depth + 1)
		s, ok := name.(string)
		if r.err == nil && !ok {
			r.failAt(cat, "Java enum constant name is not a string")
		}
		e.Constant = s
		return e
	case tcArray:
		cd := w.classDesc(depth + 1)
		if cd == nil {
			if r.err == nil {
				r.failAt(at, "Java array without class")
			}
			return nil
		}
		a := &JavaArray{Class: cd.name}
		w.newHandle(a)
		elem := byte('L')
		if len(cd.name) >= 2 && cd.name[0] == '[' {
			elem = cd.name[1]
		}
		size := primSize(elem)
		n := r.count32(size, "Java array length")
		a.Elements = make([]any, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			a.Elements = append(a.Elements, w.value(elem, depth+1))
		}
		return a
	case tcObject:
		cd := w.classDesc(depth + 1)
		if cd == nil {
			if r.err == nil {
				r.failAt(at, "Java object without class")
			}
			return nil
		}
		o := &JavaObject{Class: cd.name}
		w.newHandle(o)
		w.classData(o, cd, depth+1)
		return o
	case tcException:
		r.failAt(at, "Java stream holds an exception written during serialization")
		return nil
	default:
		r.failAt(at, "unknown Java type code 0x%02X", tc)
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
		r.fail("Java class descriptors nested deeper than %d", maxJavaDepth)
		return nil
	}
	at := r.pos()
	tc := r.u8("Java class descriptor")
	if r.err != nil {
		return nil
	}
	switch tc {
	case tcNull:
		return nil
	case tcReference:
		r.off--
		v := w.object(depth)
		cd, ok := v.(*javaClassDesc)
		if r.err == nil && !ok {
			r.failAt(at, "Java reference is not a class descriptor")
		}
		return cd
	case tcClassDesc:
		cd := &javaClassDesc{name: r.utf("Java class name")}
		r.i64("Java serialVersionUID")
		w.newHandle(cd)
		w.Classes = append(w.Classes, cd.name)
		cd.flags = r.u8("Java class flags")
		n := r.count(int64(r.u16("Java field count")), 3, "Java field count", r.pos()-2)
		for i := 0; i < n && r.err == nil; i++ {
			fat := r.pos()
			f := javaFieldDesc{typ: r.u8("Java field type"), name: r.utf("Java field name")}
			switch f.typ {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case 'L', '[':
				s, ok := w.object(depth + 1).(string)
				if r.err == nil && !ok {
					r.failAt(fat, "Java field %q: type name is not a string", f.name)
				}
				f.className = s
			default:
				if r.err == nil {
					r.failAt(fat, "Java field %q: unknown type code %q", f.name, f.typ)
				}
			}
			cd.fields = append(cd.fields, f)
		}
		w.annotation(depth + 1)
		cd.super = w.classDesc(depth + 1)
		return cd
	case tcProxyClassDesc:
		cd := &javaClassDesc{name: "$Proxy", flags: scSerializable}
		w.newHandle(cd)
		n := r.count32(2, "Java proxy interface count")
		for i := 0; i < n && r.err == nil; i++ {
			w.Classes = append(w.Classes, r.utf("Java proxy interface"))
		}
		w.annotation(depth + 1)
		cd.super = w.classDesc(depth + 1)
		return cd
	default:
		r.failAt(at, "Java type code 0x%02X where a class descriptor belongs", tc)
		return nil
	}
}

// annotation reads contents up to and including TC_ENDBLOCKDATA.
func (w *javaWalker) annotation(depth int) []any {
	r := w.r
	var out []any
	for r.err == nil {
		if r.remaining() > 0 && r.buf[r.off] == tcEndBlockData {
			r.off++
			return out
		}
		out = append(out, w.content(depth+1))
	}
	return out
}

func (w *javaWalker) classData(o *JavaObject, cd *javaClassDesc, depth int) {
	r := w.r
	var chain []*javaClassDesc
	for c := cd; c != nil && r.err == nil; c = c.super {
		if len(chain) > maxJavaDepth {
			r.fail("Java class hierarchy deeper than %d", maxJavaDepth)
			return
		}
		chain = append(chain, c)
	}
	for i := len(chain) - 1; i >= 0 && r.err == nil; i-- {
		c := chain[i]
		switch {
		case c.flags&scExternalizable != 0:
			if c.flags&scBlockData == 0 {
				r.fail("Java class %s is externalizable without block data; its bytes cannot be walked", c.name)
				return
			}
			o.Annotations = append(o.Annotations, w.annotation(depth)...)
		case c.flags&scSerializable != 0:
			for _, f := range c.fields {
				o.Fields = append(o.Fields, JavaField{Class: c.name, Name: f.name, Value: w.value(f.typ, depth)})
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
		return int8(r.u8("Java byte"))
	case 'Z':
		return r.u8("Java boolean") != 0
	case 'C':
		return r.u16("Java char")
	case 'S':
		return r.i16("Java short")
	case 'I':
		return r.i32("Java int")
	case 'F':
		return float32frombits(uint32(r.i32("Java float")))
	case 'J':
		return r.i64("Java long")
	case 'D':
		return r.f64("Java double")
	}
	return w.object(depth + 1)
}

// CheckpointProperties is what the Java-serialized CheckpointProperties at the
// end of a version 4+ `_metadata` says.
type CheckpointProperties struct {
	// Savepoint is true for savepoints, false for checkpoints.
	Savepoint bool `json:"savepoint"`
	// TypeName is the snapshot type's name ("Checkpoint", "Savepoint",
	// "Terminate Savepoint", ...) or the enum constant of older Flink.
	TypeName string `json:"typeName"`
	// Format is the savepoint format, "CANONICAL" or "NATIVE"; "" for
	// checkpoints.
	Format string `json:"format,omitempty"`
	// SharingFilesStrategy (checkpoints) and PostCheckpointAction
	// (savepoints) are the enum constants stored, when present.
	SharingFilesStrategy string `json:"sharingFilesStrategy,omitempty"`
	PostCheckpointAction string `json:"postCheckpointAction,omitempty"`
	// Flags holds the boolean fields (forced, discardSubsumed, unclaimed...).
	Flags map[string]bool `json:"flags"`
	// Classes and Strings list the class names and strings/enum constants of
	// the stream in order.
	Classes []string `json:"classes"`
	Strings []string `json:"strings"`
}

func checkpointPropertiesFrom(v any, classes, strs []string) *CheckpointProperties {
	o, ok := v.(*JavaObject)
	if !ok || !strings.HasSuffix(o.Class, ".CheckpointProperties") {
		return nil
	}
	p := &CheckpointProperties{Flags: map[string]bool{}, Classes: classes, Strings: strs}
	for _, f := range o.Fields {
		if b, ok := f.Value.(bool); ok {
			p.Flags[f.Name] = b
		}
	}
	switch t := o.Field("checkpointType").(type) {
	case *JavaObject:
		p.Savepoint = strings.HasSuffix(t.Class, "SavepointType")
		p.TypeName, _ = t.Field("name").(string)
		if e, ok := t.Field("formatType").(*JavaEnum); ok {
			p.Format = e.Constant
		}
		if e, ok := t.Field("sharingFilesStrategy").(*JavaEnum); ok {
			p.SharingFilesStrategy = e.Constant
		}
		if e, ok := t.Field("postCheckpointAction").(*JavaEnum); ok {
			p.PostCheckpointAction = e.Constant
		}
	case *JavaEnum:
		// Older Flink stored an enum (CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT...).
		p.TypeName = t.Constant
		p.Savepoint = strings.Contains(t.Constant, "SAVEPOINT")
	default:
		return nil
	}
	return p
}

func (p *CheckpointProperties) String() string {
	if p.Savepoint {
		return fmt.Sprintf("savepoint (%s)", p.Format)
	}
	return "checkpoint"
}
