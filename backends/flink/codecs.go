package flink

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

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
		if f.expr != nil {
			if e, ok := f.expr(s, serKind(s), nested); ok {
				return e
			}
		}
		return "bytes"
	}
	switch k := serKind(s); k {
	case "Long", "Integer", "String", "Boolean", "Double", "Float", "Short", "Byte":
		return "java.lang." + k
	case "Char":
		return "java.lang.Character"
	case "byte[]":
		return "byte[]"
	case "VoidNamespace", "Void":
		return "void"
	case "GlobalWindow", "TimeWindow":
		return k
	case "IntEnum":
		return "enum"
	case "Pojo":
		return "pojo"
	case "Row", "GenericArray":
		if len(s.Nested) > 0 {
			return map[string]string{"Row": "row", "GenericArray": "array"}[k] + "(" + nested() + ")"
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

// arrayExprs names the arrays of primitives and strings.
var arrayExprs = map[string]string{
	"Boolean": "boolean[]", "Char": "char[]", "Double": "double[]", "Float": "float[]",
	"Integer": "int[]", "Long": "long[]", "Short": "short[]", "String": "java.lang.String[]",
}

// typeOf maps a serializer onto a snapshot type.
func typeOf(s *SerializerSnapshot) snapshot.Type {
	t := snapshot.Type{Name: typePrefix + typeExpr(s)}
	if s != nil {
		t.Class = s.Name()
		// A nested snapshot (a map's key, a list's element) carries its
		// bytes framed as a top-level one, so that CodecFactory rebuilds
		// types no type expression spells (RowData, POJO, Avro).
		t.SerializerSnapshot = proxied(s).Raw
	}
	return t
}

// typePrefix starts the name of every Flink type.
const typePrefix = "flink:"

// stateTypePrefix names the element type of an operator state whose
// byte[] elements a family decodes by the state's name (connectors keep
// their state so): "flink:connector:" + the state's name.
const stateTypePrefix = "connector:"

// stateElementType is the element type of operator state name with
// elements of s, when a family decodes the byte[] elements of states of
// that name.
func (t *serializerTable) stateElementType(name string, s *SerializerSnapshot) (snapshot.Type, bool) {
	if _, ok := t.stateCodecs[name]; !ok || serKind(s) != "byte[]" {
		return snapshot.Type{}, false
	}
	typ := typeOf(s)
	typ.Name = typePrefix + stateTypePrefix + name
	return typ, true
}

// codecFactory builds the codec of a Flink type (a name starting
// "flink:"): from its serializer snapshot's bytes when they parse to the
// same type, else from the type expression in its name.
func (t *serializerTable) codecFactory(typ snapshot.Type) (snapshot.Codec, error) {
	expr, ok := strings.CutPrefix(typ.Name, typePrefix)
	if !ok {
		return nil, fmt.Errorf("not a Flink type")
	}
	if state, ok := strings.CutPrefix(expr, stateTypePrefix); ok {
		if c, ok := t.stateCodecs[state]; ok {
			return c(), nil
		}
		return nil, fmt.Errorf("no codec decodes the elements of operator state %q", state)
	}
	if len(typ.SerializerSnapshot) > 0 {
		r := newReader(typ.SerializerSnapshot, "serializer snapshot", 0)
		sr := &snapReader{r: r, table: t}
		s := sr.snapshotProxy(func(q int) bool { return q == len(typ.SerializerSnapshot) })
		if strings.Contains(expr, "kryo5") {
			markKryo5(s)
		}
		if r.err == nil && r.remaining() == 0 && typeExpr(s) == expr {
			return codec{s: s}, nil
		}
	}
	s, err := t.parseTypeExpr(expr)
	if err != nil {
		return nil, err
	}
	return codec{s: s}, nil
}

// coreExprs are the snapshot classes that serKind maps back onto each
// flink-core leaf of a type expression; the families add theirs.
var coreExprs = map[string]string{
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
	"either": "EitherSerializer", "timer": "TimerSerializerSnapshot", "broadcast": broadcastClass, "entry": broadcastEntryClass,
	"ttl": "TtlSerializerSnapshot", "nullable": "runtime.NullableSerializer$NullableSerializerSnapshot",
	"set":       "typeutils.base.SetSerializerSnapshot",
	"boolean[]": "typeutils.base.array.BooleanPrimitiveArraySerializer", "char[]": "typeutils.base.array.CharPrimitiveArraySerializer",
	"double[]": "typeutils.base.array.DoublePrimitiveArraySerializer", "float[]": "typeutils.base.array.FloatPrimitiveArraySerializer",
	"int[]": "typeutils.base.array.IntPrimitiveArraySerializer", "long[]": "typeutils.base.array.LongPrimitiveArraySerializer",
	"short[]": "typeutils.base.array.ShortPrimitiveArraySerializer", "java.lang.String[]": "typeutils.base.array.StringArraySerializer",
}

// parseTypeExpr turns a type expression back into the serializer snapshot
// tree the decoders walk; "bytes" is nil (shown as hex).
func (t *serializerTable) parseTypeExpr(expr string) (*SerializerSnapshot, error) {
	s, rest, err := t.parseExpr(expr, 0)
	if err == nil && rest != "" {
		err = fmt.Errorf("type expression %q: %q after the type", expr, rest)
	}
	return s, err
}

func (t *serializerTable) parseExpr(e string, depth int) (*SerializerSnapshot, string, error) {
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
	s := &SerializerSnapshot{Class: leaf.class, Kryo5: leaf.kryo5, table: t}
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

// codec decodes and hashes values of one serializer.
type codec struct{ s *SerializerSnapshot }

// Decode renders the bytes of exactly one value.
func (c codec) Decode(b []byte) (any, error) {
	if c.s == nil {
		return "0x" + hex.EncodeToString(b), nil
	}
	if len(b) == 1 && b[0] == 0 && serKind(c.s) == "VoidNamespace" {
		return nil, nil // every entry of a state without namespaces has one
	}
	r := newReader(b, "value", 0)
	v := decodeAny(r, c.s, 0)
	if nd := (*snapshot.NotDecodedError)(nil); errors.As(r.err, &nd) {
		// A part no decoder walks leaves the whole value undecoded: its
		// class is the value's own.
		nd.Class = c.valueClass()
		return nil, nd
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.remaining() != 0 {
		return nil, fmt.Errorf("%d bytes after the value", r.remaining())
	}
	return v, nil
}

// valueClass is the class a value of the codec is tagged with when it is
// not decoded.
func (c codec) valueClass() string {
	if c.s.TypeClass != "" {
		return c.s.TypeClass
	}
	return c.s.Name()
}

// DecodeScalar decodes, without allocating, the values Decode makes an
// integer, a boolean, a null or an ASCII string (snapshot.ScalarDecoder).
func (c codec) DecodeScalar(b []byte) (snapshot.Scalar, bool) {
	var s snapshot.Scalar
	switch serKind(c.s) {
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
		r := reader{buf: b, file: "value"}
		n := readVarUint(&r, "string length")
		switch {
		case r.err != nil:
			return s, false
		case n == 0:
			return s, r.remaining() == 0 // null
		case n-1 != uint64(r.remaining()):
			return s, false
		}
		str := b[r.off:]
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
func (c codec) HashCode(b []byte) (int32, error) {
	if c.s == nil {
		return 0, errNoHash
	}
	r := newReader(b, "key", 0)
	h, err := hashAny(r, c.s, 0)
	if err != nil {
		return 0, err
	}
	if r.err != nil {
		return 0, r.err
	}
	if r.remaining() != 0 {
		return 0, fmt.Errorf("%d bytes after the key", r.remaining())
	}
	return h, nil
}

func hashAny(r *reader, s *SerializerSnapshot, depth int) (int32, error) {
	if depth > 16 {
		return 0, errors.New("key nested deeper than 16")
	}
	switch serKind(s) {
	case "Long":
		return keygroup.HashInt64(r.i64("long")), nil
	case "Integer":
		return r.i32("int"), nil
	case "Short":
		return int32(r.i16("short")), nil
	case "Byte":
		return int32(int8(r.u8("byte"))), nil
	case "Char":
		return int32(r.u16("char")), nil
	case "Boolean":
		if r.bool("boolean") {
			return 1231, nil
		}
		return 1237, nil
	case "Double":
		v := r.f64("double")
		if v != v {
			v = math.NaN() // Java canonicalizes NaN in Double.hashCode
		}
		bits := math.Float64bits(v)
		return int32(bits ^ bits>>32), nil
	case "String":
		v := readStringValue(r)
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
	if f := familyOf(s); f != nil && f.hash != nil {
		if h, ok := f.hash(r, s); ok {
			return h, nil
		}
	}
	return 0, fmt.Errorf("%w (%s)", errNoHash, s.Name())
}

// decodeAny decodes one value into JSON-compatible Go values.
func decodeAny(r *reader, s *SerializerSnapshot, depth int) any {
	if depth > 16 {
		r.fail("values nested deeper than 16")
		return nil
	}
	nested := func(from int) []any {
		out := []any{}
		for _, c := range s.Nested[from:] {
			out = append(out, decodeAny(r, c, depth+1))
		}
		return out
	}
	switch k := serKind(s); k {
	case "Long", "Integer", "Short", "Byte", "Boolean", "Double", "Float", "String", "VoidNamespace":
		return decodeValue(r, s, depth)
	case "Char":
		return string(rune(r.u16("char")))
	case "byte[]":
		return "0x" + hex.EncodeToString(r.bytes32("byte array"))
	case "GlobalWindow":
		// Flink writes a 0 and reads past whatever is there.
		at := r.pos()
		if b := r.u8("global window"); r.err == nil && b != 0 {
			r.failAt(at, "global window byte %d, Flink writes 0", b)
		}
		return "GlobalWindow"
	case "TimeWindow":
		return map[string]any{"start": r.i64("window start"), "end": r.i64("window end")}
	case "IntEnum":
		at := r.pos()
		i := r.i32("enum ordinal")
		if len(s.Constants) == 0 || r.err != nil {
			return i
		}
		if i < 0 || int(i) >= len(s.Constants) {
			r.failAt(at, "enum ordinal %d of %d constants", i, len(s.Constants))
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
			n := r.count32(1, "array length")
			out := make([]any, 0, n)
			for i := 0; i < n && r.err == nil; i++ {
				var v any
				if r.bool("array element flag") {
					v = decodeAny(r, s.Nested[0], depth+1)
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
			ts := r.i64("timer timestamp") ^ math.MinInt64
			f := nested(0)
			return map[string]any{"timestamp": ts, "key": f[0], "namespace": f[1]}
		}
	case "TTL":
		if a, b, tsFirst, ok := ttlParts(s); ok {
			if tsFirst {
				ts := decodeAny(r, a, depth+1)
				return map[string]any{"last_access": ts, "value": decodeAny(r, b, depth+1)}
			}
			v := decodeAny(r, a, depth+1)
			return map[string]any{"last_access": decodeAny(r, b, depth+1), "value": v}
		}
	case "Option":
		if len(s.Nested) == 1 {
			if r.u8("option flag") == 0 {
				return nil
			}
			v := decodeAny(r, s.Nested[0], depth+1)
			if v == nil && r.err == nil {
				// Some(null), Some(None): written back, it would be None.
				notDecoded(r, s)
			}
			return v
		}
	case "Tuple0":
		at := r.pos()
		if b := r.u8("Tuple0"); r.err == nil && b != tuple0Byte {
			r.failAt(at, "Tuple0 byte %d, Flink writes %d", b, tuple0Byte)
		}
		return []any{}
	case "Union":
		if len(s.Nested) == 2 {
			side := unionSide(r)
			return map[string]any{unionSides[side]: decodeAny(r, s.Nested[side], depth+1)}
		}
	case "Either":
		if len(s.Nested) == 2 {
			if r.bool("either flag") {
				return map[string]any{"left": decodeAny(r, s.Nested[0], depth+1)}
			}
			return map[string]any{"right": decodeAny(r, s.Nested[1], depth+1)}
		}
	case "List":
		if len(s.Nested) == 1 {
			n := r.count32(0, "list size")
			out := make([]any, 0, n)
			for i := 0; i < n && r.err == nil; i++ {
				out = append(out, decodeAny(r, s.Nested[0], depth+1))
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
			k := decodeAny(r, s.Nested[0], depth+1)
			return map[string]any{"key": k, "value": decodeAny(r, s.Nested[1], depth+1)}
		}
	case "Broadcast":
		if len(s.Nested) == 2 {
			n := r.count32(2, "broadcast map size")
			out := make([]any, 0, n)
			for i := 0; i < n && r.err == nil; i++ {
				k := decodeAny(r, s.Nested[0], depth+1)
				out = append(out, []any{k, decodeAny(r, s.Nested[1], depth+1)})
			}
			return out
		}
	case "Map":
		if len(s.Nested) == 2 {
			n := r.count32(2, "map size")
			out := make(map[string]any, n)
			for i := 0; i < n && r.err == nil; i++ {
				k := decodeAny(r, s.Nested[0], depth+1)
				var v any
				if !r.bool("map value null flag") {
					v = decodeAny(r, s.Nested[1], depth+1)
				}
				out[mapKeyText(k)] = v
			}
			return out
		}
	default:
		if f := familyOf(s); f != nil {
			if f.walk == nil {
				break
			}
			if v, ok := f.walk(r, s, depth, true); ok {
				return v
			}
			break
		}
		if e, ok := strings.CutPrefix(serKind(s), "Array:"); ok {
			return walkArray(r, e, true)
		}
	}
	notDecoded(r, s)
	return nil
}

// notDecoded stops r at a value of s, a serializer no decoder here
// implements, or none the snapshot gives (s nil): not damage, but the end
// of what can be decoded.
func notDecoded(r *reader, s *SerializerSnapshot) {
	if r.err == nil {
		e := &snapshot.NotDecodedError{Serializer: s.Name()}
		if s != nil {
			e.ValueClass = s.TypeClass
		}
		r.err = e
	}
	r.off = len(r.buf)
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
