package typeser

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// MarkKryo5 makes the Kryo serializers in s read and write Kryo 5 (the
// snapshot is Flink 2's: its KryoSerializerSnapshot is the same as Flink
// 1's, but the values are not).
func MarkKryo5(s *SerializerSnapshot) {
	if s == nil {
		return
	}
	if KindOf(s) == "Kryo" {
		s.Kryo5 = true
	}
	for _, n := range s.Nested {
		MarkKryo5(n)
	}
}

// Types of Flink state are named "flink:" + a type expression built from the
// serializer snapshot: "flink:java.lang.Long", "flink:tuple(java.lang.Long)",
// "flink:list(java.lang.Integer)", "flink:bytes" for serializers this
// package cannot walk. The type also keeps the serializer snapshot's bytes.
// CodecFactory rebuilds a codec from those two alone, so that values decode
// in any snapshot a Flink type was carried into, whatever its format.

// TypeBytes names values of serializers this package cannot decode.
const TypeBytes = "flink:bytes"

// typeExpr is the type expression of a serializer.
func typeExpr(s *SerializerSnapshot) string {
	if s == nil {
		return "bytes"
	}
	nested := func() string {
		parts := make([]string, len(s.Nested))
		for i, c := range s.Nested {
			parts[i] = typeExpr(c)
		}
		return strings.Join(parts, ",")
	}
	if f := familyOf(s); f != nil {
		if f.Expr != nil {
			if e, ok := f.Expr(s, KindOf(s), nested); ok {
				return e
			}
		}
		return "bytes"
	}
	switch k := KindOf(s); k {
	case "Long", "Integer", "String", "Boolean", "Double", "Float", "Short", "Byte":
		return "java.lang." + k
	case "Char":
		return "java.lang.Character"
	case "BigInteger", "BigDecimal", "Instant", "LocalDate", "LocalTime", "LocalDateTime", "SqlTimestamp", "Date", "SqlDate", "SqlTime":
		return temporalExprs[k]
	case "byte[]":
		return "byte[]"
	case "VoidNamespace":
		return "void"
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "StringValue", "NullValue", "CopyableValue", "Value", "Void":
		return valueTypeExpr(k)
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return typeExpr(s.Nested[0])
		}
	case "GlobalWindow", "TimeWindow":
		return k
	case "IntEnum":
		return "enum"
	case "Pojo":
		if kryo5Inside(s) {
			// Its bytes decide its type, but not that its Kryo fields are Kryo 5's (Flink 2.x).
			return "pojo(kryo5)"
		}
		return "pojo"
	case "Row":
		if len(s.Nested) > 0 && rowKindBits(s) > 0 {
			return "rowkind(" + nested() + ")"
		}
		if len(s.Nested) > 0 {
			return "row(" + nested() + ")"
		}
	case "GenericArray":
		if len(s.Nested) > 0 {
			return "array(" + nested() + ")"
		}
	case "Tuple":
		if len(s.Nested) > 0 {
			if strings.Contains(s.Name(), "CaseClass") {
				return "caseclass(" + nested() + ")"
			}
			return "tuple(" + nested() + ")"
		}
	case "Tuple0":
		return "tuple0"
	case "Union":
		if len(s.Nested) == 2 {
			return "union(" + nested() + ")"
		}
	case "List", "Map", "Option", "Either", "Timer", "Broadcast", "Entry", "Nullable", "Set":
		if len(s.Nested) > 0 {
			return strings.ToLower(k) + "(" + nested() + ")"
		}
	case "TTL":
		if len(s.Nested) == 2 {
			return "ttl(" + nested() + ")"
		}
	default:
		if e, ok := strings.CutPrefix(k, "Array:"); ok {
			return arrayExprs[e]
		}
	}
	return "bytes"
}

// kryo5Inside reports whether a serializer nested in s is a Kryo 5 one.
func kryo5Inside(s *SerializerSnapshot) bool {
	for _, n := range s.Nested {
		if n != nil && (n.Kryo5 || kryo5Inside(n)) {
			return true
		}
	}
	return false
}

// arrayExprs names the arrays of primitives and strings.
var arrayExprs = map[string]string{
	"Boolean": "boolean[]", "Char": "char[]", "Double": "double[]", "Float": "float[]",
	"Integer": "int[]", "Long": "long[]", "Short": "short[]", "String": "java.lang.String[]",
}

// TypeOf maps a serializer onto a snapshot type.
func TypeOf(s *SerializerSnapshot) snapshot.Type {
	t := snapshot.Type{Name: TypePrefix + typeName(s)}
	if s != nil {
		t.Class = s.Name()
		// A nested snapshot (a map's key, a list's element) carries its
		// bytes framed as a top-level one, so that CodecFactory rebuilds
		// types no type expression spells (RowData, POJO, Avro).
		t.SerializerSnapshot = Proxied(s).Raw
	}
	return t
}

// TypePrefix starts the name of every Flink type.
const TypePrefix = "flink:"

// StateTypePrefix names the element type of an operator state whose
// byte[] elements a family decodes by the state's name (connectors keep
// their state so): "flink:connector:" + the state's name.
const StateTypePrefix = "connector:"

// StateElementType is the element type of operator state name with
// elements of s, when a family decodes the byte[] elements of states of
// that name.
func (t *Table) StateElementType(name string, s *SerializerSnapshot) (snapshot.Type, bool) {
	if _, ok := t.stateCodecs[name]; !ok || KindOf(s) != "byte[]" {
		return snapshot.Type{}, false
	}
	typ := TypeOf(s)
	typ.Name = TypePrefix + StateTypePrefix + name
	return typ, true
}

// CodecFactory builds the codec of a Flink type (a name starting
// "flink:"): from its serializer snapshot's bytes when they parse to the
// same type, else from the type expression in its name.
func (t *Table) CodecFactory(typ snapshot.Type) (snapshot.Codec, error) {
	expr, ok := strings.CutPrefix(typ.Name, TypePrefix)
	if !ok {
		return nil, fmt.Errorf("not a Flink type")
	}
	if state, ok := strings.CutPrefix(expr, StateTypePrefix); ok {
		if c, ok := t.stateCodecs[state]; ok {
			return c(), nil
		}
		return nil, fmt.Errorf("no codec decodes the elements of operator state %q", state)
	}
	if len(typ.SerializerSnapshot) > 0 {
		r := wire.NewReader(typ.SerializerSnapshot, "serializer snapshot", 0)
		sr := &SnapReader{R: r, Table: t}
		s := sr.SnapshotProxy(func(q int) bool { return q == len(typ.SerializerSnapshot) })
		if strings.Contains(expr, "kryo5") {
			MarkKryo5(s)
		}
		if r.Err == nil && r.Remaining() == 0 && typeName(s) == expr {
			return Codec{S: s}, nil
		}
	}
	plain, marked := strings.CutSuffix(expr, kryo5Mark)
	s, err := t.parseTypeExpr(plain)
	if err != nil {
		return nil, err
	}
	if marked {
		MarkKryo5(s)
	}
	return Codec{S: s}, nil
}

// CoreExprs are the snapshot classes that serKind maps back onto each
// flink-core leaf of a type expression; the families add theirs.
var CoreExprs = map[string]string{
	"java.lang.Long": "LongSerializerSnapshot", "java.lang.Integer": "IntSerializerSnapshot",
	"java.lang.String": "StringSerializerSnapshot", "java.lang.Boolean": "BooleanSerializerSnapshot",
	"java.lang.Double": "DoubleSerializerSnapshot", "java.lang.Float": "FloatSerializerSnapshot",
	"java.lang.Short": "ShortSerializerSnapshot", "java.lang.Byte": "ByteSerializerSnapshot",
	"java.lang.Character": "CharSerializerSnapshot", "byte[]": "BytePrimitiveArraySerializerSnapshot",
	"void": "VoidNamespaceSerializerSnapshot", "GlobalWindow": "GlobalWindow$Serializer",
	"TimeWindow": "TimeWindow$Serializer", "enum": "typeutils.base.EnumSerializer",
	"tuple": "TupleSerializerSnapshot", "tuple0": "Tuple0SerializerSnapshot",
	"union": "CoGroupedStreams$UnionSerializerSnapshot", "caseclass": "CaseClassSerializer",
	"list": "ListSerializerSnapshot", "map": "MapSerializerSnapshot", "option": "ScalaOptionSerializer",
	"either": "EitherSerializer", "timer": "TimerSerializerSnapshot", "broadcast": broadcastClass, "entry": BroadcastEntryClass,
	"ttl": "TtlSerializerSnapshot", "nullable": "runtime.NullableSerializer$NullableSerializerSnapshot",
	"set": "typeutils.base.SetSerializerSnapshot", "array": "typeutils.base.GenericArraySerializerSnapshot",
	"boolean[]": "typeutils.base.array.BooleanPrimitiveArraySerializer", "char[]": "typeutils.base.array.CharPrimitiveArraySerializer",
	"double[]": "typeutils.base.array.DoublePrimitiveArraySerializer", "float[]": "typeutils.base.array.FloatPrimitiveArraySerializer",
	"int[]": "typeutils.base.array.IntPrimitiveArraySerializer", "long[]": "typeutils.base.array.LongPrimitiveArraySerializer",
	"short[]": "typeutils.base.array.ShortPrimitiveArraySerializer", "java.lang.String[]": "typeutils.base.array.StringArraySerializer",
}

// parseTypeExpr turns a type expression back into the serializer snapshot
// tree the decoders walk; "bytes" is nil (shown as hex).
func (t *Table) parseTypeExpr(expr string) (*SerializerSnapshot, error) {
	s, rest, err := t.parseExpr(expr, 0)
	if err == nil && rest != "" {
		err = fmt.Errorf("type expression %q: %q after the type", expr, rest)
	}
	return s, err
}

func (t *Table) parseExpr(e string, depth int) (*SerializerSnapshot, string, error) {
	if depth > 16 {
		return nil, "", errors.New("type expression nested deeper than 16")
	}
	end := strings.IndexAny(e, "(),")
	if end < 0 {
		end = len(e)
	}
	name, rest := e[:end], e[end:]
	if name == "bytes" {
		return nil, rest, nil
	}
	leaf, ok := t.exprs[name]
	if !ok {
		return nil, "", fmt.Errorf("unknown type %q in a Flink type expression", name)
	}
	s := &SerializerSnapshot{Class: leaf.Class, Kryo5: leaf.Kryo5, OuterVersion: leaf.OuterVersion, table: t}
	if !strings.HasPrefix(rest, "(") {
		return s, rest, nil
	}
	rest = rest[1:]
	for {
		c, r, err := t.parseExpr(rest, depth+1)
		if err != nil {
			return nil, "", err
		}
		s.Nested = append(s.Nested, c)
		switch {
		case strings.HasPrefix(r, ","):
			rest = r[1:]
		case strings.HasPrefix(r, ")"):
			return s, r[1:], nil
		default:
			return nil, "", fmt.Errorf("unbalanced type expression")
		}
	}
}

// Codec decodes and hashes values of one serializer.
type Codec struct{ S *SerializerSnapshot }

// Decode renders the bytes of exactly one value.
func (c Codec) Decode(b []byte) (any, error) {
	if c.S == nil {
		return "0x" + hex.EncodeToString(b), nil
	}
	if len(b) == 1 && b[0] == 0 && KindOf(c.S) == "VoidNamespace" {
		return nil, nil // every entry of a state without namespaces has one
	}
	r := wire.NewReader(b, "value", 0)
	v := DecodeAny(r, c.S, 0)
	if r.BySchema != nil && (r.Err != nil || r.Remaining() != 0) && !errors.Is(r.Err, snapshot.ErrNotDecoded) {
		r.Err = r.BySchema
	}
	if nd := (*snapshot.NotDecodedError)(nil); errors.As(r.Err, &nd) {
		// A part no decoder walks leaves the whole value undecoded: its
		// class is the value's own.
		nd.Class = c.valueClass()
		return nil, nd
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Remaining() != 0 {
		return nil, fmt.Errorf("%d bytes after the value", r.Remaining())
	}
	return v, nil
}

// valueClass is the class a value of the codec is tagged with when it is
// not decoded.
func (c Codec) valueClass() string {
	if c.S.TypeClass != "" {
		return c.S.TypeClass
	}
	return c.S.Name()
}

// DecodeScalar decodes, without allocating, the values Decode makes an
// integer, a boolean, a null or an ASCII string (snapshot.ScalarDecoder).
func (c Codec) DecodeScalar(b []byte) (snapshot.Scalar, bool) {
	var s snapshot.Scalar
	switch KindOf(c.S) {
	case "Long":
		if len(b) != 8 {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarInt, Int: int64(binary.BigEndian.Uint64(b))}
	case "Integer":
		if len(b) != 4 {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarInt, Int: int64(int32(binary.BigEndian.Uint32(b)))}
	case "Short":
		if len(b) != 2 {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarInt, Int: int64(int16(binary.BigEndian.Uint16(b)))}
	case "Byte":
		if len(b) != 1 {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarInt, Int: int64(int8(b[0]))}
	case "Boolean":
		if len(b) != 1 || b[0] > 1 {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarBool, Int: int64(b[0])}
	case "String":
		r := wire.Reader{Buf: b, File: "value"}
		n := ReadVarUint(&r, "string length")
		switch {
		case r.Err != nil:
			return s, false
		case n == 0:
			return s, r.Remaining() == 0 // null
		case n-1 != uint64(r.Remaining()):
			return s, false
		}
		str := b[r.Off:]
		if !ascii(str) {
			return s, false
		}
		s = snapshot.Scalar{Kind: snapshot.ScalarString, Str: str}
	default:
		return s, false
	}
	return s, true
}

// ascii reports whether b is all ASCII, a word at a time: the test that
// lets a string value's bytes stand for its text, on every string dumped.
func ascii(b []byte) bool {
	for ; len(b) >= 8; b = b[8:] {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

var errNoHash = fmt.Errorf("%w: stateutil does not know the Java hashCode of this Flink type", keygroup.ErrUnknownKeyType)

// HashCode is the Java hashCode of the key b encodes.
func (c Codec) HashCode(b []byte) (int32, error) {
	if c.S == nil {
		return 0, errNoHash
	}
	r := wire.NewReader(b, "key", 0)
	h, err := hashAny(r, c.S, 0)
	if err != nil {
		return 0, err
	}
	if r.Err != nil {
		return 0, r.Err
	}
	if r.Remaining() != 0 {
		return 0, fmt.Errorf("%d bytes after the key", r.Remaining())
	}
	return h, nil
}

func hashAny(r *wire.Reader, s *SerializerSnapshot, depth int) (int32, error) {
	if depth > 16 {
		return 0, errors.New("key nested deeper than 16")
	}
	switch KindOf(s) {
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return hashAny(r, s.Nested[0], depth+1)
		}
	case "Long":
		return keygroup.HashInt64(r.I64("long")), nil
	case "Integer":
		return r.I32("int"), nil
	case "Short":
		return int32(r.I16("short")), nil
	case "Byte":
		return int32(int8(r.U8("byte"))), nil
	case "Char":
		return int32(r.U16("char")), nil
	case "Boolean":
		if r.Bool("boolean") {
			return 1231, nil
		}
		return 1237, nil
	case "Double":
		return keygroup.HashInt64(javaDoubleBits(r.F64("double"))), nil
	case "String":
		v := ReadStringValue(r)
		s, _ := v.(string)
		return keygroup.HashString(s), nil
	case "Tuple":
		if strings.Contains(s.Name(), "CaseClass") || len(s.Nested) == 0 {
			break
		}
		// Flink's TupleN.hashCode: 31*h + field hash, over the fields.
		var h int32
		for i, f := range s.Nested {
			fh, err := hashAny(r, f, depth+1)
			if err != nil {
				return 0, err
			}
			if i == 0 {
				h = fh
			} else {
				h = 31*h + fh
			}
		}
		return h, nil
	}
	if h, ok := hashMore(r, s); ok { // codecs_hash.go
		return h, nil
	}
	if f := familyOf(s); f != nil && f.Hash != nil {
		if h, ok := f.Hash(r, s); ok {
			return h, nil
		}
	}
	return 0, fmt.Errorf("%w (%s)", errNoHash, s.Name())
}

// DecodeAny decodes one value into JSON-compatible Go values.
func DecodeAny(r *wire.Reader, s *SerializerSnapshot, depth int) any {
	if depth > 16 {
		r.Fail("values nested deeper than 16")
		return nil
	}
	nested := func(from int) []any {
		out := []any{}
		for _, c := range s.Nested[from:] {
			out = append(out, DecodeAny(r, c, depth+1))
		}
		return out
	}
	switch k := KindOf(s); k {
	case "Long", "Integer", "Short", "Byte", "Boolean", "Double", "Float", "String", "VoidNamespace":
		return DecodeValue(r, s, depth)
	case "Char":
		return string(rune(r.U16("char")))
	case "BigInteger", "BigDecimal", "Instant", "LocalDate", "LocalTime", "LocalDateTime", "SqlTimestamp", "Date", "SqlDate", "SqlTime":
		return decodeTemporal(r, k)
	case "BooleanValue", "ByteValue", "CharValue", "DoubleValue", "FloatValue", "IntValue", "LongValue", "ShortValue", "StringValue", "NullValue", "CopyableValue", "Value", "Void":
		return decodeValueType(r, s, k)
	case "SingleThreadChecking", "TtlAware":
		if len(s.Nested) == 1 {
			return DecodeAny(r, s.Nested[0], depth+1)
		}
	case "byte[]":
		return "0x" + hex.EncodeToString(r.Bytes32("byte array"))
	case "GlobalWindow":
		// Flink writes a 0 and reads past whatever is there.
		at := r.Pos()
		if b := r.U8("global window"); r.Err == nil && b != 0 {
			r.FailAt(at, "global window byte %d, Flink writes 0", b)
		}
		return "GlobalWindow"
	case "TimeWindow":
		return map[string]any{"start": r.I64("window start"), "end": r.I64("window end")}
	case "IntEnum":
		at := r.Pos()
		i := r.I32("enum ordinal")
		if len(s.Constants) == 0 || r.Err != nil {
			return i
		}
		if i < 0 || int(i) >= len(s.Constants) {
			r.FailAt(at, "enum ordinal %d of %d constants", i, len(s.Constants))
			return nil
		}
		return s.Constants[i]
	case "Pojo":
		if len(s.Fields) == len(s.Nested) {
			// A field no decoder walks stops the walk there, not decoded;
			// the flags and the fields before it are still checked.
			v, _ := walkPojo(r, s, depth, true)
			return v
		}
	case "Row":
		if len(s.Nested) > 0 {
			return walkRow(r, s, depth, true)
		}
	case "GenericArray":
		if len(s.Nested) == 1 {
			n := r.Count32(1, "array length")
			out := make([]any, 0, n)
			for i := 0; i < n && r.Err == nil; i++ {
				var v any
				if r.Bool("array element flag") {
					if v = DecodeAny(r, s.Nested[0], depth+1); v == nil && r.Err == nil {
						// A present element shown as null would be written back absent.
						NotDecoded(r, s)
						return nil
					}
				}
				out = append(out, v)
			}
			return out
		}
	case "Tuple":
		if len(s.Nested) > 0 {
			return nested(0)
		}
	case "Timer":
		if len(s.Nested) == 2 {
			ts := r.I64("timer timestamp") ^ math.MinInt64
			f := nested(0)
			return map[string]any{"timestamp": ts, "key": f[0], "namespace": f[1]}
		}
	case "TTL":
		if a, b, tsFirst, ok := ttlParts(s); ok {
			if tsFirst {
				ts := DecodeAny(r, a, depth+1)
				return map[string]any{"last_access": ts, "value": DecodeAny(r, b, depth+1)}
			}
			v := DecodeAny(r, a, depth+1)
			return map[string]any{"last_access": DecodeAny(r, b, depth+1), "value": v}
		}
	case "Option":
		if len(s.Nested) == 1 {
			if r.U8("option flag") == 0 {
				return nil
			}
			v := DecodeAny(r, s.Nested[0], depth+1)
			if v == nil && r.Err == nil {
				// Some(null), Some(None): written back, it would be None.
				NotDecoded(r, s)
			}
			return v
		}
	case "Tuple0":
		at := r.Pos()
		if b := r.U8("Tuple0"); r.Err == nil && b != tuple0Byte {
			r.FailAt(at, "Tuple0 byte %d, Flink writes %d", b, tuple0Byte)
		}
		return []any{}
	case "Union":
		if len(s.Nested) == 2 {
			side := unionSide(r)
			return map[string]any{unionSides[side]: DecodeAny(r, s.Nested[side], depth+1)}
		}
	case "Either":
		if len(s.Nested) == 2 {
			if r.Bool("either flag") {
				return map[string]any{"left": DecodeAny(r, s.Nested[0], depth+1)}
			}
			return map[string]any{"right": DecodeAny(r, s.Nested[1], depth+1)}
		}
	case "List":
		if len(s.Nested) == 1 {
			n := r.Count32(0, "list size")
			out := make([]any, 0, n)
			for i := 0; i < n && r.Err == nil; i++ {
				out = append(out, DecodeAny(r, s.Nested[0], depth+1))
			}
			return out
		}
	case "Nullable":
		if v, ok := walkNullable(r, s, depth, true); ok {
			return v
		}
	case "Set":
		if v, ok := walkSet(r, s, depth, true); ok {
			return v
		}
	case "Entry":
		if len(s.Nested) == 2 {
			k := DecodeAny(r, s.Nested[0], depth+1)
			return map[string]any{"key": k, "value": DecodeAny(r, s.Nested[1], depth+1)}
		}
	case "Broadcast":
		if len(s.Nested) == 2 {
			n := r.Count32(2, "broadcast map size")
			out := make([]any, 0, n)
			for i := 0; i < n && r.Err == nil; i++ {
				k := DecodeAny(r, s.Nested[0], depth+1)
				out = append(out, []any{k, DecodeAny(r, s.Nested[1], depth+1)})
			}
			return out
		}
	case "Map":
		if len(s.Nested) == 2 {
			n := r.Count32(2, "map size")
			out := make(map[string]any, n)
			for i := 0; i < n && r.Err == nil; i++ {
				k := DecodeAny(r, s.Nested[0], depth+1)
				var v any
				if !r.Bool("map value null flag") {
					v = DecodeAny(r, s.Nested[1], depth+1)
				}
				out[mapKeyText(k)] = v
			}
			return out
		}
	default:
		if f := familyOf(s); f != nil {
			if f.Walk == nil {
				break
			}
			if v, ok := f.Walk(r, s, depth, true); ok {
				return v
			}
			break
		}
		if e, ok := strings.CutPrefix(KindOf(s), "Array:"); ok {
			return walkArray(r, e, true)
		}
	}
	NotDecoded(r, s)
	return nil
}

// NotDecoded stops r at a value of s, a serializer no decoder here
// implements, or none the snapshot gives (s nil): not damage, but the end
// of what can be decoded.
func NotDecoded(r *wire.Reader, s *SerializerSnapshot) {
	if r.Err == nil {
		e := &snapshot.NotDecodedError{Serializer: s.Name()}
		if s != nil {
			e.ValueClass = s.TypeClass
		}
		r.Err = e
	}
	r.Off = len(r.Buf)
}

// mapKeyText renders a map key as a JSON object key: a string as it is,
// anything else as its JSON text (as stateutil dump renders map state).
func mapKeyText(k any) string {
	if s, ok := k.(string); ok {
		return s
	}
	b, err := json.Marshal(k)
	if err != nil {
		return fmt.Sprint(k)
	}
	return string(b)
}

// Proxied gives a nested snapshot the proxy framing a keyed header stores
// a key serializer with (proxy version 2, then the versioned snapshot), so
// that it can be written as one.
func Proxied(n *SerializerSnapshot) *SerializerSnapshot {
	if len(n.Versioned) == 0 {
		return n
	}
	raw := binary.BigEndian.AppendUint32(nil, 2)
	raw = append(raw, n.Versioned...)
	r := wire.NewReader(raw, "", 0)
	s := (&SnapReader{R: r, Table: n.table}).SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil || s == nil || r.Remaining() != 0 {
		return n
	}
	return s
}
