package javaser

import (
	"encoding/binary"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// A Java Object Serialization writer (the grammar of the Java Object
// Serialization Specification, chapter 6) for exactly what `_metadata`
// needs: CheckpointProperties, whose fields are booleans and one object
// made of a string and enum constants. It assigns handles as Java's
// ObjectOutputStream does, so that a class description or string written
// twice is a back reference, and produces the bytes Flink writes.

type OutClass struct {
	Name   string
	Suid   uint64
	Flags  byte
	Fields []OutField
	Super  *OutClass
}

type OutField struct {
	Typ  byte // 'Z' boolean, 'L' object
	Name string
	// Sig is the field type's signature ("Ljava/lang/String;") for 'L'.
	Sig string
}

type OutEnum struct {
	Class    *OutClass
	Constant string
}

type OutObject struct {
	Class  *OutClass
	Values []any // per field: bool, string, *javaEnumValue, *javaObjectValue
}

type Writer struct {
	B       []byte
	handles map[any]int32
	next    int32
	Err     error
}

func NewWriter() *Writer {
	w := &Writer{handles: map[any]int32{}, next: javaBaseHandle}
	w.B = append(w.B, 0xAC, 0xED, 0x00, 0x05)
	return w
}

func (w *Writer) assign(v any) {
	w.handles[v] = w.next
	w.next++
}

func (w *Writer) ref(v any) bool {
	h, ok := w.handles[v]
	if ok {
		w.B = append(w.B, tcReference)
		w.B = binary.BigEndian.AppendUint32(w.B, uint32(h))
	}
	return ok
}

func (w *Writer) utf(s string) {
	enc := wire.AppendModifiedUTF8(nil, s)
	w.B = binary.BigEndian.AppendUint16(w.B, uint16(len(enc)))
	w.B = append(w.B, enc...)
}

// string writes a String object (TC_STRING, or a back reference).
func (w *Writer) string(s string) {
	key := "string:" + s
	if w.ref(key) {
		return
	}
	w.B = append(w.B, tcString)
	w.assign(key)
	w.utf(s)
}

func (w *Writer) classDesc(c *OutClass) {
	if c == nil {
		w.B = append(w.B, TcNull)
		return
	}
	if w.ref(c) {
		return
	}
	w.B = append(w.B, tcClassDesc)
	w.assign(c)
	w.utf(c.Name)
	w.B = binary.BigEndian.AppendUint64(w.B, c.Suid)
	w.B = append(w.B, c.Flags)
	w.B = binary.BigEndian.AppendUint16(w.B, uint16(len(c.Fields)))
	for _, f := range c.Fields {
		w.B = append(w.B, f.Typ)
		w.utf(f.Name)
		if f.Typ == 'L' || f.Typ == '[' {
			w.string(f.Sig)
		}
	}
	w.B = append(w.B, tcEndBlockData)
	w.classDesc(c.Super)
}

func (w *Writer) enum(e *OutEnum) {
	if w.ref(e) {
		return
	}
	w.B = append(w.B, tcEnum)
	w.classDesc(e.Class)
	w.assign(e)
	w.string(e.Constant)
}

func (w *Writer) Object(o *OutObject) {
	if w.ref(o) {
		return
	}
	w.B = append(w.B, tcObject)
	w.classDesc(o.Class)
	w.assign(o)
	if len(o.Values) != len(o.Class.Fields) {
		w.Err = fmt.Errorf("java object %s: %d values for %d fields", o.Class.Name, len(o.Values), len(o.Class.Fields))
		return
	}
	// Primitive field values first, in field order, then the objects.
	for i, f := range o.Class.Fields {
		if f.Typ == 'Z' {
			if o.Values[i].(bool) {
				w.B = append(w.B, 1)
			} else {
				w.B = append(w.B, 0)
			}
		}
	}
	for i, f := range o.Class.Fields {
		if f.Typ != 'L' {
			continue
		}
		switch v := o.Values[i].(type) {
		case nil:
			w.B = append(w.B, TcNull)
		case string:
			w.string(v)
		case *OutEnum:
			w.enum(v)
		case *OutObject:
			w.Object(v)
		default:
			w.Err = fmt.Errorf("java object %s: field %s of type %T", o.Class.Name, f.Name, v)
		}
	}
}

// ScEnum flags the class description of an enum.
const ScEnum = 0x10
