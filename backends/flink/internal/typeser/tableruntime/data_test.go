package tableruntime

import (
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/vectorfile"
	"github.com/stateutil/stateutil/snapshot"
)

// vectorCodec is the codec of a 2.3.0 vector, by name.
func vectorCodec(t *testing.T, name string) typeser.Codec {
	t.Helper()
	for _, v := range readVectors(t) {
		if v.Version == "2.3.0" && v.Name == name {
			return typeser.Codec{S: snapshotOf(t, v)}
		}
	}
	t.Fatalf("no 2.3.0 vector %s", name)
	return typeser.Codec{}
}

// Bytes that contradict what a serializer Flink wrote them with says are
// damage, with where; none of them allocates by a length it cannot hold.
func TestTableValuesDamage(t *testing.T) {
	for _, c := range []struct {
		vector, bytes, want string
	}{
		{"timestamp-9", "0000018bcfe5687b000f4240", "nanoseconds of its millisecond are 1000000"},
		{"timestamp-9", "0000018bcfe5687b0006", "truncated"},
		{"decimal-wide", "7fffffff01", "length"},
		{"decimal-compact", "00000000", "truncated"},
		{"array-bigint", "ffffff00", "length"},
		{"array-bigint", "000000080300000000000000", "cannot hold 3 elements"},
		{"map-varchar-int", "000000080000100000000000", "map key array"},
		{"linkedlist-mask", "000000034100000000000000010000000000000003", "bits set past its 3 elements"},
		{"linkedlist-mask", "7fffffff00", "null mask needs 268435456 bytes"},
		{"linkedlist-mask", "ffffffff00", "negative count -1"},
		{"linkedlist-nomask", "0000000300000000000000040000000000000005", "truncated"},
		{"linkedlist-nomask", "7fffffff00", "count 2147483647 needs"},
		{"raw-long", "0000000a000000000000002a0000", "bytes after the RAW value"},
		{"raw-long", "00000004000000", "length"},
		{"dataview-null", "01", "Flink writes 0"},
		{"nullawaremap", "000000010200", "boolean"},
		{"countwindow", "00000000", "truncated"},
		{"sqn-metasqninfo", "000000000000000a", "truncated"},
	} {
		codec := vectorCodec(t, c.vector)
		_, err := codec.Decode(vectorfile.Unhex(t, c.bytes))
		if err == nil || errors.Is(err, snapshot.ErrNotDecoded) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s 0x%s: got %v, want damage with offset: %s", c.vector, c.bytes, err, c.want)
		}
	}
}

// Values that cannot be what a serializer writes are refused when written.
func TestTableValuesRefusedWhenWritten(t *testing.T) {
	for _, c := range []struct {
		vector string
		value  any
	}{
		{"timestamp-9", map[string]any{"millisecond": 1, "nanoOfMillisecond": 1_000_000}},
		{"timestamp-3", "yesterday"},
		{"decimal-compact", "12.345"},
		{"decimal-compact", "123456789012345678.00"},
		{"array-bigint", map[string]any{}},
		{"countwindow", map[string]any{"id": 1, "end": 2}},
		{"dataview-null", 0},
		{"nullawaremap", []any{[]any{"a"}}},
		{"sqn-rowsqninfo", map[string]any{"firstSqn": 1}},
	} {
		if b, err := vectorCodec(t, c.vector).Encode(c.value); err == nil {
			t.Errorf("%s: %v encodes to 0x%x, want refused", c.vector, c.value, b)
		}
	}
}

// A LinkedListSerializer snapshot whose outer part says neither yes nor no
// to a null mask does not say how its values are laid out: they are not
// decoded (never guessed, never damage).
func TestLinkedListUnknownMaskNotDecoded(t *testing.T) {
	s := &typeser.SerializerSnapshot{Class: "org.apache.flink.table.runtime.typeutils.LinkedListSerializer$LinkedListSerializerSnapshot",
		OuterVersion: 3, Outer: []byte{2}, Nested: []*typeser.SerializerSnapshot{{Class: "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"}}}
	_, err := typeser.Codec{S: testTable.Bind(s)}.Decode(vectorfile.Unhex(t, "0000000200000000000000040000000000000005"))
	if !errors.Is(err, snapshot.ErrNotDecoded) {
		t.Fatalf("got %v, want not decoded", err)
	}
}
