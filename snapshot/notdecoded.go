package snapshot

import (
	"encoding/hex"
	"encoding/json"
	"errors"
)

// ErrNotDecoded is matched by the error of a value whose serializer
// stateutil does not implement (a class under Kryo, a custom serializer, an
// unknown serializer snapshot). Such a value is not damage: its bytes are
// kept and shown as a NotDecoded.
var ErrNotDecoded = errors.New("not decoded")

// NotDecodedError says why a value was not decoded.
type NotDecodedError struct {
	// Class is the class of the whole value, as its NotDecoded shows it.
	Class string
	// Serializer is the serializer (snapshot) class stateutil does not
	// implement, and ValueClass the class of the values it writes, where
	// the snapshot records one (a Kryo or POJO type): the part that
	// stopped the decoding, the whole value or a part of it.
	Serializer, ValueClass string
	// Bytes are what the value shows of itself, where not all its bytes:
	// the part its serializer wrote after what names the class (a Kryo
	// class with a serializer of its own). nil: all of them.
	Bytes []byte
}

func (e *NotDecodedError) Error() string {
	s := e.Serializer
	if e.ValueClass != "" {
		s += " of " + e.ValueClass
	}
	return "stateutil does not decode values of " + s
}

// Unwrap makes every NotDecodedError match ErrNotDecoded.
func (e *NotDecodedError) Unwrap() error { return ErrNotDecoded }

// NotDecoded is how a value that was not decoded is shown: the JSON object
// {"@class": class, "@bytes": "0x…"}, so that it is never taken for a
// byte[] value.
type NotDecoded struct {
	Class string
	Bytes []byte
}

// MarshalJSON writes the tagged object.
func (v NotDecoded) MarshalJSON() ([]byte, error) { return []byte(v.String()), nil }

// String is the JSON text of the tagged object.
func (v NotDecoded) String() string {
	class, _ := json.Marshal(v.Class) // a string always marshals
	return `{"@class":` + string(class) + `,"@bytes":"0x` + hex.EncodeToString(v.Bytes) + `"}`
}
