package kryo

import (
	"fmt"
	"math"
	"slices"
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
//
// Flink registers JDK classes from id 73 (FlinkChillPackageRegistrar), in
// Flink 1.x with chill-java's serializers, in Flink 2.x with Kryo 5's own
// (and one of Flink's), so these are decoded in both: java.sql's Date and
// Time are their milliseconds as a varlong (as java.util.Date), a URI its
// text, an InetSocketAddress its host name and port (a varint); a
// PriorityQueue is written as a TreeSet is (its comparator, the elements);
// Arrays.asList's list in Kryo 2 is its length, its array's component
// class and the elements, in Kryo 5 a collection. A Timestamp is, in Kryo
// 2, its milliseconds then its nanoseconds as a varint, in Kryo 5 its
// milliseconds without those of the nanoseconds; a UUID its two halves as
// zigzag varlongs in Kryo 2, fixed longs in Kryo 5. A BitSet is its words,
// a varint count and fixed longs (in Kryo 2 the whole array, with the
// zero words a BitSet may keep at its end, in Kryo 5 the words up to the
// last bit set); a Pattern its text, in Kryo 5 then its flags as a varint.
// A Locale is its language, country and variant in Kryo 5; chill writes it
// with Java serialization, which is not decoded, as SimpleDateFormat's is
// in both.

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

// flinkJDKIDs are the JDK classes Flink registers from id 73, in Flink 1.x
// and 2.x alike.
var flinkJDKIDs = map[int]string{
	73: "java.util.Arrays$ArrayList", 74: "java.util.BitSet", 75: "java.util.PriorityQueue", 76: "java.util.regex.Pattern",
	77: "java.sql.Date", 78: "java.sql.Time", 79: "java.sql.Timestamp", 80: "java.net.URI",
	81: "java.net.InetSocketAddress", 82: "java.util.UUID", 83: "java.util.Locale", 84: "java.text.SimpleDateFormat",
}

// chillTupleFirstID is the id of Tuple1; Tuple2 to Tuple22 follow.
const chillTupleFirstID = 36

// chillSpecializedTuples are Scala's specialized tuples, which chill
// registers right after Tuple22 in this order (ScalaTupleSerialization),
// with serializers that write their fields as Kryo 2's fixed-width
// big-endian primitives: J a long, I an int, D a double.
var chillSpecializedTuples = []string{"scala.Tuple1$mcJ$sp", "scala.Tuple1$mcI$sp", "scala.Tuple1$mcD$sp",
	"scala.Tuple2$mcJJ$sp", "scala.Tuple2$mcJI$sp", "scala.Tuple2$mcJD$sp", "scala.Tuple2$mcIJ$sp", "scala.Tuple2$mcII$sp",
	"scala.Tuple2$mcID$sp", "scala.Tuple2$mcDJ$sp", "scala.Tuple2$mcDI$sp", "scala.Tuple2$mcDD$sp"}

// chillSpecializedFirstID is the id of the first specialized tuple.
const chillSpecializedFirstID = chillTupleFirstID + 22

// chillSpecializedFields are the fields' primitive kinds of a specialized
// tuple ("JI" of Tuple2$mcJI$sp), and whether class is one.
func chillSpecializedFields(class string) (string, bool) {
	if !slices.Contains(chillSpecializedTuples, class) {
		return "", false
	}
	_, rest, _ := strings.Cut(class, "$mc")
	return strings.TrimSuffix(rest, "$sp"), true
}

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
	kserChillSpecialized // Tuple2$mcII$sp: fixed-width primitives
	kserChillSymbol
	kserTimestamp
	kserURI
	kserUUID
	kserArraysAsList // Kryo 2: the array's component class first
	kserBitSet
	kserPattern
	kserSocketAddress
	kserLocale
)

// flinkJDKSerializerOf is the serializer of a JDK class Flink registers,
// and whether it is one decoded in Kryo 5 (v5) or Kryo 2.
func flinkJDKSerializerOf(class string, v5 bool) (int, bool) {
	switch class {
	case "java.util.Arrays$ArrayList":
		if v5 {
			return kserCollection, true
		}
		return kserArraysAsList, true
	case "java.util.BitSet":
		return kserBitSet, true
	case "java.util.PriorityQueue":
		return kserSortedCollection, true
	case "java.util.regex.Pattern":
		return kserPattern, true
	case "java.sql.Date", "java.sql.Time":
		return kserDate, true
	case "java.sql.Timestamp":
		return kserTimestamp, true
	case "java.net.URI":
		return kserURI, true
	case "java.net.InetSocketAddress":
		return kserSocketAddress, true
	case "java.util.UUID":
		return kserUUID, true
	case "java.util.Locale":
		return kserLocale, v5
	}
	return 0, false
}

// flinkJDKIDOf is the Kryo id Flink registers a JDK class with.
func flinkJDKIDOf(class string) (int, bool) {
	for id, c := range flinkJDKIDs {
		if c == class {
			return id, true
		}
	}
	return 0, false
}

// kryoAttributes names the one attribute a class's JSON may carry next to
// its value, which its bytes need: the component class of Arrays.asList's
// array (Kryo 2), the words of a BitSet when it keeps more than its bits
// need, the flags of a Pattern (Kryo 5), the comparator of a sorted
// collection or map that has one (kryo.go's kryoFieldlessComparators).
var kryoAttributes = map[string]string{
	"java.util.Arrays$ArrayList": "@component", "java.util.BitSet": "@words", "java.util.regex.Pattern": "@flags",
	"java.util.TreeSet": "@comparator", "java.util.TreeMap": "@comparator", "java.util.PriorityQueue": "@comparator",
}

// kryoAttributed is the payload of a JSON value with its attribute.
type kryoAttributed struct {
	Value, Attr any
}

// kryoAttr splits a payload into its value and its attribute (nil if none).
func kryoAttr(v any) (value, attr any) {
	if a, ok := v.(kryoAttributed); ok {
		return a.Value, a.Attr
	}
	return v, nil
}

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
	if _, ok := chillSpecializedFields(class); ok {
		return kserChillSpecialized, true
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
	if i := id - chillSpecializedFirstID; i >= 0 && i < len(chillSpecializedTuples) {
		return chillSpecializedTuples[i], true
	}
	return "", false
}

// chillIDOf is the Kryo id of a class chill registers.
func chillIDOf(class string) (int, bool) {
	if n, ok := chillTupleArity(class); ok {
		return chillTupleFirstID + n - 1, true
	}
	if i := slices.Index(chillSpecializedTuples, class); i >= 0 {
		return chillSpecializedFirstID + i, true
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
		return builtTagged(k, class, k.classAndObject(depth+1))
	case kserChillTuple:
		n, _ := chillTupleArity(class)
		fields := k.elems(n)
		for i := 0; i < n && k.r.Err == nil; i++ {
			fields.add(k.classAndObjectOf(depth + 1))
		}
		return builtTagged(k, class, fields.vals)
	case kserChillSpecialized:
		return k.specializedTuple(class)
	case kserChillSymbol, kserURI:
		at := k.r.Pos()
		s, ok := k.string("Kryo "+class, false)
		if !ok && k.r.Err == nil {
			k.r.FailAt(at, "Kryo %s holds a null", class)
		}
		return builtTagged(k, class, s)
	case kserTimestamp:
		ms := int64(k.varlong("Kryo timestamp milliseconds", 9))
		at := k.r.Pos()
		ns := int64(k.varint("Kryo timestamp nanoseconds"))
		if k.r.Err == nil && ns > 999999999 {
			k.r.FailAt(at, "Kryo timestamp nanoseconds %d", ns)
		}
		if k.skip {
			return kryoWalked
		}
		if k.v5 {
			ms += ns / 1000000
		}
		return kryoTagged(class, []any{ms, ns})
	case kserUUID:
		var hi, lo int64
		if k.v5 {
			hi, lo = int64(k.fixed(8, "Kryo UUID high bits")), int64(k.fixed(8, "Kryo UUID low bits"))
		} else {
			hi, lo = zigzag(k.varlong("Kryo UUID high bits", 9)), zigzag(k.varlong("Kryo UUID low bits", 9))
		}
		if k.skip {
			return kryoWalked
		}
		x := fmt.Sprintf("%016x%016x", uint64(hi), uint64(lo))
		return kryoTagged(class, x[:8]+"-"+x[8:12]+"-"+x[12:16]+"-"+x[16:20]+"-"+x[20:])
	case kserArraysAsList:
		return k.arraysAsList(class, depth)
	case kserBitSet:
		return k.bitSet(class)
	case kserPattern:
		at := k.r.Pos()
		p, ok := k.string("Kryo pattern", false)
		if !ok && k.r.Err == nil {
			k.r.FailAt(at, "Kryo pattern holds a null")
		}
		var flags int64
		if k.v5 {
			flags = int64(k.varint("Kryo pattern flags"))
		}
		if k.skip {
			return kryoWalked
		}
		out := kryoTagged(class, p)
		if flags != 0 {
			out["@flags"] = flags
		}
		return out
	case kserSocketAddress:
		at := k.r.Pos()
		host, ok := k.string("Kryo socket address host", false)
		if !ok && k.r.Err == nil {
			k.r.FailAt(at, "Kryo socket address without its host")
		}
		port := int64(k.varint("Kryo socket address port"))
		if k.skip {
			return kryoWalked
		}
		return kryoTagged(class, []any{host, port})
	case kserLocale:
		parts := k.elems(3)
		for _, what := range []string{"Kryo locale language", "Kryo locale country", "Kryo locale variant"} {
			at := k.r.Pos()
			p, ok := k.string(what, false)
			if !ok && k.r.Err == nil {
				k.r.FailAt(at, "%s is null", what)
			}
			parts.add(p, "java.lang.String")
		}
		return builtTagged(k, class, parts.vals)
	}
	return nil
}

// specializedTuple reads a specialized tuple's primitive fields.
func (k *kryoIn) specializedTuple(class string) any {
	kinds, _ := chillSpecializedFields(class)
	fields := k.elems(len(kinds))
	for _, kind := range kinds {
		switch kind {
		case 'J':
			fields.add(built(k, int64(k.fixed(8, "Kryo tuple long"))), "long")
		case 'I':
			fields.add(built(k, int64(int32(k.fixed(4, "Kryo tuple int")))), "int")
		default:
			at := k.r.Pos()
			d := math.Float64frombits(k.fixed(8, "Kryo tuple double"))
			if d != d && math.Float64bits(d) != kryoNaN64 {
				k.r.FailAt(at, "Kryo tuple double: a NaN Java never writes")
			}
			if math.IsNaN(d) || math.IsInf(d, 0) {
				k.notDecoded(class) // no JSON number holds it
				return nil
			}
			fields.add(built(k, d), "double")
		}
	}
	return builtTagged(k, class, fields.vals)
}

// arraysAsList reads chill's Arrays.asList list: the length, the class of
// the array's components, the elements with their classes.
func (k *kryoIn) arraysAsList(class string, depth int) any {
	r := k.r
	at := r.Pos()
	n := k.varint("Kryo list length")
	component := k.class()
	if r.Err != nil {
		return nil
	}
	if component == "" {
		r.FailAt(at, "Kryo %s without its component class", class)
		return nil
	}
	cnt := k.count(uint64(n), 1, "Kryo list length", at)
	out := k.elems(cnt)
	for i := 0; i < cnt && r.Err == nil; i++ {
		out.add(k.classAndObjectOf(depth + 1))
	}
	if k.skip {
		return kryoWalked
	}
	m := kryoTagged(class, out.vals)
	m["@component"] = component
	return m
}

// bitSet reads a BitSet's words as the set bits' indexes; "@words" keeps
// how many words there are when more than the bits need.
func (k *kryoIn) bitSet(class string) any {
	r := k.r
	at := r.Pos()
	n := k.varint("Kryo bit set words")
	cnt := k.count(uint64(n), 8, "Kryo bit set words", at)
	bits := []any{}
	used := 0
	for i := 0; i < cnt && r.Err == nil; i++ {
		w := k.fixed(8, "Kryo bit set word")
		for b := 0; b < 64 && !k.skip; b++ {
			if w&(1<<b) != 0 {
				bits = append(bits, int64(64*i+b))
			}
		}
		if w != 0 {
			used = i + 1
		}
	}
	if r.Err != nil {
		return nil
	}
	if cnt > used && k.v5 {
		r.FailAt(at, "Kryo 5 bit set with zero words at its end, which Kryo never writes")
		return nil
	}
	if k.skip {
		return kryoWalked
	}
	out := kryoTagged(class, bits)
	if cnt > used {
		out["@words"] = int64(cnt)
	}
	return out
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
	case kserChillSpecialized:
		return k.specializedTuple(class, v)
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
		if k.v5 {
			ms -= ns / 1000000
		}
		k.varlong(uint64(ms))
		k.varint(uint64(ns))
		return nil
	case kserArraysAsList, kserBitSet, kserPattern, kserSocketAddress, kserLocale:
		return k.flinkJDKObject(class, ser, v, depth)
	case kserUUID:
		text, _ := v.(string)
		h := strings.ReplaceAll(text, "-", "")
		hi, errHi := strconv.ParseUint(h[:min(16, len(h))], 16, 64)
		lo, errLo := strconv.ParseUint(h[min(16, len(h)):], 16, 64)
		if len(h) != 32 || len(text) != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-' || errHi != nil || errLo != nil {
			return fmt.Errorf("want a UUID for %s, not %v", class, v)
		}
		if k.v5 {
			k.fixed(8, hi)
			k.fixed(8, lo)
			return nil
		}
		k.varlong(zigzag64(int64(hi)))
		k.varlong(zigzag64(int64(lo)))
		return nil
	}
	return fmt.Errorf("values of class %s cannot be written as Kryo", class)
}

// specializedTuple writes a specialized tuple's primitive fields.
func (k *kryoOut) specializedTuple(class string, v any) error {
	kinds, _ := chillSpecializedFields(class)
	fields, ok := v.([]any)
	if !ok || len(fields) != len(kinds) {
		return fmt.Errorf("want an array of %d fields for %s, not %v", len(kinds), class, v)
	}
	for i, kind := range kinds {
		if kind == 'D' {
			d, err := kryoFloat(fields[i])
			if err != nil {
				return fmt.Errorf("%s field %d: %w", class, i+1, err)
			}
			k.fixed(8, math.Float64bits(d))
			continue
		}
		n, ok := kryoInteger(fields[i])
		if !ok || kind == 'I' && n != int64(int32(n)) {
			return fmt.Errorf("%s field %d: want a %s, not %v", class, i+1, map[rune]string{'I': "32-bit integer", 'J': "64-bit integer"}[kind], fields[i])
		}
		if kind == 'I' {
			k.fixed(4, uint64(uint32(n)))
		} else {
			k.fixed(8, uint64(n))
		}
	}
	return nil
}

// flinkJDKObject writes an object of the serializers of the JDK classes
// Flink registers that have no twin among chill's Scala ones.
func (k *kryoOut) flinkJDKObject(class string, ser int, v any, depth int) error {
	v, attr := kryoAttr(v)
	switch ser {
	case kserArraysAsList:
		vs, ok := v.([]any)
		component, okC := attr.(string)
		if !ok || !okC || component == "" {
			return fmt.Errorf(`want {"@class": %q, "@component": class, "@value": [...]}, not %v`, class, v)
		}
		k.varint(uint64(len(vs)))
		k.class(component)
		for _, e := range vs {
			if err := k.classAndObject(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case kserBitSet:
		return k.bitSet(class, v, attr)
	case kserPattern:
		p, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string for %s, not %v", class, v)
		}
		k.string(p, false)
		flags, okF := kryoInteger(attr)
		if attr != nil && (!okF || !k.v5 || flags <= 0 || flags > math.MaxInt32) {
			return fmt.Errorf("%s: flags %v, which Kryo %s does not write", class, attr, map[bool]string{false: "2", true: "5"}[k.v5])
		}
		if k.v5 {
			k.varint(uint64(flags))
		}
		return nil
	case kserSocketAddress:
		parts, ok := v.([]any)
		if ok && len(parts) == 2 {
			host, okH := parts[0].(string)
			port, okP := kryoInteger(parts[1])
			if okH && okP && port >= 0 && port <= math.MaxInt32 {
				k.string(host, false)
				k.varint(uint64(port))
				return nil
			}
		}
		return fmt.Errorf("want [host, port] for %s, not %v", class, v)
	case kserLocale:
		parts, ok := v.([]any)
		if !ok || len(parts) != 3 {
			return fmt.Errorf("want [language, country, variant] for %s, not %v", class, v)
		}
		for _, p := range parts {
			s, ok := p.(string)
			if !ok {
				return fmt.Errorf("want [language, country, variant] for %s, not %v", class, v)
			}
			k.string(s, false)
		}
		return nil
	}
	return fmt.Errorf("values of class %s cannot be written as Kryo", class)
}

// bitSet writes a BitSet of the set bits' indexes in bits, in words words
// if given, else as few as they need.
func (k *kryoOut) bitSet(class string, v, words any) error {
	vs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want the indexes of the set bits for %s, not %v", class, v)
	}
	var w []uint64
	for _, e := range vs {
		i, ok := kryoInteger(e)
		if !ok || i < 0 || i >= 64<<20 {
			return fmt.Errorf("want the indexes of the set bits for %s, not %v", class, v)
		}
		for int64(len(w)) <= i/64 {
			w = append(w, 0)
		}
		w[i/64] |= 1 << (i % 64)
	}
	if words != nil {
		n, ok := kryoInteger(words)
		if !ok || k.v5 || n <= int64(len(w)) || n > 1<<20 {
			return fmt.Errorf("%s: %v words, not as Kryo %s writes its bits", class, words, map[bool]string{false: "2", true: "5"}[k.v5])
		}
		w = append(w, make([]uint64, n-int64(len(w)))...)
	}
	k.varint(uint64(len(w)))
	for _, x := range w {
		k.fixed(8, x)
	}
	return nil
}
