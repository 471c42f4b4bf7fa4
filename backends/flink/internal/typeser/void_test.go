package typeser

import (
	"testing"
)

// A void namespace is the one 0 byte Flink writes; anything else is damage,
// on the path every namespace-less entry takes as on the general one.
func TestVoidNamespaceDecode(t *testing.T) {
	c := Codec{S: &SerializerSnapshot{Class: "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"}}
	if v, err := c.Decode([]byte{0}); v != nil || err != nil {
		t.Errorf("Decode(0x00) = %v, %v; want nil, nil", v, err)
	}
	for _, b := range [][]byte{{1}, {0x80}, {0, 0}, {}} {
		if v, err := c.Decode(b); err == nil {
			t.Errorf("Decode(%x) = %v, no error; want one", b, v)
		}
	}
}
