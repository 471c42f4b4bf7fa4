package formattest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// CodecRoundTrip checks a codec on any bytes b: Decode must not panic, and
// what decodes must encode back, to b itself or, where b holds bytes a
// writer would not produce (padding that is not zero, slack after a part),
// to bytes that decode to the same value. Values with no JSON (NaN,
// infinities) are not encoded.
func CodecRoundTrip(t testing.TB, c snapshot.Codec, b []byte) {
	t.Helper()
	v, err := c.Decode(b)
	if err != nil {
		return
	}
	if _, err := json.Marshal(v); err != nil {
		return
	}
	enc, ok := c.(snapshot.Encoder)
	if !ok {
		t.Fatalf("%T decodes but does not encode", c)
	}
	got, err := enc.Encode(asJSON(t, v))
	if err != nil {
		t.Fatalf("0x%x decodes to %v but does not encode: %v", b, v, err)
	}
	if bytes.Equal(got, b) {
		return
	}
	again, err := c.Decode(got)
	if err != nil || !sameJSON(again, v) {
		t.Fatalf("0x%x decodes to %v, re-encodes to 0x%x that decodes to %v, %v", b, v, got, again, err)
	}
}

// asJSON is v as a user gives it back: marshalled, then read with numbers
// as they are written.
func asJSON(t testing.TB, v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
