package typeser

import (
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Flink's serializers write no lengths of their own, so splitting a heap
// state table, a canonical key or a RocksDB list into its parts means
// walking each value the way its serializer wrote it. skipValue knows the
// wire form of the serializers below; anything else is "unsized" and can be
// split only where a length is stored around it.

// KindOf classifies a serializer snapshot more widely than typeKey: window
// namespaces, Scala wrappers and Kryo.
func KindOf(s *SerializerSnapshot) string {
	if s == nil {
		return ""
	}
	return s.kinds().kind
}

func classKind(s *SerializerSnapshot) (string, *Family) {
	switch s.Class {
	case broadcastClass:
		return "Broadcast", nil
	case BroadcastEntryClass:
		return "Entry", nil
	}
	for _, n := range []string{s.SerializerClass, s.Class} {
		if k := arrayKind(n); k != "" {
			return k, nil
		}
		if k := builtinKind(n); k != "" {
			return k, nil
		}
		if k := temporalKind(n); k != "" {
			return k, nil
		}
		if k := valueKind(n); k != "" {
			return k, nil
		}
		if strings.HasPrefix(n, singleThreadClass) {
			return "SingleThreadChecking", nil
		}
		if isTtlAware(n) {
			return "TtlAware", nil
		}
		if k, f := s.table.kindOf(n); k != "" {
			return k, f
		}
		switch {
		case n == "":
		case strings.Contains(n, "PojoSerializer"):
			return "Pojo", nil
		case strings.Contains(n, "runtime.RowSerializer"):
			return "Row", nil
		case strings.Contains(n, "GlobalWindow"):
			return "GlobalWindow", nil
		case strings.Contains(n, "TimeWindow"):
			return "TimeWindow", nil
		case strings.Contains(n, "Tuple0Serializer"):
			return "Tuple0", nil
		case strings.Contains(n, "CoGroupedStreams$UnionSerializer"):
			return "Union", nil
		case strings.Contains(n, "CaseClassSerializer"):
			return "Tuple", nil
		case strings.Contains(n, "ScalaOptionSerializer") || strings.HasSuffix(n, ".OptionSerializer") ||
			strings.HasPrefix(n, "org.apache.flink.api.scala.typeutils.OptionSerializer$"):
			return "Option", nil
		case strings.Contains(n, "EitherSerializer"):
			return "Either", nil
		case strings.Contains(n, "ArrayListSerializer"):
			return "List", nil
		case strings.Contains(n, "typeutils.base.EnumSerializer"):
			return "IntEnum", nil
		}
	}
	return s.shortType(), nil
}

// broadcastClass marks the synthetic serializer of a broadcast state's
// element: the whole map, an int count then key/value pairs.
const broadcastClass = "stateutil.flink.BroadcastState"

// BroadcastEntryClass marks the synthetic serializer of one entry of a
// broadcast state, the element the reader yields: its key, then its value.
const BroadcastEntryClass = "stateutil.flink.BroadcastEntry"

// FixedLength is what Flink's serializer getLength() says: the byte width of
// every value, or -1 for variable-length types. It decides whether canonical
// keys carry length suffixes.
func FixedLength(s *SerializerSnapshot) int {
	kind := KindOf(s)
	switch kind {
	case "VoidNamespace", "GlobalWindow":
		return 0 // getLength() is 0 although one byte is written
	case "CopyableValue", "Value", "NullValue":
		return valueTypeWidth(s, kind)
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return FixedLength(s.Nested[0])
		}
		return -1
	case "Nullable":
		return nullableLength(s)
	case "Tuple":
		if len(s.Nested) == 0 {
			return -1
		}
		n := 0
		for _, c := range s.Nested {
			w := FixedLength(c)
			if w < 0 {
				return -1
			}
			n += w
		}
		return n
	}
	if n := widthOf(s); n > 0 {
		return n
	}
	return -1
}

// TTLTimestampFirst says whether a TTL wrapper stores the last-access time
// before the user value. Flink 1.6's TtlSerializer (legacy config snapshot)
// wrote the user value first; from the TtlSerializerSnapshot on, the
// timestamp comes first.
func TTLTimestampFirst(s *SerializerSnapshot) bool {
	return strings.HasSuffix(s.Class, "TtlSerializerSnapshot")
}

// ttlParts returns the timestamp and value serializers of a TTL wrapper in
// stored order.
func ttlParts(s *SerializerSnapshot) (first, second *SerializerSnapshot, tsFirst bool, ok bool) {
	if len(s.Nested) != 2 {
		return nil, nil, false, false
	}
	return s.Nested[0], s.Nested[1], TTLTimestampFirst(s), true
}

// Sized reports whether skipValue can walk values of s. Walks ask it of
// every POJO value, after the serializers below s are settled: the
// answer is kept in s's kind memo.
func Sized(s *SerializerSnapshot) bool {
	if s == nil {
		return false
	}
	m := s.kinds()
	switch m.sized.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	ok := SizedDepth(s, 0)
	m.sized.Store(2)
	if ok {
		m.sized.Store(1)
	}
	return ok
}

func SizedDepth(s *SerializerSnapshot, depth int) bool {
	if s == nil || depth > 16 {
		return false
	}
	if _, ok := temporalExprs[KindOf(s)]; ok {
		return true
	}
	switch k := KindOf(s); k {
	case "Long", "Integer", "Short", "Byte", "Char", "Boolean", "Double", "Float", "String", "byte[]",
		"VoidNamespace", "GlobalWindow", "TimeWindow", "IntEnum":
		return true
	case "Pojo", "Row", "GenericArray":
		if len(s.Nested) == 0 && k != "Pojo" {
			return false
		}
		for _, c := range s.Nested {
			if !SizedDepth(c, depth+1) {
				return false
			}
		}
		return k != "Pojo" || len(s.Fields) == len(s.Nested)
	case "Tuple0":
		return true
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "StringValue", "NullValue", "CopyableValue", "Value", "Void":
		layout, _ := valueLayout(s, k)
		return layout != ""
	case "SingleThreadChecking", "TtlAware":
		return len(s.Nested) == 1 && SizedDepth(s.Nested[0], depth+1)
	case "Tuple", "TTL", "Timer", "Option", "Either", "Entry", "Union":
		if len(s.Nested) == 0 {
			return false
		}
		for _, c := range s.Nested {
			if !SizedDepth(c, depth+1) {
				return false
			}
		}
		return true
	case "List", "Set":
		return len(s.Nested) == 1 && SizedDepth(s.Nested[0], depth+1)
	case "Nullable":
		_, ok := nullPadding(s)
		return ok && len(s.Nested) == 1 && SizedDepth(s.Nested[0], depth+1)
	case "Map":
		return len(s.Nested) == 2 && SizedDepth(s.Nested[0], depth+1) && SizedDepth(s.Nested[1], depth+1)
	default:
		if f := familyOf(s); f != nil {
			return f.Sized != nil && f.Sized(s, depth)
		}
		return strings.HasPrefix(k, "Array:")
	}
}

// fixedWidth is the size of every value of a flink-core serializer kind
// that writes all its values alike, or 0.
func fixedWidth(kind string) int {
	switch kind {
	case "Long", "Double":
		return 8
	case "Integer", "Float", "IntEnum":
		return 4
	case "Short", "Char":
		return 2
	case "Byte", "Boolean", "VoidNamespace", "GlobalWindow", "Tuple0", "Void":
		return 1
	case "TimeWindow":
		return 16
	}
	if w := valueWidths[kind]; w > 0 {
		return w
	}
	return temporalWidths[kind]
}

// widthOf is fixedWidth for a serializer of any family.
func widthOf(s *SerializerSnapshot) int {
	if s == nil {
		return 0
	}
	m := s.kinds()
	if f := m.family; f != nil {
		if f.Width != nil {
			if w := f.Width(s); w > 0 {
				return w
			}
		}
		return f.Widths[m.kind]
	}
	return m.width
}

// fixedWhat names a fixed-width value by its size in damage messages.
func fixedWhat(width int) string {
	switch width {
	case 1:
		return "1-byte value"
	case 2:
		return "2-byte value"
	case 4:
		return "4-byte value"
	case 8:
		return "8-byte value"
	case 16:
		return "time window"
	}
	return "value"
}

// SkipValue advances r past one value written by s. It returns false (with
// r unchanged apart from a possible r.err) when s is not sized; Kryo values
// are sized where the Kryo decoder reads them.
func SkipValue(r *wire.Reader, s *SerializerSnapshot, depth int) bool {
	if depth > 16 {
		r.Fail("values nested deeper than 16")
		return false
	}
	if s == nil {
		return false
	}
	// Most values are of flink-core's fixed-width kinds or Strings: those
	// take no more than the memo's answers.
	m := s.kinds()
	if m.family == nil && m.width > 0 {
		r.Take(m.width, fixedWhat(m.width))
		return true
	}
	if m.kind == "String" {
		skipStringValue(r)
		return true
	}
	kind := m.kind
	if n := widthOf(s); n > 0 {
		r.Take(n, fixedWhat(n))
		return true
	}
	switch kind {
	case "byte[]":
		r.Bytes32("byte array")
	case "Pojo":
		if !Sized(s) {
			return false
		}
		_, ok := walkPojo(r, s, depth, false)
		return ok
	case "Row":
		walkRow(r, s, depth, false)
	case "GenericArray":
		if len(s.Nested) != 1 {
			return false
		}
		n := r.Count32(1, "array length")
		for i := 0; i < n && r.Err == nil; i++ {
			if r.Bool("array element flag") && !SkipValue(r, s.Nested[0], depth+1) {
				return false
			}
		}
	case "Tuple", "TTL", "Timer", "Entry":
		if len(s.Nested) == 0 {
			return false
		}
		if KindOf(s) == "Timer" {
			r.Take(8, "timer timestamp")
		}
		for _, c := range s.Nested {
			if !SkipValue(r, c, depth+1) {
				return false
			}
		}
	case "Nullable":
		_, ok := walkNullable(r, s, depth, false)
		return ok
	case "Union":
		if len(s.Nested) != 2 {
			return false
		}
		side := unionSide(r)
		return r.Err != nil || SkipValue(r, s.Nested[side], depth+1)
	case "Set":
		_, ok := walkSet(r, s, depth, false)
		return ok
	case "Option":
		if len(s.Nested) != 1 {
			return false
		}
		if r.U8("option flag") != 0 {
			return SkipValue(r, s.Nested[0], depth+1)
		}
	case "Either":
		if len(s.Nested) != 2 {
			return false
		}
		if r.Bool("either flag") {
			return SkipValue(r, s.Nested[0], depth+1)
		}
		return SkipValue(r, s.Nested[1], depth+1)
	case "List":
		if len(s.Nested) != 1 {
			return false
		}
		n := r.Count32(0, "list size")
		for i := 0; i < n && r.Err == nil; i++ {
			if !SkipValue(r, s.Nested[0], depth+1) {
				return false
			}
		}
	case "Map":
		if len(s.Nested) != 2 {
			return false
		}
		n := r.Count32(2, "map size")
		for i := 0; i < n && r.Err == nil; i++ {
			if !SkipValue(r, s.Nested[0], depth+1) {
				return false
			}
			if !r.Bool("map value null flag") {
				if !SkipValue(r, s.Nested[1], depth+1) {
					return false
				}
			}
		}
	case "BigInteger", "BigDecimal":
		skipBigNumber(r, kind)
	case "StringValue", "NullValue", "CopyableValue", "Value":
		if layout, _ := valueLayout(s, kind); layout == "" {
			return false
		}
		decodeValueType(r, s, kind)
	case "SingleThreadChecking", "TtlAware":
		return len(s.Nested) == 1 && SkipValue(r, s.Nested[0], depth+1)
	default:
		if f := familyOf(s); f != nil {
			if f.Walk == nil {
				return false
			}
			_, ok := f.Walk(r, s, depth, false)
			return ok
		}
		if k := KindOf(s); strings.HasPrefix(k, "Array:") {
			walkArray(r, k[len("Array:"):], false)
			break
		}
		return false
	}
	return true
}

// Flink's Tuple0Serializer writes this byte for the one Tuple0 (and reads
// past any).
const tuple0Byte = 42

// unionSides names the sides of CoGroup's TaggedUnion, as its serializer
// tags them with 1 and 2.
var unionSides = [2]string{"one", "two"}

// unionSide reads a TaggedUnion's tag: 0 for side one, 1 for two. Flink
// reads any tag but 1 as side two, and writes only 1 and 2.
func unionSide(r *wire.Reader) int {
	at := r.Pos()
	tag := r.U8("TaggedUnion tag")
	if r.Err == nil && tag != 1 && tag != 2 {
		r.FailAt(at, "TaggedUnion tag %d, Flink writes 1 or 2", tag)
	}
	if tag == 2 {
		return 1
	}
	return 0
}

// Span returns the bytes one value of s takes at the start of b, or ok
// false when s is not sized.
func Span(s *SerializerSnapshot, b []byte) (n int, ok bool, err error) {
	// Keys are mostly of fixed width: no reader (which escapes to the heap)
	// for those, once per entry. Too few bytes take the reader's way, for
	// its message.
	if n := widthOf(s); n > 0 && n <= len(b) {
		return n, true, nil
	}
	r := wire.NewReader(b, "value", 0)
	ok = SkipValue(r, s, 0)
	if r.Err != nil {
		return 0, false, r.Err
	}
	return r.Off, ok, nil
}

// A Way is how SkipValue passes the values of one serializer, settled
// once for a walk of many: the heap walk passes each entry's parts this
// way.
type Way struct {
	s     *SerializerSnapshot
	width int  // flink-core's fixed-width kinds
	str   bool // Strings
}

// WayOf settles how s's values are passed; s's names must be complete.
func WayOf(s *SerializerSnapshot) Way {
	w := Way{s: s}
	if s == nil {
		return w
	}
	m := s.kinds()
	w.width = m.width
	if m.family != nil {
		w.width = 0
	}
	w.str = m.kind == "String"
	return w
}

// Skip is SkipValue(r, s, 0) for the way's s.
func (w *Way) Skip(r *wire.Reader) bool {
	switch {
	case w.width > 0:
		if r.Err == nil && w.width <= len(r.Buf)-r.Off {
			r.Off += w.width
		} else {
			r.Take(w.width, fixedWhat(w.width))
		}
		return true
	case w.str:
		skipStringValue(r)
		return true
	}
	return SkipValue(r, w.s, 0)
}
