package streaming

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// testTable reads this family's serializers beside flink-core's.
var testTable = typeser.NewTable(Family)

const (
	sinkStateClass = "org.apache.flink.streaming.api.functions.sink.legacy.TwoPhaseCommitSinkFunction$StateSerializerSnapshot"
	stringClass    = "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot"
	longClass      = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
	voidClass      = "org.apache.flink.api.common.typeutils.base.VoidSerializer$VoidSerializerSnapshot"
)

// byType is the codec of a type expression, as a value carried into
// another format is decoded.
func byType(t testing.TB, expr string) typeser.Codec {
	t.Helper()
	c, err := testTable.CodecFactory(snapshot.Type{Name: typeser.TypePrefix + expr})
	if err != nil {
		t.Fatal(err)
	}
	return c.(typeser.Codec)
}

// sinkStateCodec is the codec of a two-phase commit sink state serializer of
// String transactions and the context serializer given, of the outer
// version and outer part given.
func sinkStateCodec(version int32, outer []byte, context string) typeser.Codec {
	return typeser.Codec{S: testTable.Bind(&typeser.SerializerSnapshot{Class: sinkStateClass, OuterVersion: version, Outer: outer,
		Nested: []*typeser.SerializerSnapshot{{Class: stringClass}, {Class: context}}})}
}

// jsonValue is v as encoders take it: its JSON text decoded, numbers as
// json.Number.
func jsonValue(t testing.TB, v any) any {
	t.Helper()
	text, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func randomLong(rng *rand.Rand) json.Number {
	return json.Number(strconv.FormatInt(rng.Int63()-rng.Int63(), 10))
}

func randomString(rng *rand.Rand) any {
	if rng.Intn(5) == 0 {
		return nil
	}
	runes := []rune("aé€😀 z")
	var b strings.Builder
	for range rng.Intn(6) {
		b.WriteRune(runes[rng.Intn(len(runes))])
	}
	return b.String()
}

// randomElement is a stream element of String records, of any kind.
func randomElement(rng *rand.Rand) any {
	var kind string
	fields := map[string]any{}
	switch rng.Intn(7) {
	case 0:
		kind = "record"
		fields["value"] = randomString(rng)
		fields["timestamp"] = randomLong(rng)
	case 1:
		kind = "record"
		fields["value"] = randomString(rng)
	case 2:
		kind = "watermark"
		fields["timestamp"] = randomLong(rng)
	case 3:
		kind = "internalWatermark"
		fields["timestamp"] = randomLong(rng)
		fields["subpartitionIndex"] = json.Number(strconv.Itoa(int(rng.Int31()) - 1<<30))
	case 4:
		kind = "latencyMarker"
		id := make([]byte, 16)
		rng.Read(id)
		fields["markedTime"] = randomLong(rng)
		fields["operatorId"] = hex.EncodeToString(id)
		fields["subtaskIndex"] = json.Number(strconv.Itoa(rng.Intn(1 << 15)))
	case 5:
		kind = "watermarkStatus"
		fields["status"] = []string{"ACTIVE", "IDLE"}[rng.Intn(2)]
	default:
		kind = "recordAttributes"
		fields["backlog"] = rng.Intn(2) == 0
	}
	return map[string]any{kind: fields}
}

func randomHolder(rng *rand.Rand) any {
	return map[string]any{"handle": randomString(rng), "transactionStartTime": randomLong(rng)}
}

// randomSinkState is a sink state of String transactions and Long
// contexts; the pending transaction is there unless nullable says it may
// be none.
func randomSinkState(rng *rand.Rand, nullable bool) any {
	var pending any = randomHolder(rng)
	if nullable && rng.Intn(2) == 0 {
		pending = nil
	}
	commits := []any{}
	for range rng.Intn(4) {
		commits = append(commits, randomHolder(rng))
	}
	var context any
	if rng.Intn(2) == 0 {
		context = randomLong(rng)
	}
	return map[string]any{"pendingTransaction": pending, "pendingCommitTransactions": commits, "context": context}
}

// Property: every value of each kind encodes to bytes that decode to it
// again, and that span exactly their length.
func TestValuesEncodeAndDecodeBack(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	elements, entries := byType(t, "streamelement(java.lang.String)"), byType(t, "bufferentry(java.lang.String)")
	nullable, strict, legacy := sinkStateCodec(4, []byte{1}, longClass), sinkStateCodec(4, []byte{0}, longClass), sinkStateCodec(2, nil, longClass)
	for i := 0; i < 2000; i++ {
		cases := []struct {
			c typeser.Codec
			v any
		}{
			{elements, randomElement(rng)},
			{entries, map[string]any{"element": randomString(rng), "hasBeenJoined": rng.Intn(2) == 0}},
			{nullable, randomSinkState(rng, true)},
			{strict, randomSinkState(rng, false)},
			{legacy, randomSinkState(rng, false)},
		}
		for _, c := range cases {
			want := jsonValue(t, c.v)
			b, err := c.c.Encode(want)
			if err != nil {
				t.Fatalf("%s: %v", mustJSON(t, want), err)
			}
			got, err := c.c.Decode(b)
			if err != nil {
				t.Fatalf("%s encodes to %x, which does not decode: %v", mustJSON(t, want), b, err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Fatalf("%s encodes to %x, which decodes to %s", w, b, g)
			}
			if n, ok, err := typeser.Span(c.c.S, b); err != nil || !ok || n != len(b) {
				t.Fatalf("%x spans %d, %v, %v", b, n, ok, err)
			}
		}
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bytes no Flink writes are damage at their offset; bytes whose value
// could not be written back as it was are not decoded.
func TestDamageAndNotDecoded(t *testing.T) {
	elements, entries := byType(t, "streamelement(java.lang.String)"), byType(t, "bufferentry(java.lang.String)")
	nullable, strict := sinkStateCodec(4, []byte{1}, longClass), sinkStateCodec(3, nil, longClass)
	cases := []struct {
		name string
		c    typeser.Codec
		hex  string
		err  string // "" for not decoded
	}{
		{"unknown tag", elements, "07", `offset 0: stream element tag 7 is none of Flink's`},
		{"negative tag", elements, "ff", `offset 0: stream element tag 255`},
		{"watermark status", elements, "0400000001", `offset 1: watermark status 1, Flink writes 0 (active) or -1 (idle)`},
		{"truncated timestamp", elements, "00000000", `offset 1: truncated record timestamp`},
		{"truncated record", elements, "0104", `offset 2: string of 3 characters`},
		{"backlog byte", elements, "0502", `offset 1: record attributes backlog flag: boolean byte is 2`},
		{"truncated marker", elements, "030000000000000001", `offset 9: truncated latency marker operator id`},
		{"joined byte", entries, "0200", `offset 0: buffer entry joined flag: boolean byte is 2`},
		{"pending flag", nullable, "02", `offset 0: pending transaction flag: boolean byte is 2`},
		{"negative count", nullable, "00ffffffff", `offset 1: pending commit transaction count: negative count -1`},
		{"hostile count", strict, "007fffffff", `offset 1: pending commit transaction count: count 2147483647 needs`},
		{"context flag", strict, "000000000003", `offset 5: context flag: boolean byte is 3`},
		// Flink's context is an Optional, never of null: a present one that
		// shows as null would be written back absent.
		{"present null context", sinkStateCodec(4, []byte{1}, voidClass), "00000000000100", ""},
	}
	for _, c := range cases {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.c.Decode(b)
		switch {
		case c.err == "":
			if !errors.Is(err, snapshot.ErrNotDecoded) {
				t.Errorf("%s: %v, %v; want not decoded", c.name, v, err)
			}
		case !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), c.err):
			t.Errorf("%s: %v, %v; want damage %q", c.name, v, err, c.err)
		}
	}
}

// JSON of the wrong shape is refused with a message naming what it
// wants, never written as something else.
func TestEncodeRefusesWrongShapes(t *testing.T) {
	elements, entries := byType(t, "streamelement(java.lang.String)"), byType(t, "bufferentry(java.lang.String)")
	strict := sinkStateCodec(4, []byte{0}, longClass)
	cases := []struct {
		c   typeser.Codec
		v   string
		err string
	}{
		{elements, `{"record":{"value":"a"},"watermark":{"timestamp":1}}`, "want a stream element"},
		{elements, `{"frame":{}}`, "want a stream element"},
		{elements, `{"record":5}`, "record: want an object of value"},
		{elements, `{"record":{"value":"a","timestamp":"soon"}}`, "record timestamp"},
		{elements, `{"watermarkStatus":{"status":[]}}`, `want "ACTIVE" or "IDLE"`},
		{elements, `{"latencyMarker":{"markedTime":1,"operatorId":"00ff","subtaskIndex":0}}`, "not 32 hex digits"},
		{elements, `{"recordAttributes":{"backlog":1}}`, "want an object of backlog"},
		{elements, `{"internalWatermark":{"timestamp":1,"subpartitionIndex":4294967296}}`, "subpartition index"},
		{entries, `{"element":"a","hasBeenJoined":"yes"}`, "not true or false"},
		{entries, `["a",true]`, "want an object of element, hasBeenJoined"},
		{strict, `{"pendingTransaction":null,"pendingCommitTransactions":[],"context":null}`, "writes a pending transaction always"},
		{strict, `{"pendingTransaction":{"handle":"a","transactionStartTime":1},"pendingCommitTransactions":{},"context":null}`, "is not a list"},
		{strict, `{"pendingTransaction":{"handle":"a"},"pendingCommitTransactions":[],"context":null}`, "pending transaction: want an object of handle, transactionStartTime"},
	}
	for _, c := range cases {
		v := jsonValue(t, json.RawMessage(c.v))
		if b, err := c.c.Encode(v); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %x, %v; want an error containing %q", c.v, b, err, c.err)
		}
	}
}
