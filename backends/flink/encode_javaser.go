package flink

import (
	"encoding/binary"
	"fmt"
)

// A Java Object Serialization writer (the grammar of the Java Object
// Serialization Specification, chapter 6) for exactly what `_metadata`
// needs: CheckpointProperties, whose fields are booleans and one object
// made of a string and enum constants. It assigns handles as Java's
// ObjectOutputStream does, so that a class description or string written
// twice is a back reference, and produces the bytes Flink writes.

type javaClass struct {
	name   string
	suid   uint64
	flags  byte
	fields []javaOutField
	super  *javaClass
}

type javaOutField struct {
	typ  byte // 'Z' boolean, 'L' object
	name string
	// sig is the field type's signature ("Ljava/lang/String;") for 'L'.
	sig string
}

type javaEnumValue struct {
	class    *javaClass
	constant string
}

type javaObjectValue struct {
	class  *javaClass
	values []any // per field: bool, string, *javaEnumValue, *javaObjectValue
}

type javaWriter struct {
	b       []byte
	handles map[any]int32
	next    int32
	err     error
}

func newJavaWriter() *javaWriter {
	w := &javaWriter{handles: map[any]int32{}, next: javaBaseHandle}
	w.b = append(w.b, 0xAC, 0xED, 0x00, 0x05)
	return w
}

func (w *javaWriter) assign(v any) {
	w.handles[v] = w.next
	w.next++
}

func (w *javaWriter) ref(v any) bool {
	h, ok := w.handles[v]
	if ok {
		w.b = append(w.b, tcReference)
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(h))
	}
	return ok
}

func (w *javaWriter) utf(s string) {
	enc := appendModifiedUTF8(nil, s)
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(enc)))
	w.b = append(w.b, enc...)
}

// string writes a String object (TC_STRING, or a back reference).
func (w *javaWriter) string(s string) {
	key := "string:" + s
	if w.ref(key) {
		return
	}
	w.b = append(w.b, tcString)
	w.assign(key)
	w.utf(s)
}

func (w *javaWriter) classDesc(c *javaClass) {
	if c == nil {
		w.b = append(w.b, tcNull)
		return
	}
	if w.ref(c) {
		return
	}
	w.b = append(w.b, tcClassDesc)
	w.assign(c)
	w.utf(c.name)
	w.b = binary.BigEndian.AppendUint64(w.b, c.suid)
	w.b = append(w.b, c.flags)
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(c.fields)))
	for _, f := range c.fields {
		w.b = append(w.b, f.typ)
		w.utf(f.name)
		if f.typ == 'L' || f.typ == '[' {
			w.string(f.sig)
		}
	}
	w.b = append(w.b, tcEndBlockData)
	w.classDesc(c.super)
}

func (w *javaWriter) enum(e *javaEnumValue) {
	if w.ref(e) {
		return
	}
	w.b = append(w.b, tcEnum)
	w.classDesc(e.class)
	w.assign(e)
	w.string(e.constant)
}

func (w *javaWriter) object(o *javaObjectValue) {
	if w.ref(o) {
		return
	}
	w.b = append(w.b, tcObject)
	w.classDesc(o.class)
	w.assign(o)
	if len(o.values) != len(o.class.fields) {
		w.err = fmt.Errorf("java object %s: %d values for %d fields", o.class.name, len(o.values), len(o.class.fields))
		return
	}
	// Primitive field values first, in field order, then the objects.
	for i, f := range o.class.fields {
		if f.typ == 'Z' {
			if o.values[i].(bool) {
				w.b = append(w.b, 1)
			} else {
				w.b = append(w.b, 0)
			}
		}
	}
	for i, f := range o.class.fields {
		if f.typ != 'L' {
			continue
		}
		switch v := o.values[i].(type) {
		case nil:
			w.b = append(w.b, tcNull)
		case string:
			w.string(v)
		case *javaEnumValue:
			w.enum(v)
		case *javaObjectValue:
			w.object(v)
		default:
			w.err = fmt.Errorf("java object %s: field %s of type %T", o.class.name, f.name, v)
		}
	}
}

// scEnum flags the class description of an enum.
const scEnum = 0x10

// The classes of Flink's CheckpointProperties as it serializes them
// (names, serialVersionUIDs, flags and fields are what Flink 1.15 to 2.x
// write; checked against real savepoints in tests).
const pkgCP = "org.apache.flink.runtime.checkpoint."

var (
	javaEnumClass      = &javaClass{name: "java.lang.Enum", flags: scSerializable | scEnum}
	formatTypeClass    = &javaClass{name: "org.apache.flink.core.execution.SavepointFormatType", flags: scSerializable | scEnum, super: javaEnumClass}
	postActionClass    = &javaClass{name: pkgCP + "SavepointType$PostCheckpointAction", flags: scSerializable | scEnum, super: javaEnumClass}
	savepointTypeClass = &javaClass{name: pkgCP + "SavepointType", suid: 0xa087d308a45814b8, flags: scSerializable, fields: []javaOutField{
		{'L', "formatType", "Lorg/apache/flink/core/execution/SavepointFormatType;"},
		{'L', "name", "Ljava/lang/String;"},
		{'L', "postCheckpointAction", "L" + "org/apache/flink/runtime/checkpoint/SavepointType$PostCheckpointAction;"},
	}}
	checkpointPropertiesClass = &javaClass{name: pkgCP + "CheckpointProperties", suid: 2, flags: scSerializable, fields: []javaOutField{
		{'Z', "discardCancelled", ""}, {'Z', "discardFailed", ""}, {'Z', "discardFinished", ""},
		{'Z', "discardSubsumed", ""}, {'Z', "discardSuspended", ""}, {'Z', "forced", ""}, {'Z', "unclaimed", ""},
		{'L', "checkpointType", "Lorg/apache/flink/runtime/checkpoint/SnapshotType;"},
	}}
)

// savepointProperties is the Java-serialized CheckpointProperties of a
// canonical savepoint: a SavepointType named name ("Savepoint",
// "Suspend Savepoint", ...) with the given post-checkpoint action ("NONE",
// "SUSPEND", "TERMINATE"), format CANONICAL, every discard flag off.
func savepointProperties(name, action string, forced bool) ([]byte, error) {
	st := &javaObjectValue{class: savepointTypeClass, values: []any{
		&javaEnumValue{class: formatTypeClass, constant: "CANONICAL"},
		name,
		&javaEnumValue{class: postActionClass, constant: action},
	}}
	cp := &javaObjectValue{class: checkpointPropertiesClass, values: []any{false, false, false, false, false, forced, false, st}}
	w := newJavaWriter()
	w.object(cp)
	return w.b, w.err
}
