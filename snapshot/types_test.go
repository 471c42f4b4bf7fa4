package snapshot

import (
	"bytes"
	"runtime"
	"testing"
)

// A msgpack value of 50 nested array headers each claiming 2^32-1
// elements, 250 bytes, made the decoder set memory aside by the claims
// and ran inspect --values out of memory: a fatal error, which no recover
// catches. It decodes as bytes now, having allocated about nothing.
func TestMsgpackValueWithHugeClaims(t *testing.T) {
	codecs := NewCodecs()
	bomb := bytes.Repeat([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, 50)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := codecs.Decode(Type{Name: TypeMsgpack}, bomb)
	runtime.ReadMemStats(&after)
	if s, ok := v.(string); !ok || s[:6] != "0xddff" {
		t.Fatalf("decoded as %v, want the bytes in hex", v)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("decoding %d bytes allocated %d", len(bomb), n)
	}
	if v := codecs.Decode(Type{Name: TypeMsgpack}, []byte{0x92, 0x01, 0xa1, 'x'}); len(v.([]any)) != 2 {
		t.Fatalf("a valid value decoded as %v", v)
	}
}
