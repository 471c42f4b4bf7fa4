package kryo

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Kryo values as Flink's KryoSerializer writes them (FLINK-FORMATS.md §9):
// Kryo 2.24 in Flink 1.x, Kryo 5.6 in Flink 2.x, references on, each value
// its own object graph. Kryo's default serializers of the JDK classes are
// decoded, those of the JDK classes Flink registers, and in Kryo 2 chill's
// of Scala's classes (kryo_chill.go); any
// other class (a user class under FieldSerializer, a user enum, a class
// with a serializer of its own) is not decoded: where its bytes end is
// unknown, so they are kept only as the last thing of a value that ends
// where its bytes do (keepTail).
//
// The JSON: null, a String, a Long, a Boolean, an ArrayList, a
// HashMap with String keys, and a value of the very class the snapshot
// declares (a java.lang.Long key) are plain JSON; every other value is
// {"@class": class, "@value": value}, a map with keys that are not all
// Strings adds "@keys": "json" (each key is then its own JSON text), and a
// second reference to an object already read is {"@ref": id} (ids count
// the objects of the value that can be referenced, from 0).

// Family is flink-core's KryoSerializer, the generic types' fallback.
var Family = &typeser.Family{
	Name: "kryo",
	Kind: func(n string) string {
		if strings.Contains(n, "KryoSerializer") {
			return "Kryo"
		}
		return ""
	},
	Snapshots: map[string]typeser.SnapshotParser{"KryoSerializerSnapshot": parseKryoSnapshot},
	Exprs: map[string]typeser.ExprLeaf{
		"kryo":  {Class: "KryoSerializer"},
		"kryo5": {Class: "KryoSerializer", Kryo5: true},
	},
	Expr: func(s *typeser.SerializerSnapshot, _ string, _ func() string) (string, bool) {
		if s.Kryo5 {
			return "kryo5", true
		}
		return "kryo", true
	},
	Walk: func(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
		if decode {
			// At depth 0 the value is all of the reader's bytes.
			return decodeKryo(r, s, depth == 0), true
		}
		return nil, skipKryo(r, s)
	},
	Sized: func(*typeser.SerializerSnapshot, int) bool { return true },
	Notes: map[string]string{"Kryo": "the JDK's classes, Flink's and chill's decode; a user's class or enum by its declaration (--kryo-classes), a Protobuf message by its descriptor set (--proto-descriptors); a class with a Kryo serializer of its own by what its @WrittenBy declaration there says the serializer writes, else not decoded, shown as its bytes"},
	Encode: func(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
		b, err := encodeKryo(b, s, v, depth == 0)
		return b, true, err
	},
	Whole: kryoWhole, // kryo_schema_encode.go
	Hash: func(r *wire.Reader, s *typeser.SerializerSnapshot) (int32, bool) {
		d := *r
		v := decodeKryo(&d, s, false)
		if h, ok := kryoHash(v); ok && d.Err == nil {
			r.Off = d.Off
			return h, true
		}
		return 0, false
	},
}

// parseKryoSnapshot reads a KryoSerializerSnapshot: the type class, the
// registrations, then the default serializers.
func parseKryoSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	s.TypeClass = sr.R.UTF("Kryo type class")
	s.KryoRegistrations = kryoRegistrations(sr)
	for _, what := range []string{"Kryo default serializers", "Kryo default serializer classes"} {
		sr.OptionalMap(what, depth, false)
	}
}

// skipKryo walks a Kryo value by decoding it: the values of the classes
// the decoder reads (Kryo's serializers of the JDK classes) are delimited;
// a user class, a class with a serializer of its own, or bytes that do not
// decode are not (false, r unchanged).
func skipKryo(r *wire.Reader, s *typeser.SerializerSnapshot) bool {
	k := skipWalks.Get().(*kryoIn)
	defer skipWalks.Put(k)
	k.setUp(nil, s, false, true)
	k.own = *r
	k.r = &k.own
	readKryo(k)
	if k.own.Err != nil {
		return false
	}
	r.Off = k.own.Off
	return true
}

// skipWalks are readers for skip walks, used again: a heap checkpoint's
// walk reads every Kryo value, and a reader is too large to make for each.
var skipWalks = sync.Pool{New: func() any { return new(kryoIn) }}

// kryoFirstSnapshotID is the Kryo id of the snapshot's first registration:
// 0-9 are Kryo's own, 10-84 chill's and Flink's.
const kryoFirstSnapshotID = 85

// kryoNames are Kryo's default registrations by id.
var kryoNames = []string{"java.lang.Integer", "java.lang.String", "java.lang.Float", "java.lang.Boolean",
	"java.lang.Byte", "java.lang.Character", "java.lang.Short", "java.lang.Long", "java.lang.Double"}

// kryoPrimitives are the primitive classes of the wrappers, for Class values.
var kryoPrimitives = map[string]string{"java.lang.Integer": "int", "java.lang.Float": "float", "java.lang.Boolean": "boolean",
	"java.lang.Byte": "byte", "java.lang.Character": "char", "java.lang.Short": "short", "java.lang.Long": "long", "java.lang.Double": "double"}

// Serializers of the classes decoded, by class name.
const (
	kser = iota
	kserCollection
	kserSortedCollection // TreeSet: a comparator first
	kserMap
	kserSortedMap
	kserEmpty
	kserSingleton
	kserSingletonMap
	kserBigInteger
	kserBigDecimal
	kserDate
	kserClass
	kserEnum
	kserArray
)

var kryoSerializers = map[string]int{
	"java.util.ArrayList": kserCollection, "java.util.LinkedList": kserCollection, "java.util.HashSet": kserCollection,
	"java.util.LinkedHashSet": kserCollection, "java.util.ArrayDeque": kserCollection, "java.util.Vector": kserCollection,
	"java.util.Collections$UnmodifiableCollection": kserCollection, "java.util.Collections$UnmodifiableList": kserCollection,
	"java.util.Collections$UnmodifiableRandomAccessList": kserCollection, "java.util.Collections$UnmodifiableSet": kserCollection,
	"java.util.TreeSet": kserSortedCollection,
	"java.util.HashMap": kserMap, "java.util.LinkedHashMap": kserMap, "java.util.Hashtable": kserMap,
	"java.util.Collections$UnmodifiableMap": kserMap, "java.util.TreeMap": kserSortedMap,
	"java.util.Collections$EmptyList": kserEmpty, "java.util.Collections$EmptySet": kserEmpty, "java.util.Collections$EmptyMap": kserEmpty,
	"java.util.Collections$SingletonList": kserSingleton, "java.util.Collections$SingletonSet": kserSingleton,
	"java.util.Collections$SingletonMap": kserSingletonMap,
	"java.math.BigInteger":               kserBigInteger, "java.math.BigDecimal": kserBigDecimal, "java.util.Date": kserDate,
	"java.lang.Class": kserClass,
}

// kryoEnums are the JDK enums decoded, with their constants by ordinal (a
// user enum's constants are nowhere in the snapshot).
var kryoEnums = map[string][]string{
	"java.util.concurrent.TimeUnit": {"NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS"},
	"java.math.RoundingMode":        {"UP", "DOWN", "CEILING", "FLOOR", "HALF_UP", "HALF_DOWN", "HALF_EVEN", "UNNECESSARY"},
	"java.time.DayOfWeek":           {"MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"},
	kryoNaturalOrder:                {"INSTANCE"},
}

// kryoNaturalOrder is the class of Comparator.naturalOrder(), an enum of
// one constant (Kryo writes it with its EnumSerializer).
const kryoNaturalOrder = "java.util.Comparators$NaturalOrderComparator"

// kryoPrimitiveArrays are the arrays of primitives by class name, with the
// element's wrapper.
var kryoPrimitiveArrays = map[string]string{"[I": "java.lang.Integer", "[J": "java.lang.Long", "[S": "java.lang.Short",
	"[C": "java.lang.Character", "[B": "java.lang.Byte", "[Z": "java.lang.Boolean", "[F": "java.lang.Float", "[D": "java.lang.Double"}

// kryoSerializerOf is the serializer of a class, and whether it is decoded.
func kryoSerializerOf(class string) (int, bool) {
	if k, ok := kryoSerializers[class]; ok {
		return k, true
	}
	if _, ok := kryoEnums[class]; ok {
		return kserEnum, true
	}
	if _, ok := kryoPrimitiveArrays[class]; ok {
		return kserArray, true
	}
	if _, ok := kryoObjectArrayElem(class); ok {
		return kserArray, true
	}
	return 0, false
}

// kryoSerializerIn is the serializer of class in Kryo 5 (v5) or Kryo 2,
// and whether its values are decoded (kser for a wrapper or String).
func kryoSerializerIn(class string, v5 bool) (int, bool) {
	if ser, ok := kryoSerializerOf(class); ok {
		return ser, true
	}
	if ser, ok := flinkJDKSerializerOf(class, v5); ok {
		return ser, true
	}
	if _, wrapper := kryoPrimitives[class]; wrapper || class == "java.lang.String" {
		return kser, true
	}
	// After the wrappers, which most values hold: chill's names are many.
	if ser, ok := chillSerializerOf(class); ok && !v5 {
		return ser, true
	}
	return kser, false
}

// kryoObjectArrayElem is the element class of an array of objects decoded
// ("[Ljava.lang.String;"), "" for Object[] (elements carry their class).
func kryoObjectArrayElem(class string) (string, bool) {
	e, ok := strings.CutPrefix(class, "[L")
	if !ok || !strings.HasSuffix(e, ";") {
		return "", false
	}
	e = e[:len(e)-1]
	if e == "java.lang.Object" {
		return "", true
	}
	if _, wrapper := kryoPrimitives[e]; wrapper || e == "java.lang.String" {
		return e, true // final classes: no class per element
	}
	return "", false
}

// kryoNoRefs: Kryo writes no reference marker for the wrappers (nor, in
// Kryo 5, for enums).
func kryoNoRefs(class string, v5 bool) bool {
	if _, ok := kryoPrimitives[class]; ok {
		return true
	}
	_, enum := kryoEnums[class]
	return v5 && enum
}

// kryoIn reads one Kryo value.
type kryoIn struct {
	r     *wire.Reader
	v5    bool
	regs  []typeser.KryoRegistration
	names []string // class names by name id, as they appear
	refs  []string // the class of each object given a reference id
	// nameBuf and refBuf hold the first names and refs of a value.
	nameBuf [4]string
	refBuf  [8]string
	// own is a skip walk's copy of the reader, dropped but for where
	// it ends.
	own wire.Reader
	// serializer names the KryoSerializer in what is not decoded.
	serializer string
	// delimited: the value ends where the reader does.
	delimited bool
	// tail is the class of the object kept as the value's last bytes.
	tail string
	// schemas are the user's (kryo_schema.go); declared is the class the
	// serializer snapshot declares; inSchema counts the objects being
	// read by a schema.
	schemas  *snapshot.Schemas
	declared string
	inSchema int
	classes  *kryoClasses
	// skip: only where the value ends is wanted, not the value (a
	// skip walk).
	skip bool
}

// A skip walk builds no values: each object it reads is kryoWalked (a
// back-reference kryoWalkedRef), and what the checks need beyond whether
// an object is there (its class) comes from the bytes, not from a value.
type kryoWalk int

const (
	kryoWalked kryoWalk = iota
	kryoWalkedRef
)

// built is v as read: v, but in a skip walk.
func built[T any](k *kryoIn, v T) any {
	if k.skip {
		return kryoWalked
	}
	return v
}

// builtTagged is kryoTagged(class, v) as read: in a skip walk, kryoWalked.
func builtTagged[T any](k *kryoIn, class string, v T) any {
	if k.skip {
		return kryoWalked
	}
	return kryoTagged(class, v)
}

// walked is what a skip walk reads for an object, ok false after an error.
func (k *kryoIn) walked(ok bool) any {
	if !ok {
		return nil
	}
	return kryoWalked
}

// kryoIsRef reports whether v, as read, is a back-reference.
func kryoIsRef(v any) bool {
	if m, ok := v.(map[string]any); ok {
		_, ok = kryoRefID(m)
		return ok
	}
	return v == kryoWalkedRef
}

// decodeKryo decodes a value of a KryoSerializer; delimited says the value
// ends where r does.
func decodeKryo(r *wire.Reader, s *typeser.SerializerSnapshot, delimited bool) any {
	return readKryo(newKryoIn(r, s, delimited, false))
}

func newKryoIn(r *wire.Reader, s *typeser.SerializerSnapshot, delimited, skip bool) *kryoIn {
	k := new(kryoIn)
	k.setUp(r, s, delimited, skip)
	return k
}

// setUp makes k a reader of one value, as new.
func (k *kryoIn) setUp(r *wire.Reader, s *typeser.SerializerSnapshot, delimited, skip bool) {
	*k = kryoIn{r: r, v5: s.Kryo5, regs: s.KryoRegistrations, serializer: s.Name(), delimited: delimited,
		schemas: s.Schemas(), declared: s.TypeClass, skip: skip, classes: classesOf(s)}
	k.names, k.refs = k.nameBuf[:0], k.refBuf[:0]
}

// readKryo reads the value k is set up for.
func readKryo(k *kryoIn) any {
	r := k.r
	v, class := k.classAndObjectOf(0)
	if k.tail != "" && r.Err != nil {
		// More of the value was due after the object kept as the last
		// bytes: they were not all its own, and where it ends is unknown.
		r.Err = nil
		k.notDecoded(k.tail)
		return nil
	}
	if v, ok := k.declaredValue(v, class); ok { // kryo_schema.go
		return v
	}
	// A value of the class the snapshot declares needs no tag.
	switch x := v.(type) {
	case map[string]any:
		if c, _ := x["@class"].(string); c == k.declared && c != "" && len(x) == 2 && x["@value"] != nil {
			return x["@value"]
		}
	case *kryoMap:
		if x.Class == k.declared && !x.JSONKeys && x.Comparator == "" {
			x.Plain = true
		}
	}
	return v
}

// notDecoded stops at a value of class, which no decoder here walks.
func (k *kryoIn) notDecoded(class string) {
	if k.r.Err == nil {
		k.r.Err = &snapshot.NotDecodedError{Serializer: k.serializer, ValueClass: class}
	}
	k.r.Off = len(k.r.Buf)
}

// varint reads Kryo's variable-length int: 7 bits a byte, low bits first,
// at most 5 bytes; only as Kryo writes it (no redundant bytes), so that
// every value decoded re-encodes to its bytes.
func (k *kryoIn) varint(what string) uint32 {
	at := k.r.Pos()
	v := k.varlong(what, 5)
	if v > math.MaxUint32 {
		k.r.FailAt(at, "%s: variable-length int over 32 bits", what)
	}
	return uint32(v)
}

// varlong reads a variable-length long of at most max bytes; the ninth
// byte of a long holds 8 bits.
func (k *kryoIn) varlong(what string, max int) uint64 {
	r := k.r
	at := r.Pos()
	var v uint64
	for i := 0; i < max; i++ {
		b := r.U8(what)
		if r.Err != nil {
			return 0
		}
		if i == 8 {
			if b == 0 {
				r.FailAt(at, "%s: variable-length int with a redundant byte, as Kryo never writes it", what)
			}
			return v | uint64(b)<<56
		}
		v |= uint64(b&0x7F) << (7 * i)
		if b < 0x80 {
			if b == 0 && i > 0 {
				r.FailAt(at, "%s: variable-length int with a redundant byte, as Kryo never writes it", what)
			}
			return v
		}
	}
	r.FailAt(at, "%s: variable-length int longer than %d bytes", what, max)
	return 0
}

func zigzag(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }

// count reads a count of things that take at least minSize bytes each.
func (k *kryoIn) count(n uint64, minSize int, what string, at int64) int {
	if n > math.MaxInt32 {
		k.r.FailAt(at, "%s: count %d", what, n)
		return 0
	}
	return k.r.Count(int64(n), minSize, what, at)
}

// flagged reads Kryo 5's varIntFlag: the top bit of the first byte is a
// flag, the next says more bytes follow, six bits of the value.
func (k *kryoIn) flagged(what string) (uint32, bool) {
	r := k.r
	at := r.Pos()
	b := r.U8(what)
	if r.Err != nil {
		return 0, false
	}
	flag, v := b&0x80 != 0, uint64(b&0x3F)
	if b&0x40 != 0 {
		rest := k.varlong(what, 4)
		if rest == 0 && r.Err == nil {
			r.FailAt(at, "%s: variable-length int with a redundant byte, as Kryo never writes it", what)
		}
		v |= rest << 6
	}
	if v > math.MaxUint32 {
		r.FailAt(at, "%s: variable-length int over 32 bits", what)
	}
	return uint32(v), flag
}

// string reads a Kryo string; ok false for null. Kryo 5 writes class
// names as ASCII whatever their length (name true). A skip walk builds
// no string but a class name.
func (k *kryoIn) string(what string, name bool) (string, bool) {
	build := name || !k.skip
	r := k.r
	at := r.Pos()
	if r.Remaining() == 0 {
		r.Fail("truncated %s", what)
		return "", false
	}
	if r.Buf[r.Off]&0x80 == 0 {
		// ASCII: the last byte has its high bit set.
		end := r.Off
		for end < len(r.Buf) && r.Buf[end]&0x80 == 0 {
			end++
		}
		if end == len(r.Buf) {
			r.Fail("truncated %s: ASCII string without its last byte", what)
			return "", false
		}
		b := r.Buf[r.Off : end+1]
		r.Off = end + 1
		if n := len(b); n > kryoASCIIMax(k.v5) && !(name && k.v5) {
			r.FailAt(at, "%s: an ASCII string of %d bytes, which Kryo writes otherwise", what, n)
		}
		if !build {
			return "", true
		}
		if name {
			if c := k.classes.named(b); c != "" {
				return c, true
			}
		}
		return string(b[:len(b)-1]) + string(rune(b[len(b)-1]&0x7F)), true // one string made
	}
	n, _ := k.flagged(what + " length")
	if r.Err != nil || n == 0 {
		return "", false
	}
	units := k.count(uint64(n-1), 1, what, at)
	var u []uint16
	if build {
		u = make([]uint16, 0, units)
	}
	ascii := true
	// A surrogate not in a pair: no JSON string holds it.
	high, unpaired := false, false
	for i := 0; i < units && r.Err == nil; i++ {
		c := uint16(r.U8(what))
		switch c >> 4 {
		case 12, 13:
			c = (c&0x1F)<<6 | k.continuation(what)
			if c < 0x80 {
				r.FailAt(at, "%s: a character Kryo writes in one byte written in two", what)
			}
		case 14:
			c = (c&0x0F)<<12 | k.continuation(what)<<6 | k.continuation(what)
			if c < 0x800 {
				r.FailAt(at, "%s: a character Kryo writes shorter written in three bytes", what)
			}
		default:
			if c >= 0x80 {
				r.FailAt(at, "%s: byte 0x%02x starts no character", what, c)
			}
		}
		ascii = ascii && c < 0x80
		low := c >= 0xDC00 && c < 0xE000
		unpaired = unpaired || high != low
		high = c >= 0xD800 && c < 0xDC00
		if build {
			u = append(u, c)
		}
	}
	if ascii && (units > 1 && units <= kryoASCIIMax(k.v5) || name && k.v5) {
		r.FailAt(at, "%s: an ASCII string Kryo writes as ASCII", what)
	}
	if r.Err != nil {
		return "", false
	}
	if unpaired || high {
		k.notDecoded("java.lang.String")
		return "", false
	}
	if !build {
		return "", true
	}
	return string(utf16.Decode(u)), true
}

// continuation reads the 6 bits of a character's second or third byte,
// which Kryo writes as 10xxxxxx.
func (k *kryoIn) continuation(what string) uint16 {
	at := k.r.Pos()
	b := k.r.U8(what)
	if k.r.Err == nil && b&0xC0 != 0x80 {
		k.r.FailAt(at, "%s: byte 0x%02x inside a character", what, b)
	}
	return uint16(b & 0x3F)
}

// kryoASCIIMax is the longest string Kryo writes as ASCII.
func kryoASCIIMax(v5 bool) int {
	if v5 {
		return 32
	}
	return 63
}

// fixed reads n bytes of a fixed-width number: big-endian in Kryo 2,
// little-endian in Kryo 5.
func (k *kryoIn) fixed(n int, what string) uint64 {
	b := k.r.Take(n, what)
	if b == nil {
		return 0
	}
	var v uint64
	for i := range b {
		if k.v5 {
			v |= uint64(b[i]) << (8 * i)
		} else {
			v = v<<8 | uint64(b[i])
		}
	}
	return v
}

// class reads a class tag: "" for null.
func (k *kryoIn) class() string {
	r := k.r
	at := r.Pos()
	tag := k.varint("Kryo class")
	switch {
	case r.Err != nil || tag == 0:
		return ""
	case tag == 1:
		id := k.varint("Kryo class name id")
		switch {
		case r.Err != nil:
			return ""
		case int(id) < len(k.names):
			return k.names[id]
		case int(id) > len(k.names):
			r.FailAt(at, "Kryo class name id %d before id %d", id, len(k.names))
			return ""
		}
		name, ok := k.string("Kryo class name", true)
		if r.Err == nil && (!ok || name == "") {
			r.FailAt(at, "Kryo class name is empty")
		}
		if slices.Contains(kryoNames, name) || slices.ContainsFunc(k.regs, func(g typeser.KryoRegistration) bool { return g.Class == name }) {
			r.FailAt(at, "Kryo class %s written by name, but Kryo writes the id it is registered with", name)
		}
		k.names = append(k.names, name)
		return name
	}
	id := int(tag - 2)
	switch {
	case id < len(kryoNames):
		return kryoNames[id]
	case id >= kryoFirstSnapshotID && id-kryoFirstSnapshotID < len(k.regs):
		// A class with a serializer of its own: object reads it.
		return k.regs[id-kryoFirstSnapshotID].Class
	case id >= kryoFirstSnapshotID:
		r.FailAt(at, "Kryo class id %d: the serializer snapshot registers %d classes from id %d", id, len(k.regs), kryoFirstSnapshotID)
		return ""
	}
	if c, ok := flinkJDKIDs[id]; ok { // kryo_chill.go
		return c
	}
	if c, ok := chillClassOfID(id); ok && !k.v5 {
		return c
	}
	// chill's registrations, with serializers of their own.
	k.notDecoded(fmt.Sprintf("Kryo class id %d", id))
	return ""
}

// ref reads a reference marker: whether an object follows (else null or a
// back-reference, in v).
func (k *kryoIn) ref(class string) (v any, follows bool) {
	at := k.r.Pos()
	m := k.varint("Kryo reference")
	switch {
	case k.r.Err != nil, m == 0:
		return nil, false
	case m == 1:
		k.refs = append(k.refs, class)
		return nil, true
	case int(m-2) >= len(k.refs):
		k.r.FailAt(at, "Kryo reference to object %d of %d", m-2, len(k.refs))
		return nil, false
	case k.refs[m-2] != class:
		k.r.FailAt(at, "Kryo reference to object %d, a %s, where a %s is", m-2, k.refs[m-2], class)
		return nil, false
	case k.skip:
		return kryoWalkedRef, false
	}
	return map[string]any{"@ref": int64(m - 2)}, false
}

// classAndObject reads writeClassAndObject: a class tag, a reference
// marker (most classes), the object.
func (k *kryoIn) classAndObject(depth int) any {
	v, _ := k.classAndObjectOf(depth)
	return v
}

// classAndObjectOf is classAndObject with the class its tag names ("" for
// null), which is the class of the object read, a back-reference's too.
func (k *kryoIn) classAndObjectOf(depth int) (any, string) {
	class := k.class()
	if class == "" || k.r.Err != nil {
		return nil, ""
	}
	if r := k.r; !k.noRefs(class) && r.Remaining() > 0 && r.Buf[r.Off] == 0 {
		// Kryo writes a null as the null class, never as a class and null.
		r.Fail("Kryo %s with a null reference marker", class)
		return nil, ""
	}
	return k.object(class, true, depth), class
}

// object reads an object of class: with marker, its reference marker first.
func (k *kryoIn) object(class string, marker bool, depth int) any {
	if depth > 16 {
		k.r.Fail("Kryo values nested deeper than 16")
		return nil
	}
	info := k.classes.of(class)
	if v, ok := k.extended(class, info, marker, depth); ok { // kryo_schema.go
		return v
	}
	ser := info.ser
	if !info.builtin {
		if depth > 0 && k.delimited && marker {
			return k.keepTail(class)
		}
		k.notDecoded(class)
		return nil
	}
	if marker && !k.noRefs(class) {
		if v, follows := k.ref(class); !follows {
			return v
		}
	}
	r := k.r
	switch class {
	case "java.lang.Integer":
		return builtTagged(k, class, int32(zigzag(uint64(k.varint("Kryo int")))))
	case "java.lang.Long":
		return built(k, zigzag(k.varlong("Kryo long", 9)))
	case "java.lang.String":
		at := r.Pos()
		s, ok := k.string("Kryo string", false)
		if !ok && r.Err == nil {
			// Kryo writes a null String as the null class.
			r.FailAt(at, "Kryo string object holds a null")
		}
		return built(k, s)
	case "java.lang.Boolean":
		return built(k, r.Bool("Kryo boolean"))
	case "java.lang.Byte":
		return builtTagged(k, class, int64(int8(r.U8("Kryo byte"))))
	case "java.lang.Short":
		return builtTagged(k, class, int64(int16(k.fixed(2, "Kryo short"))))
	case "java.lang.Character":
		c := uint16(k.fixed(2, "Kryo char"))
		if c >= 0xD800 && c < 0xE000 {
			k.notDecoded(class) // a surrogate: no JSON string holds it alone
			return nil
		}
		return builtTagged(k, class, string(rune(c)))
	case "java.lang.Float":
		at := r.Pos()
		f := math.Float32frombits(uint32(k.fixed(4, "Kryo float")))
		if f != f && math.Float32bits(f) != kryoNaN32 {
			r.FailAt(at, "Kryo float: a NaN Java never writes")
		}
		return builtTagged(k, class, float64(f))
	case "java.lang.Double":
		at := r.Pos()
		d := math.Float64frombits(k.fixed(8, "Kryo double"))
		if d != d && math.Float64bits(d) != kryoNaN64 {
			r.FailAt(at, "Kryo double: a NaN Java never writes")
		}
		return builtTagged(k, class, d)
	}
	switch ser {
	case kserCollection, kserSortedCollection:
		return k.collection(class, ser == kserSortedCollection, depth)
	case kserMap, kserSortedMap:
		return k.mapOf(class, ser == kserSortedMap, depth)
	case kserEmpty:
		if k.skip {
			return kryoWalked
		}
		if strings.HasSuffix(class, "Map") {
			return &kryoMap{Class: class}
		}
		return kryoTagged(class, []any{})
	case kserSingleton:
		v := k.classAndObject(depth + 1)
		if k.skip {
			return kryoWalked
		}
		return kryoTagged(class, []any{v})
	case kserSingletonMap:
		key := k.classAndObject(depth + 1)
		v := k.classAndObject(depth + 1)
		if k.skip {
			return kryoWalked
		}
		m := &kryoMap{Class: class}
		m.add(key, v)
		return m
	case kserBigInteger:
		b := k.bigInteger()
		if b == nil || k.skip {
			return k.walked(b != nil)
		}
		return kryoTagged(class, json.Number(javaBigInteger(b).String()))
	case kserBigDecimal:
		return k.bigDecimal()
	case kserDate:
		return builtTagged(k, class, int64(k.varlong("Kryo date", 9)))
	case kserClass:
		return k.classValue()
	case kserEnum:
		at := r.Pos()
		n := k.varint("Kryo enum ordinal")
		consts := kryoEnums[class]
		if r.Err == nil && (n == 0 || int(n) > len(consts)) {
			r.FailAt(at, "Kryo enum %s: ordinal %d of %d constants", class, int(n)-1, len(consts))
			return nil
		}
		if n == 0 {
			return nil
		}
		return builtTagged(k, class, consts[n-1])
	case kserArray:
		return k.array(class, depth)
	case kserChillValue, kserChillTuple, kserChillSpecialized, kserChillSymbol, kserTimestamp, kserURI, kserUUID,
		kserArraysAsList, kserBitSet, kserPattern, kserSocketAddress, kserLocale:
		return k.chillObject(class, ser, depth)
	}
	return nil
}

// keepTail keeps an object of class, which no decoder here walks, as the
// bytes Kryo wrote after its class (a reference marker or none, then what
// its serializer wrote): {"@class": class, "@bytes": "0x…"}. Where it ends
// is unknown, so it must be the last thing in a value that ends where the
// reader does: it takes the rest, and decodeKryo leaves the value not
// decoded if more was due.
func (k *kryoIn) keepTail(class string) any {
	r := k.r
	if r.Remaining() == 0 {
		r.Fail("truncated Kryo %s: nothing after its class", class)
		return nil
	}
	k.tail = class
	return kryoKept(class, r.Take(r.Remaining(), "Kryo "+class))
}

func kryoKept(class string, b []byte) map[string]any {
	return map[string]any{"@class": class, "@bytes": "0x" + hex.EncodeToString(b)}
}

// Java's canonical NaNs (floatToIntBits, doubleToLongBits).
const (
	kryoNaN32 = 0x7FC00000
	kryoNaN64 = 0x7FF8000000000000
)

func kryoTagged(class string, v any) map[string]any {
	return map[string]any{"@class": class, "@value": v}
}

// collection reads CollectionSerializer's (and TreeSet's) collection.
func (k *kryoIn) collection(class string, sorted bool, depth int) any {
	r := k.r
	cmp := ""
	n, same, at, ok := k.collectionHeader(class, sorted, &cmp)
	if !ok {
		return nil
	}
	if same && n == 0 {
		r.FailAt(at, "Kryo 5 empty collection flagged as of one class, which Kryo never writes")
		return nil
	}
	var out kryoElems
	if same && n > 0 {
		elem := k.class()
		if r.Err != nil {
			return nil
		}
		if elem == "" {
			// Every element is null: none is written.
			if n > 1<<16 {
				r.FailAt(at, "Kryo collection of %d null elements", n)
				return nil
			}
			out = k.nulls(int(n))
		} else {
			hasNull := r.Bool("Kryo collection has-null flag")
			cnt := k.count(uint64(n), 1, "Kryo collection size", at)
			out = k.elems(cnt)
			for i := 0; i < cnt && r.Err == nil; i++ {
				out.add(k.elementOf(elem, hasNull, depth+1), elem)
			}
			if r.Err == nil && hasNull != out.null {
				r.FailAt(at, "Kryo collection has-null flag does not match its elements")
			}
			if r.Err == nil && out.class == "" {
				r.FailAt(at, "Kryo collection of nulls names a class, which Kryo writes as the null class")
			}
		}
	} else {
		cnt := k.count(uint64(n), 1, "Kryo collection size", at)
		out = k.elems(cnt)
		for i := 0; i < cnt && r.Err == nil; i++ {
			out.add(k.classAndObjectOf(depth + 1))
		}
		if k.v5 && r.Err == nil && n > 0 && !out.mixed {
			r.FailAt(at, "Kryo 5 collection of one class without its flag")
		}
	}
	if r.Err != nil {
		return nil
	}
	return k.taggedCollection(class, cmp, out.vals)
}

// kryoElems are the elements of a collection or an array as read: their
// values (none in a skip walk), and what a collection's checks need,
// which a skip walk keeps too.
type kryoElems struct {
	keep  bool
	vals  []any
	null  bool   // an element is null
	class string // the class of the last element not null
	mixed bool   // the elements not null are of more than one class
}

// elems are for the n elements of a collection or an array.
func (k *kryoIn) elems(n int) kryoElems {
	if k.skip {
		return kryoElems{}
	}
	return kryoElems{keep: true, vals: make([]any, 0, n)}
}

// nulls are n null elements.
func (k *kryoIn) nulls(n int) kryoElems {
	if k.skip {
		return kryoElems{null: true}
	}
	return kryoElems{keep: true, vals: make([]any, n), null: true}
}

// add adds an element read and its class ("" for null).
func (e *kryoElems) add(v any, class string) {
	if e.keep {
		e.vals = append(e.vals, v)
	}
	if v == nil {
		e.null = true
		return
	}
	e.mixed = e.mixed || e.class != "" && class != e.class
	e.class = class
}

// collectionHeader reads what comes before a collection's elements: its
// size (Kryo 5's plus one, and its flag) and a sorted collection's
// comparator, which Kryo 2 writes before the size and Kryo 5 after it.
// ok is false on an error.
func (k *kryoIn) collectionHeader(class string, sorted bool, cmp *string) (n uint32, flag bool, at int64, ok bool) {
	r := k.r
	if sorted && !k.v5 && !k.comparator(class, cmp) {
		return 0, false, 0, false
	}
	at = r.Pos()
	if k.v5 {
		n, flag = k.flagged("Kryo collection size")
		if r.Err == nil && n == 0 {
			r.FailAt(at, "Kryo collection size 0: Kryo 5 writes the size plus one")
		}
		n--
	} else {
		n = k.varint("Kryo collection size")
	}
	if sorted && k.v5 && !k.comparator(class, cmp) {
		return 0, false, 0, false
	}
	return n, flag, at, r.Err == nil
}

// taggedCollection is a collection's elements as shown: an ArrayList bare,
// any other tagged with its class (and a sorted one's comparator).
func (k *kryoIn) taggedCollection(class, cmp string, out []any) any {
	if k.skip {
		return kryoWalked
	}
	if class == "java.util.ArrayList" {
		return out
	}
	m := kryoTagged(class, out)
	if cmp != "" {
		m["@comparator"] = cmp
	}
	return m
}

// elementOf reads an element of a collection whose elements are all of
// class: a null marker, or a reference marker, then the object.
func (k *kryoIn) elementOf(class string, mayBeNull bool, depth int) any {
	if k.noRefs(class) && mayBeNull {
		if !k.r.Bool("Kryo not-null flag") {
			return nil
		}
		return k.object(class, false, depth)
	}
	at := k.r.Pos()
	v := k.object(class, true, depth)
	if v == nil && !mayBeNull && k.r.Err == nil {
		k.r.FailAt(at, "Kryo null element in a collection flagged without nulls")
	}
	return v
}

func containsNil(vs []any) bool {
	for _, v := range vs {
		if v == nil {
			return true
		}
	}
	return false
}

// kryoFieldlessComparators are the JDK comparators without fields, which
// Kryo's FieldSerializer writes as nothing: a sorted collection ordered by
// one is decoded (a user's comparator may have fields, and its class does
// not say).
var kryoFieldlessComparators = []string{"java.util.Collections$ReverseComparator", "java.lang.String$CaseInsensitiveComparator"}

// comparator reads a sorted collection's comparator into cmp: "" for the
// natural order (null), else one of kryoFieldlessComparators or
// Comparator.naturalOrder(); any other (a user's class, whose fields
// nothing here knows) leaves the collection of class not decoded.
func (k *kryoIn) comparator(class string, cmp *string) bool {
	if k.r.Remaining() > 0 && k.r.Buf[k.r.Off] == 0 {
		k.r.Off++
		return true
	}
	c := k.class()
	if k.r.Err == nil && slices.Contains(kryoFieldlessComparators, c) {
		if _, follows := k.ref(c); follows {
			*cmp = c
			return true
		}
	}
	if k.r.Err == nil && c == kryoNaturalOrder {
		// A new object (not a back-reference): its one constant.
		if v := k.object(c, true, 1); v != nil && !kryoIsRef(v) {
			*cmp = c
			return true
		}
	}
	if k.r.Err == nil {
		k.notDecoded(class)
	}
	return false
}

// mapOf reads MapSerializer's (and TreeMap's) map.
func (k *kryoIn) mapOf(class string, sorted bool, depth int) any {
	// Keys and values of no declared class (kryo_schema.go).
	return k.genericMap(class, sorted, classlayout.Type{}, classlayout.Type{}, depth)
}

// bigInteger reads a BigInteger's bytes as Java writes them
// (toByteArray), nil after an error.
func (k *kryoIn) bigInteger() []byte {
	at := k.r.Pos()
	n := k.varint("Kryo BigInteger length")
	if k.r.Err == nil && n == 0 {
		k.r.FailAt(at, "Kryo BigInteger object holds a null") // written as the null class
	}
	if k.r.Err != nil {
		return nil
	}
	b := k.r.Take(int(n-1), "Kryo BigInteger")
	if k.r.Err != nil {
		return nil
	}
	if len(b) == 0 || len(b) > 1 && (b[0] == 0 && b[1] < 0x80 || b[0] == 0xFF && b[1] >= 0x80) {
		k.r.FailAt(at, "Kryo BigInteger of %d bytes, not as Java writes one", len(b))
		return nil
	}
	return b
}

// javaBigInteger is the BigInteger of Java's two's-complement bytes.
func javaBigInteger(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if b[0] >= 0x80 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// bigDecimal reads the unscaled BigInteger and the scale, rendered as
// Java's BigDecimal.toString does.
func (k *kryoIn) bigDecimal() any {
	u := k.bigInteger()
	if u == nil {
		return nil
	}
	scale := int32(zigzag(uint64(k.varint("Kryo BigDecimal scale"))))
	if k.r.Err != nil || k.skip {
		return k.walked(k.r.Err == nil)
	}
	return kryoTagged("java.math.BigDecimal", json.Number(javaBigDecimal(javaBigInteger(u), scale)))
}

// javaBigDecimal is BigDecimal.toString: plain when the scale is not
// negative and the adjusted exponent is at least -6, else scientific.
func javaBigDecimal(u *big.Int, scale int32) string {
	digits := new(big.Int).Abs(u).String()
	sign := ""
	if u.Sign() < 0 {
		sign = "-"
	}
	adjusted := int64(len(digits)-1) - int64(scale)
	if scale >= 0 && adjusted >= -6 {
		if scale == 0 {
			return sign + digits
		}
		if int(scale) >= len(digits) {
			return sign + "0." + strings.Repeat("0", int(scale)-len(digits)) + digits
		}
		return sign + digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]
	}
	out := sign + digits[:1]
	if len(digits) > 1 {
		out += "." + digits[1:]
	}
	if adjusted >= 0 {
		return out + "E+" + fmt.Sprint(adjusted)
	}
	return out + "E" + fmt.Sprint(adjusted)
}

// classValue reads a Class: its class tag, then (Kryo 2 always, Kryo 5 for
// the wrappers) whether it is the primitive class.
func (k *kryoIn) classValue() any {
	at := k.r.Pos()
	c := k.class()
	if k.r.Err != nil {
		return nil
	}
	if c == "" {
		if k.r.Err == nil {
			k.r.FailAt(at, "Kryo Class value without its class")
		}
		return nil
	}
	if _, wrapper := kryoPrimitives[c]; wrapper || !k.v5 {
		if k.r.Bool("Kryo primitive class flag") {
			p, ok := kryoPrimitives[c]
			if !ok {
				k.r.FailAt(at, "Kryo class %s flagged primitive", c)
				return nil
			}
			c = p
		}
	}
	return builtTagged(k, "java.lang.Class", c)
}

// array reads ArraySerializers' arrays: the length plus one, the elements.
func (k *kryoIn) array(class string, depth int) any {
	r := k.r
	at := r.Pos()
	n := k.varint("Kryo array length")
	if r.Err == nil && n == 0 {
		r.FailAt(at, "Kryo array object holds a null") // written as the null class
	}
	if r.Err != nil {
		return nil
	}
	cnt := k.count(uint64(n-1), 1, "Kryo array length", at)
	if class == "[B" {
		b := r.Take(cnt, "Kryo byte array")
		if k.skip {
			return kryoWalked
		}
		return kryoTagged(class, "0x"+hex.EncodeToString(b))
	}
	out := k.elems(cnt)
	wrapper, primitive := kryoPrimitiveArrays[class]
	elem, _ := kryoObjectArrayElem(class)
	for i := 0; i < cnt && r.Err == nil; i++ {
		switch {
		case primitive:
			out.add(kryoUntagged(k.object(wrapper, false, depth+1)), wrapper)
		case elem == "":
			out.add(k.classAndObjectOf(depth + 1))
		default:
			out.add(k.elementOf(elem, true, depth+1), elem)
		}
	}
	return builtTagged(k, class, out.vals)
}

// kryoUntagged is the value of a tagged boxed primitive (in a primitive
// array, the array's class says it).
func kryoUntagged(v any) any {
	if m, ok := v.(map[string]any); ok {
		return m["@value"]
	}
	return v
}

// kryoSameClass reports whether the values that are not null are all of
// one class (Kryo 5 then writes the class once), refs giving the class of
// each reference id.
func kryoSameClass(vs []any, refs []string) bool {
	first := ""
	for _, v := range vs {
		if v == nil {
			continue
		}
		c := kryoClassOf(v, refs)
		if first != "" && c != first {
			return false
		}
		first = c
	}
	return true // all null too: Kryo 5 writes a null class then
}

// kryoMap is a Kryo map in its iteration order, which a JSON object loses.
type kryoMap struct {
	Class      string
	JSONKeys   bool
	Plain      bool   // the snapshot's declared class: no tag
	Comparator string // a sorted map's, if not the natural order
	Keys       []any
	Vals       []any
}

func (m *kryoMap) add(k, v any) {
	m.Keys, m.Vals = append(m.Keys, k), append(m.Vals, v)
	if _, ok := k.(string); !ok {
		m.JSONKeys = true
	}
}

// MarshalJSON writes the map as an object in Kryo's order.
func (m *kryoMap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, key := range m.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		text, ok := key.(string)
		if m.JSONKeys || !ok {
			kb, err := json.Marshal(key)
			if err != nil {
				return nil, err
			}
			text = string(kb)
		}
		kb, _ := json.Marshal(text)
		vb, err := json.Marshal(m.Vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	if (m.Plain || m.Class == "java.util.HashMap") && !m.JSONKeys && m.Comparator == "" {
		return []byte(b.String()), nil
	}
	keys := ""
	if m.JSONKeys {
		keys = `"@keys":"json",`
	}
	if m.Comparator != "" {
		c, _ := json.Marshal(m.Comparator)
		keys = `"@comparator":` + string(c) + `,` + keys
	}
	cb, _ := json.Marshal(m.Class)
	return []byte(`{"@class":` + string(cb) + `,` + keys + `"@value":` + b.String() + `}`), nil
}

// kryoClassOf is the class of a decoded (or JSON) value, "" for null.
func kryoClassOf(v any, refs []string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return "java.lang.String"
	case int32:
		return "java.lang.Integer"
	case json.Number, float64, int64, int:
		return "java.lang.Long"
	case bool:
		return "java.lang.Boolean"
	case []any:
		return "java.util.ArrayList"
	case *kryoMap:
		return x.Class
	case map[string]any:
		if c, ok := x["@class"].(string); ok {
			return c
		}
		if id, ok := kryoRefID(x); ok {
			if id >= 0 && id < int64(len(refs)) {
				return refs[id]
			}
			return "@ref"
		}
		return "java.util.HashMap"
	}
	return fmt.Sprintf("%T", v)
}

// kryoRefID is the id of a back-reference {"@ref": id}.
func kryoRefID(m map[string]any) (int64, bool) {
	v, ok := m["@ref"]
	if !ok || len(m) != 1 {
		return 0, false
	}
	n, ok := kryoInteger(v)
	return n, ok
}

// kryoInteger is an integer of a decoded or JSON value.
func kryoInteger(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

// kryoRegistrations reads the KryoSerializerSnapshot's registrations: per
// class, a frame holding the class name and the serializer definition
// type (then the serializer, which is not needed).
func kryoRegistrations(sr *typeser.SnapReader) []typeser.KryoRegistration {
	var regs []typeser.KryoRegistration
	sr.OptionalMapEach("Kryo registrations", func(name string, frame []byte, base int64) {
		reg := typeser.KryoRegistration{Class: name, Kind: -1}
		if frame != nil {
			fr := wire.NewReader(frame, sr.R.File, base)
			if fr.UTF("Kryo registration class") == name {
				reg.Kind = fr.I32("Kryo registration kind")
			}
			if reg.Kind == kryoRegisteredClass {
				reg.Serializer = fr.UTF("Kryo registration serializer class")
			}
			if fr.Err != nil {
				reg.Kind = -1
			}
		}
		regs = append(regs, reg)
	})
	return regs
}

// kryoHash is the Java hashCode of a decoded Kryo key of a boxed integer
// or a String.
func kryoHash(v any) (int32, bool) {
	x := kryoUntagged(v)
	switch kryoClassOf(v, nil) {
	case "java.lang.Long":
		n, ok := kryoInteger(x)
		return keygroup.HashInt64(n), ok
	case "java.lang.Integer", "java.lang.Short", "java.lang.Byte":
		n, ok := kryoInteger(x)
		return int32(n), ok
	case "java.lang.String":
		str, ok := x.(string)
		return keygroup.HashString(str), ok
	}
	return 0, false
}
