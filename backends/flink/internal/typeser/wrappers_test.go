package typeser

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

const (
	genericArrayClass = "org.apache.flink.api.common.typeutils.base.GenericArraySerializerSnapshot"
	ttlClass          = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot"
	legacyTTLClass    = "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerConfigSnapshot"
	timerClass        = "org.apache.flink.streaming.api.operators.TimerSerializerSnapshot"
	ttlAwareClass     = "org.apache.flink.runtime.state.ttl.TtlAwareSerializerSnapshot"
	voidClass         = "org.apache.flink.api.common.typeutils.base.VoidSerializer$VoidSerializerSnapshot"
	windowClass       = "org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot"
)

func bound(class string, nested ...string) *SerializerSnapshot {
	s := &SerializerSnapshot{Class: class}
	for _, n := range nested {
		s.Nested = append(s.Nested, &SerializerSnapshot{Class: n})
	}
	return coreTable.Bind(s)
}

// asJSON is v as encoders take it: its JSON text decoded, numbers as
// json.Number.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	return jsonValue(t, string(mustMarshal(t, v)))
}

func randomNumber(rng *rand.Rand) json.Number {
	return json.Number(strconv.FormatInt(rng.Int63()-rng.Int63(), 10))
}

func randomText(rng *rand.Rand) any {
	if rng.Intn(4) == 0 {
		return nil
	}
	return strings.Repeat("é", rng.Intn(3)) + strconv.Itoa(rng.Intn(1000))
}

// Property: generic arrays, TTL values (either order of their parts),
// timers and TTL-aware wrappers encode every value to bytes that decode
// to it again and span exactly their length.
func TestWrapperValuesEncodeAndDecodeBack(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	array := bound(genericArrayClass, stringClass)
	ttl, legacyTTL := bound(ttlClass, longClass, stringClass), bound(legacyTTLClass, stringClass, longClass)
	timer := bound(timerClass, longClass, windowClass)
	aware := coreTable.Bind(&SerializerSnapshot{Class: ttlAwareClass, Outer: []byte{1}, Nested: []*SerializerSnapshot{ttl}})
	for i := 0; i < 2000; i++ {
		var elems []any
		for range rng.Intn(5) {
			elems = append(elems, randomText(rng))
		}
		ttlValue := map[string]any{"last_access": randomNumber(rng), "value": randomText(rng)}
		cases := []struct {
			s *SerializerSnapshot
			v any
		}{
			{array, append([]any{}, elems...)},
			{ttl, ttlValue},
			{legacyTTL, ttlValue},
			{aware, ttlValue},
			{timer, map[string]any{"timestamp": randomNumber(rng), "key": randomNumber(rng),
				"namespace": map[string]any{"start": randomNumber(rng), "end": randomNumber(rng)}}},
		}
		for _, c := range cases {
			want := asJSON(t, c.v)
			b, err := (Codec{S: c.s}).Encode(want)
			if err != nil {
				t.Fatalf("%s: %s: %v", c.s.Class, mustMarshal(t, want), err)
			}
			got, err := (Codec{S: c.s}).Decode(b)
			if err != nil || !bytes.Equal(mustMarshal(t, got), mustMarshal(t, want)) {
				t.Fatalf("%s: %s encodes to %x, which decodes to %v, %v", c.s.Class, mustMarshal(t, want), b, got, err)
			}
			if n, ok, err := Span(c.s, b); err != nil || !ok || n != len(b) {
				t.Fatalf("%s: %x spans %d, %v, %v", c.s.Class, b, n, ok, err)
			}
		}
	}
}

// A generic array's present element that shows as null would be written
// back absent: the array is not decoded. An absent one is null.
func TestGenericArrayPresentNull(t *testing.T) {
	voids := bound(genericArrayClass, voidClass)
	if v, err := (Codec{S: voids}).Decode([]byte{0, 0, 0, 2, 0, 1, 0}); !errors.Is(err, snapshot.ErrNotDecoded) {
		t.Errorf("[absent, Void null]: %v, %v; want not decoded", v, err)
	}
	if v, err := (Codec{S: voids}).Decode([]byte{0, 0, 0, 1, 0}); err != nil || len(v.([]any)) != 1 || v.([]any)[0] != nil {
		t.Errorf("[absent]: %v, %v", v, err)
	}
}

// JSON of the wrong shape is refused with a message naming what it
// wants.
func TestWrapperEncodeRefusesWrongShapes(t *testing.T) {
	cases := []struct {
		s   *SerializerSnapshot
		v   string
		err string
	}{
		{bound(genericArrayClass, stringClass), `{"a":1}`, "want a JSON array"},
		{bound(genericArrayClass, longClass), `[1,"x"]`, "element 1"},
		{bound(ttlClass, longClass, stringClass), `{"value":"a"}`, `want {"last_access": .., "value": ..}`},
		{bound(ttlClass, longClass, stringClass), `{"value":"a","last_access":"yesterday"}`, "invalid syntax"},
		{bound(timerClass, longClass, stringClass), `{"timestamp":1,"key":2}`, "want {\"timestamp\""},
		{bound(timerClass, longClass, stringClass), `{"timestamp":1,"key":2,"space":"a"}`, "timer namespace missing"},
		{bound(timerClass, longClass, stringClass), `{"timestamp":1.5,"key":2,"namespace":"a"}`, "timer timestamp"},
	}
	for _, c := range cases {
		if b, err := (Codec{S: c.s}).Encode(jsonValue(t, c.v)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s %s: %x, %v; want an error containing %q", c.s.Class, c.v, b, err, c.err)
		}
	}
}

// A TtlAwareSerializerSnapshot is its flag and the wrapped snapshot; one
// whose flag is no boolean is not parsed as one, and its values are not
// decoded rather than read by a guess.
func TestTtlAwareSnapshotFlag(t *testing.T) {
	snap := func(flag byte) []byte {
		var w wire.Writer
		w.I32(2)
		w.UTF(ttlAwareClass)
		w.I32(1)
		w.U8(flag)
		w.UTF(longClass)
		w.I32(3)
		return w.B
	}
	for _, c := range []struct {
		flag   byte
		parsed bool
	}{{0, true}, {1, true}, {2, false}} {
		raw := snap(c.flag)
		r := wire.NewReader(raw, "snapshot", 0)
		s := (&SnapReader{R: r, Table: coreTable}).SnapshotProxy(func(q int) bool { return q == len(raw) })
		if r.Err != nil || s == nil {
			t.Fatalf("flag %d: %v", c.flag, r.Err)
		}
		if parsed := !s.Opaque && len(s.Nested) == 1; parsed != c.parsed {
			t.Errorf("flag %d: parsed %v (%+v), want %v", c.flag, parsed, s, c.parsed)
		}
		v, err := (Codec{S: s}).Decode(binary.BigEndian.AppendUint64(nil, 5))
		if c.parsed && (err != nil || v != int64(5)) || !c.parsed && !errors.Is(err, snapshot.ErrNotDecoded) {
			t.Errorf("flag %d: decodes 5 to %v, %v", c.flag, v, err)
		}
	}
}
