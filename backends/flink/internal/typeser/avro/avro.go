package avro

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// Avro values as Flink's AvroSerializer writes them, GenericRecord and
// SpecificRecord alike: the writer schema in the serializer snapshot
// drives the walk, and the encoding is Flink's DataOutputEncoder, not
// Avro binary: big-endian int (also enum and union indexes), long, float
// and double; strings and bytes after an int length; an array or map as
// one block, its count as a variable-length long (left out when 0), the
// items, then a 0 byte. The walk takes only what that writer writes, so
// that every value it reads encodes back to the same bytes (map entries
// excepted, which encode in key order).

// Family is flink-avro's AvroSerializer.
var Family = &typeser.Family{
	Name: "avro",
	Kind: func(n string) string {
		if strings.Contains(n, "formats.avro.typeutils.AvroSerializer") {
			return "Avro"
		}
		return ""
	},
	Snapshots: map[string]typeser.SnapshotParser{"AvroSerializerSnapshot": parseAvroSnapshot},
	Expr:      func(*typeser.SerializerSnapshot, string, func() string) (string, bool) { return "avro", true },
	Walk: func(r *wire.Reader, s *typeser.SerializerSnapshot, _ int, decode bool) (any, bool) {
		sch, err := avroSchema(s.Schema)
		if err != nil || s.Schema == "" {
			return nil, false
		}
		return walkAvro(r, sch, 0, decode), true
	},
	Schema: avroValueSchema,
	Sized: func(s *typeser.SerializerSnapshot, _ int) bool {
		_, err := avroSchema(s.Schema)
		return s.Schema != "" && err == nil
	},
	Encode: func(b []byte, s *typeser.SerializerSnapshot, v any, _ int) ([]byte, bool, error) {
		sch, err := avroSchema(s.Schema)
		if err != nil || s.Schema == "" {
			return nil, true, fmt.Errorf("values of this Avro serializer cannot be written: its snapshot has no schema")
		}
		b, err = encodeAvro(b, sch, v, 0)
		return b, true, err
	},
}

// parseAvroSnapshot reads an AvroSerializerSnapshot (version 2+): the
// runtime class and the writer schema, as StringValues.
func parseAvroSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	if s.Version < 2 {
		sr.R.Fail("Avro serializer snapshot version %d", s.Version)
		return
	}
	t, _ := typeser.ReadStringValue(sr.R).(string)
	schema, _ := typeser.ReadStringValue(sr.R).(string)
	s.TypeClass, s.Schema = t, schema
	if sr.R.Err == nil {
		if _, err := avroSchema(schema); err != nil {
			sr.R.Fail("Avro schema: %v", err)
		}
	}
}

// avroSchemas caches parsed schemas by their text. Each is parsed with a
// cache of its own, so that schemas of different snapshots that reuse a
// name never see each other.
var avroSchemas sync.Map // string -> avro.Schema or error

func avroSchema(text string) (avro.Schema, error) {
	if v, ok := avroSchemas.Load(text); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(avro.Schema), nil
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	var v any = s
	if err != nil {
		v = err
	}
	avroSchemas.Store(text, v)
	return s, err
}

// avroMaxDepth bounds the nesting of values (a recursive schema has no
// bound of its own).
const avroMaxDepth = 32

// walkAvro reads one Avro datum; with decode it returns it as JSON values
// (docs/flink.md says how each type shows).
func walkAvro(r *wire.Reader, sch avro.Schema, depth int, decode bool) any {
	if depth > avroMaxDepth {
		r.Fail("Avro values nested deeper than %d", avroMaxDepth)
		return nil
	}
	switch s := sch.(type) {
	case *avro.NullSchema:
		return nil
	case *avro.RefSchema:
		return walkAvro(r, s.Schema(), depth+1, decode)
	case *avro.RecordSchema:
		var out map[string]any
		if decode {
			out = make(map[string]any, len(s.Fields()))
		}
		for _, f := range s.Fields() {
			v := walkAvro(r, f.Type(), depth+1, decode)
			if decode {
				out[f.Name()] = v
			}
		}
		return out
	case *avro.UnionSchema:
		at := r.Pos()
		i := r.I32("Avro union index")
		if r.Err == nil && (i < 0 || int(i) >= len(s.Types())) {
			r.FailAt(at, "Avro union index %d of %d branches", i, len(s.Types()))
		}
		if r.Err != nil {
			return nil
		}
		branch := s.Types()[i]
		v := walkAvro(r, branch, depth+1, decode)
		if !decode || v == nil || !avroTagged(s) {
			return v
		}
		return map[string]any{avroBranchName(branch): v}
	case *avro.EnumSchema:
		at := r.Pos()
		i := r.I32("Avro enum index")
		if r.Err == nil && (i < 0 || int(i) >= len(s.Symbols())) {
			r.FailAt(at, "Avro enum index %d of %d symbols", i, len(s.Symbols()))
		}
		if r.Err != nil {
			return nil
		}
		return s.Symbols()[i]
	case *avro.FixedSchema:
		b := r.Take(s.Size(), "Avro fixed")
		if !decode || r.Err != nil {
			return nil
		}
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return avroDecimalText(new(big.Int).SetBytes(b), len(b), d.Scale())
		}
		return "0x" + hex.EncodeToString(b)
	case *avro.ArraySchema:
		var out []any
		if decode {
			out = []any{}
		}
		avroBlock(r, func() {
			v := walkAvro(r, s.Items(), depth+1, decode)
			if decode {
				out = append(out, v)
			}
		})
		return out
	case *avro.MapSchema:
		var out map[string]any
		if decode {
			out = map[string]any{}
		}
		var seen map[string]bool // Flink writes a Java map: no key twice
		avroBlock(r, func() {
			at := r.Pos()
			k := avroString(r, "Avro map key")
			if r.Err == nil && seen[k] {
				r.FailAt(at, "Avro map key %q twice", k)
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[k] = true
			v := walkAvro(r, s.Values(), depth+1, decode)
			if decode {
				out[k] = v
			}
		})
		return out
	case *avro.PrimitiveSchema:
		v := avroPrimitive(r, s.Type())
		if !decode || r.Err != nil {
			return nil
		}
		if s.Logical() != nil {
			return avroLogical(s.Logical(), v)
		}
		return v
	}
	r.Fail("Avro schema type %s", sch.Type())
	return nil
}

func avroPrimitive(r *wire.Reader, t avro.Type) any {
	switch t {
	case avro.Boolean:
		return r.Bool("Avro boolean")
	case avro.Int:
		return r.I32("Avro int")
	case avro.Long:
		return r.I64("Avro long")
	case avro.Float:
		return float64(math.Float32frombits(uint32(r.I32("Avro float"))))
	case avro.Double:
		return r.F64("Avro double")
	case avro.Bytes:
		return "0x" + hex.EncodeToString(r.Bytes32("Avro bytes"))
	case avro.String:
		return avroString(r, "Avro string")
	}
	return nil
}

// avroString reads a string; Java's Avro writes only UTF-8.
func avroString(r *wire.Reader, what string) string {
	at := r.Pos()
	b := r.Bytes32(what)
	if r.Err == nil && !utf8.Valid(b) {
		r.FailAt(at, "%s is not UTF-8", what)
	}
	return string(b)
}

// avroBlock reads the one block Flink writes of an array or map: a count,
// that many items and a 0; or a 0 alone when empty.
func avroBlock(r *wire.Reader, item func()) {
	n := avroCount(r)
	if r.Err != nil || n == 0 {
		return
	}
	for i := uint64(0); i < n && r.Err == nil; i++ {
		item()
	}
	if at := r.Pos(); r.Err == nil && avroCount(r) != 0 && r.Err == nil {
		r.FailAt(at, "Avro array or map: a second block (Flink writes one)")
	}
}

// avroCount reads a block count in its shortest form, bounded by the bytes
// left (no item is written in less than a byte, bar nulls: their arrays
// are bounded by it all the same).
func avroCount(r *wire.Reader) uint64 {
	at := r.Pos()
	start := r.Off
	n := typeser.ReadVarUint(r, "Avro block count")
	if r.Err != nil {
		return 0
	}
	if r.Off-start > 1 && r.Buf[r.Off-1] == 0 {
		r.FailAt(at, "Avro block count is not in its shortest form")
		return 0
	}
	if n > uint64(r.Remaining()) {
		r.FailAt(at, "Avro block of %d items, %d bytes left", n, r.Remaining())
		return 0
	}
	return n
}

// avroTagged says whether a union's values show as {branch: value}: when
// more than one branch is not null, as in Avro's JSON encoding.
func avroTagged(u *avro.UnionSchema) bool {
	n := 0
	for _, t := range u.Types() {
		if t.Type() != avro.Null {
			n++
		}
	}
	return n > 1
}

// avroBranchName is a union branch's name in Avro's JSON encoding.
func avroBranchName(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

// The ISO layouts of the logical types (UTC), and the years they render.
const (
	avroDate         = "2006-01-02"
	avroTimeMillis   = "15:04:05.000"
	avroTimeMicros   = "15:04:05.000000"
	avroMillisLayout = "2006-01-02T15:04:05.000"
	avroMicrosLayout = "2006-01-02T15:04:05.000000"
)

// avroLogical renders a primitive's logical type; a value its text cannot
// hold (a year outside 1-9999, a time outside the day, decimal bytes not
// in their shortest form) stays as the primitive shows it.
func avroLogical(l avro.LogicalSchema, v any) any {
	inYears := func(t time.Time) bool { return t.Year() >= 1 && t.Year() <= 9999 }
	switch l.Type() {
	case avro.Decimal:
		d, ok := l.(*avro.DecimalLogicalSchema)
		text, _ := v.(string)
		b, err := hex.DecodeString(strings.TrimPrefix(text, "0x"))
		if !ok || err != nil || !minimalTwosComplement(b) {
			return v
		}
		return avroDecimalText(new(big.Int).SetBytes(b), len(b), d.Scale())
	case avro.Date:
		if t := time.Unix(int64(v.(int32))*86400, 0).UTC(); inYears(t) {
			return t.Format(avroDate)
		}
	case avro.TimeMillis:
		if ms := v.(int32); ms >= 0 && ms < 86_400_000 {
			return time.UnixMilli(int64(ms)).UTC().Format(avroTimeMillis)
		}
	case avro.TimeMicros:
		if us := v.(int64); us >= 0 && us < 86_400_000_000 {
			return time.UnixMicro(us).UTC().Format(avroTimeMicros)
		}
	case avro.TimestampMillis, avro.LocalTimestampMillis:
		if t := time.UnixMilli(v.(int64)).UTC(); inYears(t) {
			return t.Format(avroMillisLayout) + avroZone(l.Type())
		}
	case avro.TimestampMicros, avro.LocalTimestampMicros:
		if t := time.UnixMicro(v.(int64)).UTC(); inYears(t) {
			return t.Format(avroMicrosLayout) + avroZone(l.Type())
		}
	}
	return v
}

// avroZone is the suffix of a timestamp: Z for an instant, none for a
// local timestamp.
func avroZone(t avro.LogicalType) string {
	if t == avro.TimestampMillis || t == avro.TimestampMicros {
		return "Z"
	}
	return ""
}

// minimalTwosComplement says whether b is the shortest two's complement
// form of its number (as Java's BigInteger.toByteArray writes it).
func minimalTwosComplement(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	return len(b) == 1 || !(b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0)
}

// avroDecimalText renders the size-byte two's complement number u
// (unsigned as read) with scale digits after the point, as Java's
// BigDecimal.toPlainString does.
func avroDecimalText(u *big.Int, size, scale int) any {
	if size > 0 && u.Bit(8*size-1) == 1 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
	}
	sign := ""
	if u.Sign() < 0 {
		sign = "-"
		u.Neg(u)
	}
	digits := u.String()
	if scale <= 0 {
		return json.Number(sign + digits)
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return json.Number(sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:])
}

// avroDecimalBytes is the two's complement form of the decimal text at
// scale: the shortest one, or size bytes when size > 0.
func avroDecimalBytes(text string, scale, size int) ([]byte, error) {
	num, frac, _ := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if len(frac) > scale || num == "" || strings.Trim(num+frac, "0123456789") != "" {
		return nil, fmt.Errorf("want a decimal with at most %d digits after the point, not %q", scale, text)
	}
	u, _ := new(big.Int).SetString(num+frac+strings.Repeat("0", scale-len(frac)), 10)
	if strings.HasPrefix(text, "-") {
		u.Neg(u)
	}
	n := size
	if n == 0 {
		n = u.BitLen()/8 + 1
		if u.Sign() < 0 {
			n = new(big.Int).Not(u).BitLen()/8 + 1
		}
	}
	limit := new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))
	if u.Cmp(limit) >= 0 || u.Cmp(new(big.Int).Neg(limit)) < 0 {
		return nil, fmt.Errorf("decimal %s does not fit in %d bytes", text, n)
	}
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(limit, 1))
	}
	return u.FillBytes(make([]byte, n)), nil
}

// encodeAvro writes v, a value as walkAvro decodes it and JSON carries it,
// the way Flink's AvroSerializer does.
func encodeAvro(b []byte, sch avro.Schema, v any, depth int) ([]byte, error) {
	if depth > avroMaxDepth {
		return nil, fmt.Errorf("value nested deeper than %d", avroMaxDepth)
	}
	switch s := sch.(type) {
	case *avro.NullSchema:
		if v != nil {
			return nil, fmt.Errorf("want null, not %v", v)
		}
		return b, nil
	case *avro.RefSchema:
		return encodeAvro(b, s.Schema(), v, depth+1)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok || len(m) != len(s.Fields()) {
			return nil, fmt.Errorf("want an object with the %d fields of %s, not %v", len(s.Fields()), s.FullName(), v)
		}
		var err error
		for _, f := range s.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				return nil, fmt.Errorf("%s: no field %s", s.FullName(), f.Name())
			}
			if b, err = encodeAvro(b, f.Type(), fv, depth+1); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name(), err)
			}
		}
		return b, nil
	case *avro.UnionSchema:
		i, bv, err := avroUnionBranch(s, v)
		if err != nil {
			return nil, err
		}
		return encodeAvro(binary.BigEndian.AppendUint32(b, uint32(i)), s.Types()[i], bv, depth+1)
	case *avro.EnumSchema:
		for i, sym := range s.Symbols() {
			if v == sym {
				return binary.BigEndian.AppendUint32(b, uint32(i)), nil
			}
		}
		return nil, fmt.Errorf("want a symbol of %s, not %v", s.FullName(), v)
	case *avro.FixedSchema:
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			text, _ := snapshot.TextOf(v)
			raw, err := avroDecimalBytes(text, d.Scale(), s.Size())
			if err != nil {
				return nil, err
			}
			return append(b, raw...), nil
		}
		raw, err := typeser.HexValue(v)
		if err != nil {
			return nil, err
		}
		if len(raw) != s.Size() {
			return nil, fmt.Errorf("want %d bytes for %s, not %d", s.Size(), s.FullName(), len(raw))
		}
		return append(b, raw...), nil
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want an array, not %v", v)
		}
		if len(items) > 0 {
			b = typeser.AppendVarUint(b, uint64(len(items)))
		}
		var err error
		for i, e := range items {
			if b, err = encodeAvro(b, s.Items(), e, depth+1); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
		}
		return append(b, 0), nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want an object, not %v", v)
		}
		if len(m) > 0 {
			b = typeser.AppendVarUint(b, uint64(len(m)))
		}
		var err error
		for _, k := range slices.Sorted(maps.Keys(m)) {
			b = typeser.AppendBytes32(b, []byte(k))
			if b, err = encodeAvro(b, s.Values(), m[k], depth+1); err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
		}
		return append(b, 0), nil
	case *avro.PrimitiveSchema:
		return encodeAvroPrimitive(b, s, v)
	}
	return nil, fmt.Errorf("values of the Avro schema type %s cannot be written", sch.Type())
}

// avroUnionBranch finds the branch of a union value and the value in it.
func avroUnionBranch(u *avro.UnionSchema, v any) (int, any, error) {
	tagged := avroTagged(u)
	var name string
	bv := v
	if m, ok := v.(map[string]any); ok && tagged && len(m) == 1 {
		for name, bv = range m {
		}
	}
	for i, t := range u.Types() {
		switch {
		case v == nil && t.Type() == avro.Null,
			v != nil && !tagged && t.Type() != avro.Null,
			v != nil && tagged && name != "" && avroBranchName(t) == name:
			return i, bv, nil
		}
	}
	if tagged {
		return 0, nil, fmt.Errorf(`want null or {"<branch>": value} for the union %s, not %v`, u, v)
	}
	return 0, nil, fmt.Errorf("no branch of the union %s for %v", u, v)
}

func encodeAvroPrimitive(b []byte, s *avro.PrimitiveSchema, v any) ([]byte, error) {
	text, isText := snapshot.TextOf(v)
	var lt avro.LogicalType
	if s.Logical() != nil {
		lt = s.Logical().Type()
	}
	switch lt {
	case avro.Decimal:
		if strings.HasPrefix(text, "0x") {
			break
		}
		raw, err := avroDecimalBytes(text, s.Logical().(*avro.DecimalLogicalSchema).Scale(), 0)
		if err != nil {
			return nil, err
		}
		return typeser.AppendBytes32(b, raw), nil
	case avro.Date, avro.TimeMillis, avro.TimeMicros, avro.TimestampMillis, avro.TimestampMicros,
		avro.LocalTimestampMillis, avro.LocalTimestampMicros:
		if _, isString := v.(string); isString {
			n, err := avroParseTime(lt, text)
			if err != nil {
				return nil, err
			}
			if s.Type() == avro.Int {
				return binary.BigEndian.AppendUint32(b, uint32(n)), nil
			}
			return binary.BigEndian.AppendUint64(b, uint64(n)), nil
		}
	}
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return nil, fmt.Errorf("want null, not %v", v)
		}
		return b, nil
	case avro.Boolean:
		x, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, not %v", v)
		}
		if x {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case avro.Int, avro.Long:
		bits := map[avro.Type]int{avro.Int: 32, avro.Long: 64}[s.Type()]
		n, err := typeser.Integer(v, bits)
		if err != nil {
			return nil, err
		}
		if bits == 32 {
			return binary.BigEndian.AppendUint32(b, uint32(n)), nil
		}
		return binary.BigEndian.AppendUint64(b, uint64(n)), nil
	case avro.Float, avro.Double:
		if !isText {
			return nil, fmt.Errorf("want a number, not %v", v)
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, err
		}
		if s.Type() == avro.Float {
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f))), nil
		}
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f)), nil
	case avro.Bytes:
		raw, err := typeser.HexValue(v)
		if err != nil {
			return nil, err
		}
		return typeser.AppendBytes32(b, raw), nil
	case avro.String:
		if _, isString := v.(string); !isString || !utf8.ValidString(text) {
			return nil, fmt.Errorf("want a string, not %v", v)
		}
		return typeser.AppendBytes32(b, []byte(text)), nil
	}
	return nil, fmt.Errorf("values of the Avro type %s cannot be written", s.Type())
}

// avroParseTime parses the ISO text of a date, time or timestamp into the
// number Avro keeps.
func avroParseTime(lt avro.LogicalType, text string) (int64, error) {
	layout := map[avro.LogicalType]string{
		avro.Date: avroDate, avro.TimeMillis: avroTimeMillis, avro.TimeMicros: avroTimeMicros,
		avro.TimestampMillis: avroMillisLayout + "Z", avro.TimestampMicros: avroMicrosLayout + "Z",
		avro.LocalTimestampMillis: avroMillisLayout, avro.LocalTimestampMicros: avroMicrosLayout,
	}[lt]
	t, err := time.Parse(layout, text)
	if err != nil {
		return 0, fmt.Errorf("%s: want %s: %w", lt, layout, err)
	}
	switch lt {
	case avro.Date:
		return t.Unix() / 86400, nil
	case avro.TimeMillis, avro.TimeMicros:
		d := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
			time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
		if lt == avro.TimeMillis {
			return d.Milliseconds(), nil
		}
		return d.Microseconds(), nil
	case avro.TimestampMillis, avro.LocalTimestampMillis:
		return t.UnixMilli(), nil
	}
	return t.UnixMicro(), nil
}
