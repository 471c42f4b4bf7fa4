package tableruntime

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// Writing RowData the way Flink's BinaryRowWriter and BinaryArrayWriter
// do, from the JSON decodeRowData makes: every variable-length part
// padded to 8 bytes, strings and binaries of at most 7 bytes inline, a
// null DECIMAL above 18 digits or TIMESTAMP above millis keeping its
// zeroed space in the variable part.

// encodeRowData writes one RowData value: its int length, then the row.
func encodeRowData(b []byte, s *typeser.SerializerSnapshot, v any) ([]byte, error) {
	kind, v, err := typeser.RowKindOf(v)
	if err != nil {
		return nil, err
	}
	fields, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON array of %d fields, not %v", len(s.LogicalTypes), v)
	}
	row, err := binRowBytes(kind, s.LogicalTypes, fields, 0)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(row)))
	return append(b, row...), nil
}

// binWriter builds a row or array: its fixed part, then variable parts.
type binWriter struct{ buf []byte }

// appendVar adds a variable part padded to 8 bytes and returns the slot
// value pointing at it.
func (w *binWriter) appendVar(p []byte, low uint32) uint64 {
	off := len(w.buf)
	w.buf = append(w.buf, p...)
	w.buf = append(w.buf, make([]byte, (8-len(p)%8)%8)...)
	return uint64(off)<<32 | uint64(low)
}

func binRowBytes(kind byte, types []typeser.LogicalType, fields []any, depth int) ([]byte, error) {
	if depth > maxRowDepth {
		return nil, fmt.Errorf("rows nested deeper than %d", maxRowDepth)
	}
	if len(fields) != len(types) {
		return nil, fmt.Errorf("want %d fields, not %d", len(types), len(fields))
	}
	nullBits := rowNullBytes(len(types))
	w := &binWriter{buf: make([]byte, nullBits+8*len(types))}
	w.buf[0] = kind
	for i, t := range types {
		if fields[i] == nil {
			w.buf[(i+8)/8] |= 1 << ((i + 8) % 8)
		}
		if err := w.field(nullBits+8*i, t, fields[i], depth); err != nil {
			return nil, fmt.Errorf("field %d (%s): %w", i, t.Short(), err)
		}
	}
	return w.buf, nil
}

// field writes v (nil: a null, its null bit already set) of type t into
// the fixed part at off.
func (w *binWriter) field(off int, t typeser.LogicalType, v any, depth int) error {
	slot := w.buf[off : off+fixedSize(t.Root)]
	put := func(u uint64) { binary.LittleEndian.PutUint64(w.buf[off:], u) }
	if v == nil {
		switch {
		case t.Root == "DECIMAL" && t.Precision > 18:
			put(w.appendVar(make([]byte, 16), 0))
		case (t.Root == "TIMESTAMP_WITHOUT_TIME_ZONE" || t.Root == "TIMESTAMP_WITH_LOCAL_TIME_ZONE") && t.Precision > 3:
			put(w.appendVar(make([]byte, 8), 0))
		}
		return nil
	}
	switch t.Root {
	case "BOOLEAN":
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want true or false, not %v", v)
		}
		if x {
			slot[0] = 1
		}
	case "TINYINT", "SMALLINT", "INTEGER", "DATE", "TIME_WITHOUT_TIME_ZONE", "INTERVAL_YEAR_MONTH", "BIGINT", "INTERVAL_DAY_TIME":
		n, err := typeser.Integer(v, 8*len(slot))
		if err != nil {
			return err
		}
		for i := range slot {
			slot[i] = byte(n >> (8 * i))
		}
	case "FLOAT", "DOUBLE":
		text, ok := snapshot.TextOf(v)
		f, err := strconv.ParseFloat(text, 64)
		if !ok || err != nil {
			return fmt.Errorf("want a number, not %v", v)
		}
		if t.Root == "FLOAT" {
			binary.LittleEndian.PutUint32(slot, math.Float32bits(float32(f)))
		} else {
			put(math.Float64bits(f))
		}
	case "CHAR", "VARCHAR", "BINARY", "VARBINARY", "RAW":
		var p []byte
		var err error
		if t.Root == "RAW" {
			p, err = rawBytes(t, v)
		} else {
			p, err = textOrHex(v, t.Root == "BINARY" || t.Root == "VARBINARY")
		}
		if err != nil {
			return err
		}
		// Flink writes a RAW value's bytes out of line however short.
		if len(p) <= 7 && t.Root != "RAW" {
			copy(slot, p)
			slot[7] = 0x80 | byte(len(p))
			return nil
		}
		put(w.appendVar(p, uint32(len(p))))
	case "DECIMAL":
		text, ok := snapshot.TextOf(v)
		unscaled, err := unscaledDecimal(text, int(t.Scale))
		if !ok || err != nil {
			return fmt.Errorf("want a decimal of scale %d, not %v", t.Scale, v)
		}
		if t.Precision <= 18 {
			if !unscaled.IsInt64() {
				return fmt.Errorf("decimal %s exceeds precision %d", text, t.Precision)
			}
			put(uint64(unscaled.Int64()))
			return nil
		}
		p := twosComplement(unscaled)
		if len(p) > 16 {
			return fmt.Errorf("decimal %s exceeds 16 bytes", text)
		}
		put(w.appendVar(append(p, make([]byte, 16-len(p))...), uint32(len(p))))
	case "TIMESTAMP_WITHOUT_TIME_ZONE", "TIMESTAMP_WITH_LOCAL_TIME_ZONE":
		if t.Precision <= 3 {
			n, err := typeser.Integer(v, 64)
			put(uint64(n))
			return err
		}
		m, _ := v.(map[string]any)
		millis, err := typeser.Integer(m["millisecond"], 64)
		if err != nil {
			return fmt.Errorf(`want {"millisecond":..,"nanoOfMillisecond":..}, not %v`, v)
		}
		nanos, err := typeser.Integer(m["nanoOfMillisecond"], 32)
		if err != nil || nanos < 0 || nanos > maxNanoOfMillisecond {
			return fmt.Errorf(`want {"millisecond":..,"nanoOfMillisecond":..}, not %v`, v)
		}
		put(w.appendVar(binary.LittleEndian.AppendUint64(nil, uint64(millis)), uint32(nanos)))
	case "ARRAY", "MULTISET", "MAP", "ROW":
		p, err := binNestedBytes(t, v, depth+1)
		if err != nil {
			return err
		}
		put(w.appendVar(p, uint32(len(p))))
	case "NULL":
		return fmt.Errorf("a NULL field holds only null, not %v", v)
	default:
		return fmt.Errorf("values of %s cannot be written", t.Class)
	}
	return nil
}

func binNestedBytes(t typeser.LogicalType, v any, depth int) ([]byte, error) {
	switch t.Root {
	case "ARRAY":
		elems, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a JSON array, not %v", v)
		}
		return binArrayBytes(*t.Elem, elems, depth)
	case "ROW":
		kind, v, err := typeser.RowKindOf(v)
		if err != nil {
			return nil, err
		}
		obj, ok := v.(map[string]any)
		if !ok || len(obj) != len(t.Fields) {
			return nil, fmt.Errorf("want an object of %d fields, not %v", len(t.Fields), v)
		}
		types := make([]typeser.LogicalType, len(t.Fields))
		fields := make([]any, len(t.Fields))
		for i, f := range t.Fields {
			types[i], fields[i] = f.Type, obj[f.Name]
		}
		return binRowBytes(kind, types, fields, depth)
	}
	kt, vt := t.Key, t.Value
	if t.Root == "MULTISET" {
		kt, vt = t.Elem, &typeser.LogicalType{Class: "IntType", Root: "INTEGER"}
	}
	pairs, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON array of [key, value] pairs, not %v", v)
	}
	keys, values := make([]any, len(pairs)), make([]any, len(pairs))
	for i, p := range pairs {
		kv, ok := p.([]any)
		if !ok || len(kv) != 2 {
			return nil, fmt.Errorf("want a [key, value] pair, not %v", p)
		}
		keys[i], values[i] = kv[0], kv[1]
	}
	kb, err := binArrayBytes(*kt, keys, depth)
	if err != nil {
		return nil, fmt.Errorf("map keys: %w", err)
	}
	vb, err := binArrayBytes(*vt, values, depth)
	if err != nil {
		return nil, fmt.Errorf("map values: %w", err)
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(kb)))
	return append(append(out, kb...), vb...), nil
}

func binArrayBytes(et typeser.LogicalType, elems []any, depth int) ([]byte, error) {
	if depth > maxRowDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d", maxRowDepth)
	}
	n := len(elems)
	head := int(arrayHeaderBytes(int64(n)))
	size := fixedSize(et.Root)
	fixed := (head + n*size + 7) / 8 * 8
	w := &binWriter{buf: make([]byte, fixed, fixed+8)}
	binary.LittleEndian.PutUint32(w.buf, uint32(n))
	for i, e := range elems {
		if e == nil {
			w.buf[4+i/8] |= 1 << (i % 8)
		}
		if err := w.field(head+i*size, et, e, depth); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return w.buf, nil
}

// rawBytes are the bytes of a RAW field given as binField decodes it.
func rawBytes(t typeser.LogicalType, v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if t.RawSerializer != dataViewPlaceholder {
		return nil, fmt.Errorf("values of RAW(%s) written by %s cannot be written", t.RawClass, t.RawSerializer)
	}
	if !ok || len(m) != 2 || m["class"] != t.RawClass {
		return nil, fmt.Errorf(`want {"class":%q,"bytes":"0x.."}, not %v`, t.RawClass, v)
	}
	return textOrHex(m["bytes"], true)
}

// textOrHex is a string's UTF-8 bytes or a binary's 0x-prefixed hex.
func textOrHex(v any, binary bool) ([]byte, error) {
	text, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a string, not %v", v)
	}
	if !binary {
		return []byte(text), nil
	}
	h, hexed := strings.CutPrefix(text, "0x")
	raw, err := hex.DecodeString(h)
	if !hexed || err != nil {
		return nil, fmt.Errorf("want 0x-prefixed hex, not %v", v)
	}
	return raw, nil
}

// unscaledDecimal is text times 10^scale, with no more than scale digits
// after the point.
func unscaledDecimal(text string, scale int) (*big.Int, error) {
	whole, frac, _ := strings.Cut(text, ".")
	if len(frac) > scale || strings.ContainsAny(frac, "+-") {
		return nil, fmt.Errorf("decimal %q", text)
	}
	u, ok := new(big.Int).SetString(whole+frac+strings.Repeat("0", scale-len(frac)), 10)
	if !ok {
		return nil, fmt.Errorf("decimal %q", text)
	}
	return u, nil
}

// twosComplement is BigInteger.toByteArray: the shortest big-endian two's
// complement bytes of x.
func twosComplement(x *big.Int) []byte {
	if x.Sign() >= 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -x-1 has the complement bits of x.
	b := new(big.Int).Sub(new(big.Int).Neg(x), big.NewInt(1)).Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}
