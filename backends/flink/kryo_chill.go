package flink

import (
	"fmt"
	"strconv"
	"strings"
)

// Scala classes under Kryo in Flink 1.x: with flink-scala on the class
// path, Flink's KryoSerializer makes its Kryo through
// FlinkScalaKryoInstantiator, which registers chill-scala's serializers
// (AllScalaRegistrar, as of chill 0.7.4). Classes it registers get the ids
// from 10 in registration order; others it gives a default serializer by
// superclass, and those are written by name. Kryo 5 (Flink 2) has none of
// this: these classes are decoded in Kryo 2 values only.
//
// chill writes Some, Left and Right as their value (writeClassAndObject),
// TupleN as its N fields, a collection or map as a varint size and the
// elements (a map's are Tuple2s), Symbol as its name, and Unit (a
// singleton) as nothing; None, a field-less object, is nothing too.

// chillIDs are the Kryo ids of the chill registrations decoded.
var chillIDs = map[int]string{
	15: "scala.Some", 16: "scala.util.Left", 17: "scala.util.Right", 18: "scala.collection.immutable.Vector",
	19: "scala.collection.immutable.Set$Set1", 20: "scala.collection.immutable.Set$Set2",
	21: "scala.collection.immutable.Set$Set3", 22: "scala.collection.immutable.Set$Set4",
	23: "scala.collection.immutable.HashSet$HashTrieSet",
	24: "scala.collection.immutable.Map$Map1", 25: "scala.collection.immutable.Map$Map2",
	26: "scala.collection.immutable.Map$Map3", 27: "scala.collection.immutable.Map$Map4",
	28: "scala.collection.immutable.HashMap$HashTrieMap",
	32: "scala.collection.mutable.BitSet", 33: "scala.collection.mutable.HashMap", 34: "scala.collection.mutable.HashSet",
	70: "scala.Symbol", 72: "scala.runtime.BoxedUnit",
}

// chillTupleFirstID is the id of Tuple1; Tuple2 to Tuple22 follow.
const chillTupleFirstID = 36

// chillByName are the classes written by name that chill gives a
// serializer decoded here: subclasses of List, Buffer, ListBuffer and
// Queue (its TraversableSerializer), and None (Kryo's FieldSerializer of
// an object without fields).
var chillByName = map[string]int{
	"scala.collection.immutable.$colon$colon": kserCollection, "scala.collection.immutable.Nil$": kserCollection,
	"scala.collection.mutable.ListBuffer": kserCollection, "scala.collection.mutable.ArrayBuffer": kserCollection,
	"scala.collection.immutable.Queue": kserCollection, "scala.None$": kserEmpty,
}

// Serializers of chill's classes beyond those of the JDK's.
const (
	kserChillValue = iota + 100 // Some, Left, Right: the value
	kserChillTuple
	kserChillSymbol
)

// chillSerializerOf is the serializer of a chill class, and whether it is one.
func chillSerializerOf(class string) (int, bool) {
	if ser, ok := chillByName[class]; ok {
		return ser, true
	}
	switch class {
	case "scala.Some", "scala.util.Left", "scala.util.Right":
		return kserChillValue, true
	case "scala.Symbol":
		return kserChillSymbol, true
	case "scala.runtime.BoxedUnit":
		return kserEmpty, true
	}
	if _, ok := chillTupleArity(class); ok {
		return kserChillTuple, true
	}
	for _, c := range chillIDs {
		if c == class {
			return kserCollection, true
		}
	}
	return 0, false
}

// chillTupleArity is N of scala.TupleN.
func chillTupleArity(class string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(class, "scala.Tuple"))
	if !strings.HasPrefix(class, "scala.Tuple") || err != nil || n < 1 || n > 22 {
		return 0, false
	}
	return n, true
}

// chillClassOfID is the class chill registers with Kryo id id, and
// whether it is one decoded here.
func chillClassOfID(id int) (string, bool) {
	if c, ok := chillIDs[id]; ok {
		return c, true
	}
	if id >= chillTupleFirstID && id < chillTupleFirstID+22 {
		return "scala.Tuple" + strconv.Itoa(id-chillTupleFirstID+1), true
	}
	return "", false
}

// chillIDOf is the Kryo id of a class chill registers.
func chillIDOf(class string) (int, bool) {
	if n, ok := chillTupleArity(class); ok {
		return chillTupleFirstID + n - 1, true
	}
	for id, c := range chillIDs {
		if c == class {
			return id, true
		}
	}
	return 0, false
}

// chillObject reads an object of a chill serializer of its own.
func (k *kryoIn) chillObject(class string, ser int, depth int) any {
	switch ser {
	case kserChillValue:
		return kryoTagged(class, k.classAndObject(depth+1))
	case kserChillTuple:
		n, _ := chillTupleArity(class)
		fields := make([]any, 0, n)
		for i := 0; i < n && k.r.err == nil; i++ {
			fields = append(fields, k.classAndObject(depth+1))
		}
		return kryoTagged(class, fields)
	case kserChillSymbol:
		at := k.r.pos()
		s, ok := k.string("Kryo Symbol name", false)
		if !ok && k.r.err == nil {
			k.r.failAt(at, "Kryo Symbol without a name")
		}
		return kryoTagged(class, s)
	}
	return nil
}

// chillObject writes an object of a chill serializer of its own.
func (k *kryoOut) chillObject(class string, ser int, v any, depth int) error {
	switch ser {
	case kserChillValue:
		return k.classAndObject(v, depth+1)
	case kserChillTuple:
		n, _ := chillTupleArity(class)
		fields, ok := v.([]any)
		if !ok || len(fields) != n {
			return fmt.Errorf("want an array of %d fields for %s, not %v", n, class, v)
		}
		for _, f := range fields {
			if err := k.classAndObject(f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case kserChillSymbol:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a name for %s, not %v", class, v)
		}
		k.string(s, false)
		return nil
	}
	return fmt.Errorf("values of class %s cannot be written as Kryo", class)
}
