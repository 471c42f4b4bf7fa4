package javaserial

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

var testTable = typeser.NewTable(Family)

func codec(t testing.TB) typeser.Codec {
	t.Helper()
	c, err := testTable.CodecFactory(snapshot.Type{Name: typeser.TypePrefix + "javaserialization"})
	if err != nil {
		t.Fatal(err)
	}
	return c.(typeser.Codec)
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An object that holds itself shows, where it holds itself, as its class
// and "@cycle", not as an endless tree: the stream of a class C with one
// field self referring back to the object (handle 2: the class
// descriptor is 0, the field's type name 1).
func TestCycle(t *testing.T) {
	b := unhex(t, "aced0005 73 72 0001 43 0000000000000001 02 0001 4c 0004 73656c66 74 0003 4c433b 78 70 71 007e0002")
	v, err := codec(t).Decode(b)
	text, _ := json.Marshal(v)
	if err != nil || string(text) != `{"@class":"C","self":{"@class":"C","@cycle":true}}` {
		t.Errorf("%s, %v", text, err)
	}
	if n, ok, err := typeser.Span(codec(t).S, b); err != nil || !ok || n != len(b) {
		t.Errorf("spans %d of %d, %v, %v", n, len(b), ok, err)
	}
}

// Bytes that are no Java stream are damage at their offset; a value is
// not written from JSON, only as its bytes.
func TestDamageAndNoEncoder(t *testing.T) {
	c := codec(t)
	for _, tc := range []struct{ hex, err string }{
		{"aced0006 7400 00", `offset 2: Java serialization version 6, want 5`},
		{"acee0005 7400 00", `offset 0: Java serialization magic is 0xACEE`},
		{"aced0005 7400 05 6162", `offset 7: truncated Java string`},
		{"aced0005 99", `offset 4: unknown Java type code 0x99`},
		{"aced0005 71 007e0009", `offset 4: Java back reference 0x7E0009 to no handle`},
	} {
		v, err := c.Decode(unhex(t, tc.hex))
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, %v; want damage %q", tc.hex, v, err, tc.err)
		}
	}
	if b, err := c.Encode("a"); !errors.Is(err, typeser.ErrNoEncoder) {
		t.Errorf(`"a" encodes to %x, %v`, b, err)
	}
	raw := unhex(t, "aced0005740001 61")
	if b, err := c.Encode(map[string]any{"@class": "java.lang.String", "@bytes": "0x" + hex.EncodeToString(raw)}); err != nil || string(b) != string(raw) {
		t.Errorf("its bytes encode to %x, %v", b, err)
	}
}
