package flink

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"strings"
)

// The Table runtime's RowData: its serializer snapshot lists each field's
// logical type (a Java-serialized LogicalType) and serializer; a value is
// an int length and a BinaryRowData: a header byte and null bits padded to
// 8-byte words, one 8-byte little-endian slot per field, then the
// variable-length part that slots point into.

// LogicalType is a field's SQL type, as far as decoding needs it.
type LogicalType struct {
	Class     string `json:"class"` // e.g. org.apache.flink.table.types.logical.BigIntType
	Precision int32  `json:"precision,omitempty"`
	Scale     int32  `json:"scale,omitempty"`
}

// short is the type's class without its package ("BigIntType").
func (t LogicalType) short() string { return t.Class[strings.LastIndex(t.Class, ".")+1:] }

// parseRowDataSnapshot reads a RowDataSerializerSnapshot (version 3+): a
// field count, each field's logical type, then the nested snapshots.
func parseRowDataSnapshot(sr *snapReader, s *SerializerSnapshot, cont contFunc, depth int) {
	{
		r := sr.r
		if s.Version < 3 {
			r.fail("RowData serializer snapshot version %d", s.Version)
			return
		}
		n := r.count32(4, "RowData field count")
		for i := 0; i < n && r.err == nil; i++ {
			obj, used, classes, _, err := ParseJavaObject(r.buf[r.off:], r.file, r.pos())
			if err != nil {
				r.err = err
				return
			}
			r.off += used
			t := LogicalType{}
			if len(classes) > 0 {
				t.Class = classes[0]
			}
			if o, ok := obj.(*JavaObject); ok {
				t.Precision, _ = o.Field("precision").(int32)
				t.Scale, _ = o.Field("scale").(int32)
			}
			s.LogicalTypes = append(s.LogicalTypes, t)
		}
		at := r.pos()
		if m := r.i32("nested snapshots magic"); r.err == nil && m != nestedMagic {
			r.failAt(at, "nested serializer snapshots magic %d, want %d", m, nestedMagic)
		}
		r.i32("nested snapshots version")
		k := r.count32(6, "nested snapshot count")
		for i := 0; i < k && r.err == nil; i++ {
			next := cont
			if i < k-1 {
				next = func(q int) bool { return plausibleVersionedAt(r.buf, q) }
			}
			s.Nested = append(s.Nested, sr.versioned(next, depth+1))
		}
		if r.err == nil && k != n {
			r.fail("RowData snapshot with %d logical types and %d serializers", n, k)
		}
	}
}

// decodeRowData decodes one BinaryRowData of the snapshot's field types.
func decodeRowData(r *reader, s *SerializerSnapshot) []any {
	at := r.pos()
	row := r.bytes32("RowData")
	if r.err != nil {
		return nil
	}
	n := len(s.LogicalTypes)
	nullBits := ((n + 63 + 8) / 64) * 8
	if len(row) < nullBits+8*n {
		r.failAt(at, "RowData of %d bytes cannot hold %d fields", len(row), n)
		return nil
	}
	out := make([]any, n)
	for i, t := range s.LogicalTypes {
		bit := i + 8
		if row[bit/8]&(1<<(bit%8)) != 0 {
			continue
		}
		slot := row[nullBits+8*i : nullBits+8*i+8]
		v, ok := rowDataField(row, slot, t)
		if !ok {
			r.failAt(at, "RowData field %d (%s) points outside its %d bytes", i, t.short(), len(row))
			return nil
		}
		out[i] = v
	}
	return out
}

func rowDataField(row, slot []byte, t LogicalType) (any, bool) {
	u := binary.LittleEndian.Uint64(slot)
	switch t.short() {
	case "BigIntType":
		return int64(u), true
	case "IntType", "DateType", "TimeType":
		return int32(uint32(u)), true
	case "SmallIntType":
		return int16(uint16(u)), true
	case "TinyIntType":
		return int8(uint8(u)), true
	case "BooleanType":
		return u&0xff != 0, true
	case "DoubleType":
		return math.Float64frombits(u), true
	case "FloatType":
		return float64(math.Float32frombits(uint32(u))), true
	case "VarCharType", "CharType":
		b, ok := variablePart(row, slot)
		return string(b), ok
	case "BinaryType", "VarBinaryType":
		b, ok := variablePart(row, slot)
		return "0x" + hex.EncodeToString(b), ok
	case "DecimalType":
		var unscaled *big.Int
		if t.Precision <= 18 {
			unscaled = big.NewInt(int64(u))
		} else {
			off, size := int(u>>32), int(uint32(u))
			if off < 0 || size < 0 || off+size > len(row) {
				return nil, false
			}
			unscaled = new(big.Int).SetBytes(row[off : off+size])
			if size > 0 && row[off]&0x80 != 0 { // two's complement
				unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
			}
		}
		return json.Number(new(big.Float).SetPrec(256).Quo(new(big.Float).SetInt(unscaled),
			new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil))).Text('f', int(t.Scale))), true
	case "TimestampType", "LocalZonedTimestampType":
		if t.Precision <= 3 {
			return int64(u), true
		}
		off := int(u >> 32)
		if off < 0 || off+8 > len(row) {
			return nil, false
		}
		return int64(binary.LittleEndian.Uint64(row[off:])), true
	}
	return "0x" + hex.EncodeToString(slot), true
}

// variablePart returns the bytes of a string or binary field: inline in
// its slot when short (the slot's top bit set, its length in the top
// byte), else at the offset and size the slot holds.
func variablePart(row, slot []byte) ([]byte, bool) {
	if slot[7]&0x80 != 0 {
		n := int(slot[7] & 0x7f)
		if n > 7 {
			return nil, false
		}
		return slot[:n], true
	}
	u := binary.LittleEndian.Uint64(slot)
	off, size := int(u>>32), int(uint32(u))
	if off < 0 || size < 0 || off+size > len(row) {
		return nil, false
	}
	return row[off : off+size], true
}
