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
// Flink registers some JDK classes with chill-java's serializers from id
// 73: java.sql's Date and Time are their milliseconds as a varlong (as
// java.util.Date), a Timestamp its milliseconds then its nanoseconds as a
// varint, a URI its text, a UUID its two halves as zigzag varlongs.

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
	// Flink's own, from 73 (FlinkChillPackageRegistrar, chill-java's serializers).
	77: "java.sql.Date", 78: "java.sql.Time", 79: "java.sql.Timestamp", 80: "java.net.URI", 82: "java.util.UUID",
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

// Serializers of chill's classes beyond those of kryo.go.
const (
	kserChillValue = iota + 100 // Some, Left, Right: the value
	kserChillTuple
	kserChillSymbol
	kserTimestamp
	kserURI
	kserUUID
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
	case "java.sql.Date", "java.sql.Time":
		return kserDate, true
	case "java.sql.Timestamp":
		return kserTimestamp, true
	case "java.net.URI":
		return kserURI, true
	case "java.util.UUID":
		return kserUUID, true
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

// chillHoldsNull says a null payload of class is a value, not a null
// object: Some(null), Left(null), Right(null) in Kryo 2.
func chillHoldsNull(class string, v5 bool) bool {
	ser, ok := chillSerializerOf(class)
	return ok && ser == kserChillValue && !v5
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
	case kserChillSymbol, kserURI:
		at := k.r.pos()
		s, ok := k.string("Kryo "+class, false)
		if !ok && k.r.err == nil {
			k.r.failAt(at, "Kryo %s holds a null", class)
		}
		return kryoTagged(class, s)
	case kserTimestamp:
		ms := int64(k.varlong("Kryo timestamp milliseconds", 9))
		return kryoTagged(class, []any{ms, int64(k.varint("Kryo timestamp nanoseconds"))})
	case kserUUID:
		hi := zigzag(k.varlong("Kryo UUID high bits", 9))
		lo := zigzag(k.varlong("Kryo UUID low bits", 9))
		x := fmt.Sprintf("%016x%016x", uint64(hi), uint64(lo))
		return kryoTagged(class, x[:8]+"-"+x[8:12]+"-"+x[12:16]+"-"+x[16:20]+"-"+x[20:])
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
	case kserChillSymbol, kserURI:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string for %s, not %v", class, v)
		}
		k.string(s, false)
		return nil
	case kserTimestamp:
		parts, ok := v.([]any)
		if !ok || len(parts) != 2 {
			return fmt.Errorf("want [milliseconds, nanoseconds] for %s, not %v", class, v)
		}
		ms, okMS := kryoInteger(parts[0])
		ns, okNS := kryoInteger(parts[1])
		if !okMS || !okNS || ns < 0 || ns > 999999999 {
			return fmt.Errorf("want [milliseconds, nanoseconds] for %s, not %v", class, v)
		}
		k.varlong(uint64(ms))
		k.varint(uint64(ns))
		return nil
	case kserUUID:
		text, _ := v.(string)
		h := strings.ReplaceAll(text, "-", "")
		hi, errHi := strconv.ParseUint(h[:min(16, len(h))], 16, 64)
		lo, errLo := strconv.ParseUint(h[min(16, len(h)):], 16, 64)
		if len(h) != 32 || len(text) != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-' || errHi != nil || errLo != nil {
			return fmt.Errorf("want a UUID for %s, not %v", class, v)
		}
		k.varlong(zigzag64(int64(hi)))
		k.varlong(zigzag64(int64(lo)))
		return nil
	}
	return fmt.Errorf("values of class %s cannot be written as Kryo", class)
}
