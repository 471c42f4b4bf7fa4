package tableruntime

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

const rowDataSnapshotClass = "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"

func lt(root string) typeser.LogicalType { return typeser.LogicalType{Class: "x." + root, Root: root} }

// slotAt is a row slot pointing at size bytes at offset off.
func slotAt(off, size int) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(off)<<32|uint64(uint32(size)))
}

// le is the little-endian bytes of 64-bit words.
func le(words ...uint64) []byte {
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// wideRow is a BinaryRowData laid out by hand after Flink's BinaryRowData,
// BinaryArrayData and BinaryMapData: nine fields (one null), 8 bytes of
// header and null bits, nine slots, then the variable part from byte 80.
func wideRow() ([]typeser.LogicalType, []byte) {
	arrayInt := lt("ARRAY")
	arrayInt.Elem = &typeser.LogicalType{Root: "INTEGER"}
	mp := lt("MAP")
	mp.Key, mp.Value = &typeser.LogicalType{Root: "VARCHAR"}, &typeser.LogicalType{Root: "BIGINT"}
	nested := lt("ROW")
	nested.Fields = []typeser.RowField{{Name: "name", Type: lt("VARCHAR")}, {Name: "n", Type: lt("BIGINT")}}
	dec := lt("DECIMAL")
	dec.Precision, dec.Scale = 30, 2
	ts := lt("TIMESTAMP_WITHOUT_TIME_ZONE")
	ts.Precision = 6
	types := []typeser.LogicalType{lt("INTEGER"), lt("VARCHAR"), lt("VARCHAR"), dec, ts, arrayInt, mp, nested, lt("BOOLEAN")}

	row := []byte{0, 0, 0x01, 0, 0, 0, 0, 0} // RowKind INSERT; field 8 (bit 16) null
	row = append(row, le(7)...)
	row = append(row, 'a', 'b', 'c', 0, 0, 0, 0, 0x83)
	row = append(row, slotAt(80, 12)...)
	row = append(row, slotAt(96, 2)...)
	row = append(row, slotAt(112, 123000)...)
	row = append(row, slotAt(120, 24)...)
	row = append(row, slotAt(144, 36)...)
	row = append(row, slotAt(184, 24)...)
	row = append(row, le(0)...)
	row = append(row, "a longer one\x00\x00\x00\x00"...)                    // 80
	row = append(row, 0xFF, 0x6A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // 96: -150
	row = append(row, le(1000)...)                                          // 112: millis
	// 120: ARRAY<INT> [1, null, 3]: count, null bits, three ints, padding.
	row = append(row, 3, 0, 0, 0, 0x02, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0)
	// 144: MAP {"x": 5}: the key array's size, the key array, the value array.
	row = append(row, 16, 0, 0, 0)
	row = append(row, 1, 0, 0, 0, 0, 0, 0, 0, 'x', 0, 0, 0, 0, 0, 0, 0x81)
	row = append(row, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	// 184: ROW {name: "nm", n: -2}.
	row = append(row, le(0)...)
	row = append(row, 'n', 'm', 0, 0, 0, 0, 0, 0x82)
	row = append(row, le(uint64(1<<64-2))...)
	return types, row
}

func rowDataValue(row []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(row))), row...)
}

func TestRowDataDecodesNestedTypes(t *testing.T) {
	types, row := wideRow()
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: types})}
	v, err := c.Decode(rowDataValue(row))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	want := `[7,"abc","a longer one",-1.50,{"millisecond":1000,"nanoOfMillisecond":123000},[1,null,3],[["x",5]],{"n":-2,"name":"nm"},null]`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A field of a type no decoder here walks leaves the row not decoded
// (never a bare slot shown as if it were the value).
func TestRowDataUnknownFieldTypeIsNotDecoded(t *testing.T) {
	for _, unknown := range []typeser.LogicalType{lt("TIMESTAMP_WITH_TIME_ZONE"), {Class: "x.RawType", Root: "RAW", RawSerializer: "com.acme.ThingSerializer"}, {Class: "x.Unparsed"}} {
		row := append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, le(7, 9)...)
		c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: []typeser.LogicalType{lt("BIGINT"), unknown}})}
		v, err := c.Decode(rowDataValue(row))
		if !errors.Is(err, snapshot.ErrNotDecoded) {
			t.Errorf("%s: got %v, %v; want not decoded", unknown.Class, v, err)
		}
	}
}

// A slot pointing past its row is damage, with where it is.
func TestRowDataSlotOutsideIsDamage(t *testing.T) {
	types, row := wideRow()
	copy(row[8+8*2:], slotAt(250, 12)) // the long VARCHAR
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: types})}
	_, err := c.Decode(rowDataValue(row))
	if err == nil || errors.Is(err, snapshot.ErrNotDecoded) || !strings.Contains(err.Error(), "field 2") {
		t.Fatalf("got %v, want damage in field 2", err)
	}
}

// A timestamp's nanoseconds within its millisecond run 0..999,999 in
// Flink's TimestampData: more is damage when read, and refused when written.
func TestRowDataTimestampNanosOutOfRange(t *testing.T) {
	types, row := wideRow()
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: types})}
	bad := append([]byte(nil), row...)
	copy(bad[8+8*4:], slotAt(int(binary.LittleEndian.Uint32(row[8+8*4+4:])), 1_000_000)) // field 4, the TIMESTAMP(6)
	if _, err := c.Decode(rowDataValue(bad)); err == nil || errors.Is(err, snapshot.ErrNotDecoded) || !strings.Contains(err.Error(), "field 4") {
		t.Errorf("decoding 1,000,000 nanoseconds: got %v, want damage in field 4", err)
	}
	v := []any{json.Number("7"), "abc", "a longer one", json.Number("-1.50"), map[string]any{"millisecond": json.Number("1000"), "nanoOfMillisecond": json.Number("1000000")}, []any{json.Number("1"), nil, json.Number("3")}, []any{[]any{"x", json.Number("5")}}, map[string]any{"n": json.Number("-2"), "name": "nm"}, nil}
	if _, err := c.Encode(v); err == nil {
		t.Error("encoding 1,000,000 nanoseconds: no error")
	}
}

// A row's kind is kept where it is not INSERT (a deduplication keeps its
// last row as UPDATE_AFTER), and a RAW placeholder's bytes stay out of
// line however short, as Flink's BinaryRowWriter lays them out.
func TestRowDataKindAndRawOutOfLine(t *testing.T) {
	raw := typeser.LogicalType{Class: "RawType", Root: "RAW", RawClass: "org.apache.flink.table.api.dataview.MapView", RawSerializer: "org.apache.flink.table.dataview.NullSerializer"}
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: []typeser.LogicalType{lt("BIGINT"), raw}})}
	row := []byte{
		2, 0, 0, 0, 0, 0, 0, 0, // UPDATE_AFTER, no nulls
		5, 0, 0, 0, 0, 0, 0, 0, // 5
		1, 0, 0, 0, 24, 0, 0, 0, // 1 byte at 24
		0, 0, 0, 0, 0, 0, 0, 0, // the placeholder's byte, padded
	}
	v, err := c.Decode(rowDataValue(row))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(v)
	if want := `{"@row":[5,{"bytes":"0x00","class":"org.apache.flink.table.api.dataview.MapView"}],"@rowkind":"UPDATE_AFTER"}`; string(text) != want {
		t.Errorf("decoded %s, want %s", text, want)
	}
	back := map[string]any{"@rowkind": "UPDATE_AFTER", "@row": []any{json.Number("5"), map[string]any{"class": raw.RawClass, "bytes": "0x00"}}}
	if got, err := c.Encode(back); err != nil || !bytes.Equal(got, rowDataValue(row)) {
		t.Errorf("encoded %x (%v), want %x", got, err, rowDataValue(row))
	}
	bad := append([]byte(nil), row...)
	bad[0] = 4
	if _, err := c.Decode(rowDataValue(bad)); err == nil || errors.Is(err, snapshot.ErrNotDecoded) {
		t.Errorf("row kind 4: got %v, want damage", err)
	}
	if _, err := c.Encode(map[string]any{"@rowkind": "UPSERT", "@row": back["@row"]}); err == nil {
		t.Error("encoding @rowkind UPSERT: no error")
	}
}

func TestRowDataEncodesAsFlinkLaysOut(t *testing.T) {
	types, row := wideRow()
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: types})}
	var v any
	d := json.NewDecoder(bytes.NewReader([]byte(`[7,"abc","a longer one",-1.50,{"millisecond":1000,"nanoOfMillisecond":123000},[1,null,3],[["x",5]],{"n":-2,"name":"nm"},null]`)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	got, err := c.Encode(v)
	if want := rowDataValue(row); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got 0x%x, %v\nwant 0x%x", got, err, want)
	}
}

// FuzzRowData: any bytes decode without panic under a row of every
// logical type; what decodes encodes back to the same bytes.
func FuzzRowData(f *testing.F) {
	types, row := wideRow()
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: types})}
	f.Add(rowDataValue(row))
	f.Fuzz(func(t *testing.T, b []byte) {
		formattest.CodecRoundTrip(t, c, b)
	})
}

// A join without an equality condition keys its state by a row of no
// fields (Flink 1.20.5 and 2.3.0 write it as 8 bytes of header): such a key
// decodes to [] and writes back the same bytes.
func TestZeroFieldRowKey(t *testing.T) {
	c := typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass, LogicalTypes: []typeser.LogicalType{}})}
	b := []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0}
	v, err := c.Decode(b)
	if got, _ := json.Marshal(v); err != nil || string(got) != "[]" {
		t.Fatalf("%s, %v; want []", got, err)
	}
	back, err := c.Encode([]any{})
	if err != nil || !bytes.Equal(back, b) {
		t.Fatalf("[] encodes to %x, %v; want %x", back, err, b)
	}
}

// A RowData whose snapshot does not give its fields' types is walked by
// its length (so the parts of a key or an entry around it are found) but
// not decoded.
func TestRowDataWithoutTypesWalkedNotDecoded(t *testing.T) {
	s := testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.table.runtime.typeutils.RowDataSerializer"})
	b := []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a}
	if n, ok, err := typeser.Span(s, b); err != nil || !ok || n != 12 {
		t.Fatalf("span %d, %v, %v; want the 12 bytes of the row", n, ok, err)
	}
	var nd *snapshot.NotDecodedError
	if _, err := (typeser.Codec{S: s}).Decode(b[:12]); !errors.As(err, &nd) {
		t.Fatalf("%v, want not decoded", err)
	}
}
