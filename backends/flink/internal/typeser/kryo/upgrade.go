package kryo

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// What carrying Kryo state from Flink 1.x (Kryo 2.24) to Flink 2.x (Kryo
// 5.6) takes: the KryoSerializerSnapshot as Flink 2.x writes it for the
// same registrations, and each value written again as Kryo 5 writes it.
// A value is carried only when every object in it is one whose Kryo 2 and
// Kryo 5 serializers stateutil implements: a class under Kryo's
// FieldSerializer (a user class, or a JDK class Kryo 2 has no serializer
// for, such as java.time's) is written from fields the savepoint does not
// describe, and a class registered with a serializer of its own writes
// whatever that serializer did.

// avroArray is the class Flink registers last in every
// KryoSerializerSnapshot (a Kryo registration of Avro's GenericData.Array).
const avroArray = "org.apache.avro.generic.GenericData$Array"

// avroArrayFrame1 and avroArrayFrame2 are that registration as Flink 1.x
// and Flink 2.x write it when flink-avro is on the job's class path: the
// class, the kind (2: a serializer instance) and the Java-serialized
// serializer (1.x: Serializers$SpecificInstanceCollectionSerializerForArrayList
// inside ExecutionConfig$SerializableSerializer; 2.x:
// AvroKryoSerializerUtils$AvroGenericDataArraySerializer inside
// SerializableSerializer). Taken from savepoints of the real-Flink
// harness (testdata/flink/{1.20.5,2.3.0}/types-hashmap-canonical), byte
// for byte the same in 1.18.1 to 1.20.5 and in 2.0.2 to 2.3.0.
var (
	avroArrayFrame1 = mustHex("00296f72672e6170616368652e6176726f2e67656e657269632e47656e657269634461746124417272617900000002aced0005737200426f72672e61" +
		"70616368652e666c696e6b2e6170692e636f6d6d6f6e2e457865637574696f6e436f6e6669672453657269616c697a61626c6553657269616c697a65" +
		"72410ebe4da2208fb50200014c000a73657269616c697a65727400264c636f6d2f65736f7465726963736f6674776172652f6b72796f2f5365726961" +
		"6c697a65723b78707372006d6f72672e6170616368652e666c696e6b2e6170692e6a6176612e747970657574696c732e72756e74696d652e6b72796f" +
		"2e53657269616c697a657273245370656369666963496e7374616e6365436f6c6c656374696f6e53657269616c697a6572466f7241727261794c6973" +
		"740000000000000001020000787200616f72672e6170616368652e666c696e6b2e6170692e6a6176612e747970657574696c732e72756e74696d652e" +
		"6b72796f2e53657269616c697a657273245370656369666963496e7374616e6365436f6c6c656374696f6e53657269616c697a657200000000000000" +
		"010200014c0004747970657400114c6a6176612f6c616e672f436c6173733b7870767200136a6176612e7574696c2e41727261794c6973747881d21d" +
		"99c7619d03000149000473697a657870")
	avroArrayFrame2 = mustHex("00296f72672e6170616368652e6176726f2e67656e657269632e47656e657269634461746124417272617900000002aced0005737200326f72672e61" +
		"70616368652e666c696e6b2e6170692e636f6d6d6f6e2e53657269616c697a61626c6553657269616c697a6572410ebe4da2208fb50200014c000a73" +
		"657269616c697a65727400264c636f6d2f65736f7465726963736f6674776172652f6b72796f2f53657269616c697a65723b78707372005a6f72672e" +
		"6170616368652e666c696e6b2e666f726d6174732e6176726f2e7574696c732e4176726f4b72796f53657269616c697a65725574696c73244176726f" +
		"47656e6572696344617461417272617953657269616c697a657200000000000000010200007870")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Snapshot5 is the KryoSerializerSnapshot Flink 2.x writes for the
// serializer whose Flink 1.x snapshot is s (its versioned bytes: class,
// version, body), and "" for why; or nil and why it cannot be carried:
// default serializers, whose Kryo 2 bytes and Kryo 5 counterparts
// stateutil does not know. A class registered with a serializer of its
// own keeps its registration (a job ported to Flink 2.x keeps the
// serializer's name); its values cannot be carried (the decoder does not
// read them), which the values say.
func Snapshot5(s *typeser.SerializerSnapshot) ([]byte, string) {
	return rewriteSnapshot(s.Versioned)
}

// rewriteSnapshot copies a KryoSerializerSnapshot's bytes with Avro's
// registration as Flink 2.x writes it; the default serializers must be
// none.
func rewriteSnapshot(b []byte) ([]byte, string) {
	r := wire.NewReader(b, "Kryo serializer snapshot", 0)
	r.UTF("class")
	r.I32("version")
	r.UTF("type class")
	out, err := typeser.CopyOptionalMap(r, slices.Clone(b[:r.Off]), "Kryo registrations", func(_ int, name string, frame []byte) ([]byte, error) {
		if name == avroArray && bytes.Equal(frame, avroArrayFrame1) {
			return avroArrayFrame2, nil
		}
		return frame, nil
	})
	if err != nil {
		return nil, fmt.Sprintf("its Kryo serializer snapshot does not read as Flink writes one: %v", err)
	}
	for _, what := range []string{"default serializers", "default serializer classes"} {
		from := r.Off
		r.I64(what + " header")
		if m := r.I32(what); r.Err == nil && m != 0 {
			return nil, fmt.Sprintf("the job sets Kryo %s, whose Kryo 2 bytes stateutil cannot carry to Kryo 5", what)
		}
		out = append(out, b[from:r.Off]...)
	}
	if r.Err == nil && r.Remaining() > 0 {
		r.Fail("%d bytes after the default serializers", r.Remaining())
	}
	if r.Err != nil {
		return nil, fmt.Sprintf("its Kryo serializer snapshot does not read as Flink writes one: %v", r.Err)
	}
	return out, ""
}

// Carried is v, a value decoded from Kryo 2 bytes, as Kryo 5's encoder
// takes it (the component class Kryo 2 writes of Arrays.asList's array
// is no part of Kryo 5's bytes), or why it cannot be carried: the class
// of the first object in it whose bytes stateutil kept without knowing
// them.
func Carried(v any) (any, string) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, why := Carried(e)
			if why != "" {
				return nil, why
			}
			out[i] = c
		}
		return out, ""
	case *kryoMap:
		m := *x
		m.Keys, m.Vals = make([]any, len(x.Keys)), make([]any, len(x.Vals))
		for i := range x.Keys {
			var why string
			if m.Keys[i], why = Carried(x.Keys[i]); why != "" {
				return nil, why
			}
			if m.Vals[i], why = Carried(x.Vals[i]); why != "" {
				return nil, why
			}
		}
		return &m, ""
	case map[string]any:
		if c, kept := x["@bytes"]; kept && c != nil {
			return nil, fmt.Sprintf("it holds a %s, which Kryo writes with a serializer stateutil does not implement (Kryo's FieldSerializer over the class's fields, or one registered for it): its Kryo 5 bytes cannot be written from its Kryo 2 bytes", x["@class"])
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "@component" {
				continue
			}
			c, why := Carried(e)
			if why != "" {
				return nil, why
			}
			out[k] = c
		}
		return out, ""
	}
	return v, ""
}

// ElementClass is the Java class of a decoded Kryo value ("" for null),
// and its value as Flink's own serializer of that class takes it: a boxed
// number or character without its tag.
func ElementClass(v any) (class string, plain any) {
	class = kryoClassOf(v, nil)
	switch x := v.(type) {
	case map[string]any:
		if _, tagged := x["@class"]; tagged {
			if _, wrapper := kryoPrimitives[class]; wrapper {
				return class, x["@value"]
			}
		}
	}
	return class, v
}

// Elements are the elements of a decoded Kryo collection (any class whose
// serializer is Kryo's collection serializer), with ok false for any
// other value.
func Elements(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case map[string]any:
		c, _ := x["@class"].(string)
		ser, known := kryoSerializerOf(c)
		if vs, isList := x["@value"].([]any); known && isList && (ser == kserCollection || ser == kserEmpty || ser == kserSingleton) {
			return vs, true
		}
	}
	return nil, false
}

// Entries are the keys and values of a decoded Kryo map, in order, with
// ok false for any other value.
func Entries(v any) (keys, vals []any, ok bool) {
	switch x := v.(type) {
	case *kryoMap:
		if x.Comparator != "" {
			return nil, nil, false
		}
		return x.Keys, x.Vals, true
	}
	return nil, nil, false
}
