package snapshot

import (
	"encoding/json"
	"fmt"
	"testing"
)

// notDecodedCodec fails every value as one whose serializer is not
// implemented, as a format's codec does.
type notDecodedCodec struct{}

func (notDecodedCodec) Decode([]byte) (any, error) {
	return nil, fmt.Errorf("field tags: %w", &NotDecodedError{Class: "com.acme.Order", Serializer: "KryoSerializerSnapshot", ValueClass: "java.util.List"})
}
func (notDecodedCodec) HashCode([]byte) (int32, error) { return 0, nil }

// A value that was not decoded is shown tagged with its class, never as the
// bare hex string of a bytes value; JSON escapes the class.
func TestDecodeNotDecoded(t *testing.T) {
	c := NewCodecs()
	c.Register("acme:", func(Type, *Schemas) (Codec, error) { return notDecodedCodec{}, nil })
	b := []byte{0x02, 0xff}
	v := c.Decode(Type{Name: "acme:order"}, b)
	b[0] = 0 // the value keeps bytes of its own
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"@class":"com.acme.Order","@bytes":"0x02ff"}`; string(got) != want {
		t.Errorf("Decode = %s, want %s", got, want)
	}
	if got, want := c.Decode(Type{Name: TypeBytes}, b), "0x00ff"; got != want {
		t.Errorf("bytes value = %v, want %v", got, want)
	}
	got, _ = json.Marshal(NotDecoded{Class: "a\"b\u2028", Bytes: nil})
	if want := `{"@class":"a\"b\u2028","@bytes":"0x"}`; string(got) != want {
		t.Errorf("tagged = %s, want %s", got, want)
	}
}
