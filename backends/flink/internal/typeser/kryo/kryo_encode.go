package kryo

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/snapshot"
)

// kryoOut writes one Kryo value from its JSON (kryo.go), as Kryo does.
type kryoOut struct {
	b     []byte
	v5    bool
	regs  []typeser.KryoRegistration
	names map[string]int // name ids given
	refs  []string       // the class of each reference id
	// delimited: the value ends where its bytes do, so that its last
	// object may be one kept as bytes (kryo.go's keepTail).
	delimited bool
	tailEnd   int // where the object kept as bytes ends, -1 for none
	schemas   *snapshot.Schemas
}

// encodeKryo appends the value v of a KryoSerializer to b; delimited says
// nothing follows the value.
func encodeKryo(b []byte, s *typeser.SerializerSnapshot, v any, delimited bool) ([]byte, error) {
	start := len(b)
	k := &kryoOut{b: b, v5: s.Kryo5, regs: s.KryoRegistrations, names: map[string]int{}, delimited: delimited, tailEnd: -1, schemas: s.Schemas()}
	var err error
	if s.TypeClass == kryoOptional && !kryoTaggedAs(v, kryoOptional) {
		// Its value (kryo_schema.go).
		k.class(s.TypeClass)
		err = k.object(s.TypeClass, v, true, 0)
	} else if k.untypedUserValue(s.TypeClass, v) {
		return nil, fmt.Errorf("a value of class %s is written by its fields, which stateutil knows from --kryo-classes only", s.TypeClass)
	} else if k.declares(s.TypeClass) && kryoUntaggedValue(v) {
		k.class(s.TypeClass)
		err = k.object(s.TypeClass, v, true, 0)
	} else {
		err = k.classAndObject(v, 0)
	}
	if err != nil {
		return nil, err
	}
	if k.tailEnd >= 0 {
		if k.tailEnd != len(k.b) {
			return nil, errors.New(`an object kept as its bytes ({"@class": .., "@bytes": ..}) must be the last thing of the Kryo value`)
		}
		r := wire.NewReader(k.b[start:], "value", 0)
		if decodeKryo(r, s, true); r.Err != nil {
			return nil, fmt.Errorf("the bytes kept of an object are not what Kryo writes there: %w", r.Err)
		}
	}
	return k.b, nil
}

// keptBytes writes an object of class kept as its bytes.
func (k *kryoOut) keptBytes(class string, b kryoKeptBytes, depth int) error {
	switch {
	case kryoDecoded(class, k.v5):
		return fmt.Errorf("values of class %s are decoded, not kept as bytes", class)
	case !k.delimited || depth == 0 || k.tailEnd >= 0 || len(b) == 0:
		return fmt.Errorf(`an object of class %s kept as its bytes must be nested in the Kryo value, and its last thing`, class)
	}
	k.b = append(k.b, b...)
	k.tailEnd = len(k.b)
	return nil
}

func kryoDecoded(class string, v5 bool) bool {
	_, ok := kryoSerializerIn(class, v5)
	return ok
}

// kryoKeptBytes are the bytes of an object kept as bytes.
type kryoKeptBytes []byte

// kryoDeclared reports whether values of class are decoded, so that an
// untagged value is of that class when the snapshot declares it.
func kryoDeclared(class string) bool {
	_, ok := kryoSerializerOf(class)
	_, wrapper := kryoPrimitives[class]
	return ok || wrapper || class == "java.lang.String"
}

// kryoUntaggedValue reports whether v is neither null, nor tagged, nor a
// back-reference.
func kryoUntaggedValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case *kryoMap:
		return x.Plain
	case map[string]any:
		_, tagged := x["@class"]
		_, isRef := kryoRefID(x)
		return !tagged && !isRef
	}
	return true
}

func (k *kryoOut) varint(v uint64) { k.b = typeser.AppendVarUint(k.b, v) }

func zigzag64(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

// varlong writes Kryo's variable-length long: eight bytes of 7 bits, a
// ninth of 8.
func (k *kryoOut) varlong(v uint64) {
	for i := 0; i < 8 && v >= 0x80; i++ {
		k.b = append(k.b, byte(v)|0x80)
		v >>= 7
	}
	k.b = append(k.b, byte(v))
}

// flagged writes Kryo 5's varIntFlag.
func (k *kryoOut) flagged(flag bool, v uint64) {
	first := byte(v & 0x3F)
	if flag {
		first |= 0x80
	}
	if v>>6 == 0 {
		k.b = append(k.b, first)
		return
	}
	k.b = append(k.b, first|0x40)
	k.varint(v >> 6)
}

func (k *kryoOut) fixed(n int, v uint64) {
	for i := 0; i < n; i++ {
		if k.v5 {
			k.b = append(k.b, byte(v>>(8*i)))
		} else {
			k.b = append(k.b, byte(v>>(8*(n-1-i))))
		}
	}
}

func (k *kryoOut) string(s string, name bool) {
	units := utf16.Encode([]rune(s))
	ascii := len(units) > 1 && (len(units) <= kryoASCIIMax(k.v5) || name && k.v5)
	for _, u := range units {
		ascii = ascii && u < 0x80
	}
	if ascii {
		k.b = append(k.b, s...)
		k.b[len(k.b)-1] |= 0x80
		return
	}
	k.flagged(true, uint64(len(units))+1)
	for _, c := range units {
		switch {
		case c < 0x80:
			k.b = append(k.b, byte(c))
		case c < 0x800:
			k.b = append(k.b, 0xC0|byte(c>>6), 0x80|byte(c&0x3F))
		default:
			k.b = append(k.b, 0xE0|byte(c>>12), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
		}
	}
}

// class writes a class tag.
func (k *kryoOut) class(c string) {
	if i := slices.Index(kryoNames, c); i >= 0 {
		k.varint(uint64(i) + 2)
		return
	}
	if i := slices.IndexFunc(k.regs, func(r typeser.KryoRegistration) bool { return r.Class == c }); i >= 0 {
		k.varint(uint64(kryoFirstSnapshotID+i) + 2)
		return
	}
	if id, ok := flinkJDKIDOf(c); ok { // kryo_chill.go
		k.varint(uint64(id) + 2)
		return
	}
	if id, ok := chillIDOf(c); ok && !k.v5 {
		k.varint(uint64(id) + 2)
		return
	}
	k.b = append(k.b, 1)
	if id, ok := k.names[c]; ok {
		k.varint(uint64(id))
		return
	}
	k.names[c] = len(k.names)
	k.varint(uint64(k.names[c]))
	k.string(c, true)
}

// kryoSplit is the class and the payload of a JSON value.
func kryoSplit(v any) (class string, payload any, err error) {
	switch x := v.(type) {
	case *kryoMap:
		return x.Class, x, nil
	case map[string]any:
		c, tagged := x["@class"].(string)
		if !tagged {
			return "java.util.HashMap", x, nil
		}
		if text, kept := x["@bytes"].(string); kept && len(x) == 2 {
			h, isHex := strings.CutPrefix(text, "0x")
			b, err := hex.DecodeString(h)
			if !isHex || err != nil {
				return "", nil, fmt.Errorf(`"@bytes": want 0x-prefixed hex, not %q`, text)
			}
			return c, kryoKeptBytes(b), nil
		}
		val, ok := x["@value"]
		attr, hasAttr := x[kryoAttributes[c]]
		for key := range x {
			if key != "@class" && key != "@value" && (key != "@keys" || x["@keys"] != "json") && (key != kryoAttributes[c] || !hasAttr) {
				ok = false
			}
		}
		if !ok {
			return "", nil, fmt.Errorf(`want {"@class": .., "@value": ..}, not %v`, v)
		}
		if x["@keys"] == "json" {
			val = map[string]any{"@keys": "json", "@value": val}
		}
		if hasAttr {
			val = kryoAttributed{Value: val, Attr: attr}
		}
		return c, val, nil
	}
	return kryoClassOf(v, nil), v, nil
}

// classAndObject writes writeClassAndObject of v.
func (k *kryoOut) classAndObject(v any, depth int) error {
	if v == nil {
		k.b = append(k.b, 0)
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		if id, isRef := kryoRefID(m); isRef {
			if id < 0 || id >= int64(len(k.refs)) {
				return fmt.Errorf("reference to object %d of %d", id, len(k.refs))
			}
			k.class(k.refs[id])
			k.varint(uint64(id) + 2)
			return nil
		}
	}
	class, payload, err := kryoSplit(v)
	if err != nil {
		return err
	}
	k.class(class)
	return k.object(class, payload, true, depth)
}

// object writes an object of class (with marker, its reference marker
// first); v is its payload, or a back-reference.
func (k *kryoOut) object(class string, v any, marker bool, depth int) error {
	if depth > 16 {
		return errors.New("a Kryo value nested deeper than 16")
	}
	if kept, ok := v.(kryoKeptBytes); ok {
		return k.keptBytes(class, kept, depth)
	}
	if ok, err := k.extended(class, v, marker, depth); ok { // kryo_schema_encode.go
		return err
	}
	if marker && !k.noRefs(class) {
		if m, ok := v.(map[string]any); ok {
			if id, isRef := kryoRefID(m); isRef {
				if id < 0 || id >= int64(len(k.refs)) || k.refs[id] != class {
					return fmt.Errorf("reference to object %d, not one of class %s", id, class)
				}
				k.varint(uint64(id) + 2)
				return nil
			}
		}
		if v == nil && !chillHoldsNull(class, k.v5) {
			k.b = append(k.b, 0)
			return nil
		}
		k.b = append(k.b, 1)
		k.refs = append(k.refs, class)
	}
	switch class {
	case "java.lang.Integer", "java.lang.Long", "java.lang.Byte", "java.lang.Short":
		n, ok := kryoInteger(v)
		bits := map[string]int{"java.lang.Integer": 32, "java.lang.Long": 64, "java.lang.Byte": 8, "java.lang.Short": 16}[class]
		if !ok || bits < 64 && (n < -1<<(bits-1) || n >= 1<<(bits-1)) {
			return fmt.Errorf("want a %d-bit integer for %s, not %v", bits, class, v)
		}
		switch bits {
		case 32:
			k.varint(uint64(uint32(int32(n)<<1) ^ uint32(int32(n)>>31)))
		case 64:
			k.varlong(zigzag64(n))
		case 8:
			k.b = append(k.b, byte(n))
		default:
			k.fixed(2, uint64(uint16(n)))
		}
		return nil
	case "java.lang.String":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string, not %v", v)
		}
		k.string(s, false)
		return nil
	case "java.lang.Boolean":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want true or false, not %v", v)
		}
		k.b = append(k.b, map[bool]byte{false: 0, true: 1}[b])
		return nil
	case "java.lang.Character":
		s, ok := v.(string)
		units := utf16.Encode([]rune(s))
		if !ok || len(units) != 1 {
			return fmt.Errorf("want one character, not %v", v)
		}
		k.fixed(2, uint64(units[0]))
		return nil
	case "java.lang.Float", "java.lang.Double":
		f, err := kryoFloat(v)
		if err != nil {
			return err
		}
		if class == "java.lang.Float" {
			bits := uint64(math.Float32bits(float32(f)))
			if f != f {
				bits = kryoNaN32
			}
			k.fixed(4, bits)
			return nil
		}
		bits := math.Float64bits(f)
		if f != f {
			bits = kryoNaN64
		}
		k.fixed(8, bits)
		return nil
	}
	ser, ok := kryoSerializerIn(class, k.v5)
	if !ok {
		return fmt.Errorf("values of class %s cannot be written as Kryo", class)
	}
	switch ser {
	case kserCollection, kserSortedCollection:
		return k.collection(v, ser == kserSortedCollection, depth)
	case kserMap, kserSortedMap:
		return k.mapOf(v, ser == kserSortedMap, depth)
	case kserEmpty:
		if n, _ := kryoLen(v); n != 0 {
			return fmt.Errorf("%s holds nothing, not %v", class, v)
		}
		return nil
	case kserSingleton:
		vs, ok := v.([]any)
		if !ok || len(vs) != 1 {
			return fmt.Errorf("want an array of one element for %s, not %v", class, v)
		}
		return k.classAndObject(vs[0], depth+1)
	case kserSingletonMap:
		keys, vals, err := kryoEntries(v)
		if err != nil || len(keys) != 1 {
			return fmt.Errorf("want an object of one entry for %s, not %v", class, v)
		}
		if err := k.classAndObject(keys[0], depth+1); err != nil {
			return err
		}
		return k.classAndObject(vals[0], depth+1)
	case kserBigInteger:
		n, ok := new(big.Int).SetString(fmt.Sprint(v), 10)
		if !ok {
			return fmt.Errorf("want an integer for %s, not %v", class, v)
		}
		k.bigInteger(n)
		return nil
	case kserBigDecimal:
		u, scale, err := parseJavaBigDecimal(fmt.Sprint(v))
		if err != nil {
			return err
		}
		k.bigInteger(u)
		k.varint(uint64(uint32(scale<<1) ^ uint32(scale>>31)))
		return nil
	case kserDate:
		n, ok := kryoInteger(v)
		if !ok {
			return fmt.Errorf("want milliseconds for %s, not %v", class, v)
		}
		k.varlong(uint64(n))
		return nil
	case kserClass:
		name, ok := v.(string)
		if !ok || name == "" {
			return fmt.Errorf("want a class name, not %v", v)
		}
		wrapper, primitive := name, false
		for w, p := range kryoPrimitives {
			if p == name {
				wrapper, primitive = w, true
			}
		}
		k.class(wrapper)
		if _, isWrapper := kryoPrimitives[wrapper]; isWrapper || !k.v5 {
			k.b = append(k.b, map[bool]byte{false: 0, true: 1}[primitive])
		}
		return nil
	case kserEnum:
		i := slices.Index(kryoEnums[class], fmt.Sprint(v))
		if i < 0 {
			return fmt.Errorf("%v is no constant of %s", v, class)
		}
		k.varint(uint64(i) + 1)
		return nil
	case kserArray:
		return k.array(class, v, depth)
	case kserChillValue, kserChillTuple, kserChillSpecialized, kserChillSymbol, kserTimestamp, kserURI, kserUUID,
		kserArraysAsList, kserBitSet, kserPattern, kserSocketAddress, kserLocale:
		return k.chillObject(class, ser, v, depth)
	}
	return fmt.Errorf("values of class %s cannot be written as Kryo", class)
}

func kryoFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case json.Number:
		return strconv.ParseFloat(x.String(), 64)
	}
	if n, ok := kryoInteger(v); ok {
		return float64(n), nil
	}
	return 0, fmt.Errorf("want a number, not %v", v)
}

func kryoLen(v any) (int, bool) {
	switch x := v.(type) {
	case []any:
		return len(x), true
	case *kryoMap:
		return len(x.Keys), true
	case map[string]any:
		return len(x), true
	}
	return 0, false
}

func (k *kryoOut) collection(v any, sorted bool, depth int) error {
	v, cmp := kryoAttr(v)
	vs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want an array, not %v", v)
	}
	if cmp != nil && !sorted {
		return fmt.Errorf("a comparator %v for a collection that has none", cmp)
	}
	if !k.v5 {
		if sorted {
			if err := k.comparator(cmp); err != nil {
				return err
			}
		}
		k.varint(uint64(len(vs)))
		for _, e := range vs {
			if err := k.classAndObject(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	same := len(vs) > 0 && k.sameClass(vs, depth)
	k.flagged(same, uint64(len(vs))+1)
	if sorted {
		if err := k.comparator(cmp); err != nil {
			return err
		}
	}
	if !same {
		for _, e := range vs {
			if err := k.classAndObject(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	class := ""
	for _, e := range vs {
		if c := kryoClassOf(e, k.refs); e != nil && class == "" {
			class = c
		}
	}
	if class == "" {
		k.b = append(k.b, 0) // every element is null
		return nil
	}
	k.class(class)
	hasNull := containsNil(vs)
	k.b = append(k.b, map[bool]byte{false: 0, true: 1}[hasNull])
	for _, e := range vs {
		payload, err := kryoPayload(e)
		if err != nil {
			return err
		}
		if k.noRefs(class) && hasNull {
			k.b = append(k.b, map[bool]byte{false: 0, true: 1}[e != nil])
			if e == nil {
				continue
			}
			err = k.object(class, payload, false, depth+1)
		} else {
			err = k.object(class, payload, true, depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// kryoPayload is what object writes of an element whose class is written
// once for all: its payload, or the element itself when it is null or a
// back-reference.
func kryoPayload(e any) (any, error) {
	if m, ok := e.(map[string]any); ok {
		if _, isRef := kryoRefID(m); isRef {
			return e, nil
		}
	}
	if e == nil {
		return nil, nil
	}
	_, payload, err := kryoSplit(e)
	return payload, err
}

// sameClass reports whether the elements not null are of one class, as
// Kryo 5 sees them; a back-reference to an object the elements themselves
// hold is resolved by writing them aside first.
func (k *kryoOut) sameClass(vs []any, depth int) bool {
	if !slices.ContainsFunc(vs, func(e any) bool { return kryoClassOf(e, k.refs) == "@ref" }) {
		return kryoSameClass(vs, k.refs)
	}
	aside := &kryoOut{v5: k.v5, regs: k.regs, names: map[string]int{}, refs: slices.Clone(k.refs), delimited: k.delimited, tailEnd: -1, schemas: k.schemas}
	for c, id := range k.names {
		aside.names[c] = id
	}
	refs := aside.refs
	for _, e := range vs {
		if kryoClassOf(e, aside.refs) != "@ref" {
			_ = aside.classAndObject(e, depth+1)
			refs = aside.refs
		}
	}
	return kryoSameClass(vs, refs)
}

// comparator writes a sorted collection's comparator: null for the
// natural order, Comparator.naturalOrder() as its enum, else one without
// fields (its class, a new object).
func (k *kryoOut) comparator(cmp any) error {
	if cmp == nil {
		k.b = append(k.b, 0)
		return nil
	}
	c, _ := cmp.(string)
	if c == kryoNaturalOrder {
		k.class(c)
		return k.object(c, "INSTANCE", true, 1)
	}
	if !slices.Contains(kryoFieldlessComparators, c) {
		return fmt.Errorf("comparator %v: only the natural order, %s and %s are written", cmp, kryoNaturalOrder, strings.Join(kryoFieldlessComparators, ", "))
	}
	k.class(c)
	k.b = append(k.b, 1)
	k.refs = append(k.refs, c)
	return nil
}

// javaSortedEntries puts the String keys of a sorted map from JSON text
// (whose objects keep no order) in the order of its comparator, which is
// the order Kryo writes them in; other keys stay as they are.
func javaSortedEntries(keys, vals []any, cmp any) ([]any, []any) {
	idx := make([]int, len(keys))
	strs := make([][]uint16, len(keys))
	for i, key := range keys {
		s, ok := key.(string)
		if !ok {
			return keys, vals
		}
		idx[i], strs[i] = i, utf16.Encode([]rune(s))
	}
	compare := func(a, b []uint16) int { return slices.Compare(a, b) } // String.compareTo
	switch cmp {
	case "java.util.Collections$ReverseComparator":
		compare = func(a, b []uint16) int { return slices.Compare(b, a) }
	case "java.lang.String$CaseInsensitiveComparator":
		compare = func(a, b []uint16) int {
			fold := func(c uint16) uint16 { return uint16(unicode.ToLower(unicode.ToUpper(rune(c)))) }
			for i := 0; i < len(a) && i < len(b); i++ {
				if x, y := fold(a[i]), fold(b[i]); x != y {
					return int(x) - int(y)
				}
			}
			return len(a) - len(b)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return compare(strs[idx[i]], strs[idx[j]]) < 0 })
	sk, sv := make([]any, len(keys)), make([]any, len(keys))
	for i, j := range idx {
		sk[i], sv[i] = keys[j], vals[j]
	}
	return sk, sv
}

// kryoEntries are a map's keys and values, in its order.
func kryoEntries(v any) ([]any, []any, error) {
	switch x := v.(type) {
	case *kryoMap:
		return x.Keys, x.Vals, nil
	case map[string]any:
		jsonKeys := x["@keys"] == "json"
		if jsonKeys {
			if x, _ = x["@value"].(map[string]any); x == nil {
				return nil, nil, fmt.Errorf("want an object")
			}
		}
		names := make([]string, 0, len(x))
		for n := range x {
			names = append(names, n)
		}
		sort.Strings(names)
		var keys, vals []any
		for _, n := range names {
			var key any = n
			if jsonKeys {
				d := json.NewDecoder(strings.NewReader(n))
				d.UseNumber()
				if err := d.Decode(&key); err != nil {
					return nil, nil, fmt.Errorf("map key %q: %w", n, err)
				}
			}
			keys, vals = append(keys, key), append(vals, x[n])
		}
		return keys, vals, nil
	}
	return nil, nil, fmt.Errorf("want an object, not %v", v)
}

func (k *kryoOut) mapOf(v any, sorted bool, depth int) error {
	// Keys and values of no declared class (kryo_schema_encode.go).
	return k.genericMap(v, sorted, classlayout.Type{}, classlayout.Type{}, depth)
}

// bigInteger writes BigInteger.toByteArray's bytes, their count plus one
// first.
func (k *kryoOut) bigInteger(n *big.Int) {
	var b []byte
	if n.Sign() >= 0 {
		b = n.Bytes()
		if len(b) == 0 || b[0] >= 0x80 {
			b = append([]byte{0}, b...)
		}
	} else {
		m := new(big.Int).Neg(n)
		m.Sub(m, big.NewInt(1))
		size := m.BitLen()/8 + 1
		t := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
		b = t.FillBytes(make([]byte, size))
	}
	k.varint(uint64(len(b)) + 1)
	k.b = append(k.b, b...)
}

// parseJavaBigDecimal inverts javaBigDecimal.
func parseJavaBigDecimal(s string) (*big.Int, int32, error) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return nil, 0, fmt.Errorf("BigDecimal %q: %w", s, err)
		}
		mant, exp = s[:i], e
	}
	digits, frac, _ := strings.Cut(mant, ".")
	u, ok := new(big.Int).SetString(digits+frac, 10)
	scale := int64(len(frac)) - exp
	if !ok || scale != int64(int32(scale)) {
		return nil, 0, fmt.Errorf("want a decimal number for a BigDecimal, not %q", s)
	}
	return u, int32(scale), nil
}

func (k *kryoOut) array(class string, v any, depth int) error {
	if class == "[B" {
		text, _ := v.(string)
		h, hexed := strings.CutPrefix(text, "0x")
		raw, err := hex.DecodeString(h)
		if !hexed || err != nil {
			return fmt.Errorf("want 0x-prefixed hex for byte[], not %v", v)
		}
		k.varint(uint64(len(raw)) + 1)
		k.b = append(k.b, raw...)
		return nil
	}
	vs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want an array for %s, not %v", class, v)
	}
	k.varint(uint64(len(vs)) + 1)
	wrapper, primitive := kryoPrimitiveArrays[class]
	elem, _ := kryoObjectArrayElem(class)
	for _, e := range vs {
		var err error
		switch {
		case primitive:
			err = k.object(wrapper, e, false, depth+1)
		case elem == "":
			err = k.classAndObject(e, depth+1)
		default:
			if e, err = kryoPayload(e); err == nil {
				err = k.object(elem, e, true, depth+1)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
