package snapshot

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/keygroup"
)

// Type describes how the bytes of a key, namespace or value are encoded.
// Name selects a Codec; Class and SerializerSnapshot carry what a Flink
// serializer recorded (opaque, kept so it can be written back).
type Type struct {
	Name               string `json:"name" msgpack:"name"`
	Class              string `json:"class,omitempty" msgpack:"class,omitempty"`
	SerializerSnapshot []byte `json:"-" msgpack:"serializer_snapshot,omitempty"`
}

// Names of the types stateutil encodes itself. Integers are big-endian.
const (
	TypeString  = "string"  // UTF-8 bytes
	TypeInt32   = "int32"   // 4 bytes
	TypeInt64   = "int64"   // 8 bytes
	TypeBytes   = "bytes"   // opaque
	TypeMsgpack = "msgpack" // a msgpack document
	TypeJSON    = "json"    // a JSON document
	TypeVoid    = "void"    // the empty namespace
)

// Codec decodes a type's bytes for display and hashes keys the way Java's
// hashCode would.
type Codec interface {
	// Decode renders b as a JSON-compatible value.
	Decode(b []byte) (any, error)
	// HashCode is the Java hashCode of the key b encodes, or an error
	// wrapping keygroup.ErrUnknownKeyType.
	HashCode(b []byte) (int32, error)
}

var (
	codecsMu sync.RWMutex
	codecs   = map[string]Codec{}
)

// RegisterCodec makes a type name decodable.
func RegisterCodec(name string, c Codec) {
	codecsMu.Lock()
	defer codecsMu.Unlock()
	codecs[name] = c
}

func codecOf(t Type) (Codec, bool) {
	codecsMu.RLock()
	defer codecsMu.RUnlock()
	c, ok := codecs[t.Name]
	return c, ok
}

// Decode renders b by t's codec; unknown types and undecodable bytes come
// back as hex.
func (t Type) Decode(b []byte) any {
	if c, ok := codecOf(t); ok {
		if v, err := c.Decode(b); err == nil {
			return v
		}
	}
	return "0x" + hex.EncodeToString(b)
}

// HashCode is the Java hashCode of key bytes b of type t.
func (t Type) HashCode(b []byte) (int32, error) {
	c, ok := codecOf(t)
	if !ok {
		return 0, fmt.Errorf("%w: %q", keygroup.ErrUnknownKeyType, t.Name)
	}
	return c.HashCode(b)
}

// KeyGroupOf is the key group of key bytes b of type t.
func (t Type) KeyGroupOf(b []byte, maxParallelism int) (int, error) {
	h, err := t.HashCode(b)
	if err != nil {
		return 0, err
	}
	return keygroup.OfHash(h, maxParallelism), nil
}

// String renders the type for people: its name, with the class if any.
func (t Type) String() string {
	if t.Class != "" {
		return t.Name + "(" + t.Class + ")"
	}
	return t.Name
}

// IsZero reports an unset type.
func (t Type) IsZero() bool { return t.Name == "" && t.Class == "" && len(t.SerializerSnapshot) == 0 }

var errNoHash = fmt.Errorf("%w: values of this type are not keys", keygroup.ErrUnknownKeyType)

type fixedWidth struct{ width int }

func (c fixedWidth) read(b []byte) (int64, error) {
	if len(b) != c.width {
		return 0, fmt.Errorf("want %d bytes, have %d", c.width, len(b))
	}
	if c.width == 4 {
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func (c fixedWidth) Decode(b []byte) (any, error) { return c.read(b) }

func (c fixedWidth) HashCode(b []byte) (int32, error) {
	v, err := c.read(b)
	if err != nil {
		return 0, err
	}
	if c.width == 4 {
		return keygroup.HashInt32(int32(v)), nil
	}
	return keygroup.HashInt64(v), nil
}

type stringCodec struct{}

func (stringCodec) Decode(b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8")
	}
	return string(b), nil
}

func (stringCodec) HashCode(b []byte) (int32, error) {
	if !utf8.Valid(b) {
		return 0, errors.New("string key is not UTF-8")
	}
	return keygroup.HashString(string(b)), nil
}

type bytesCodec struct{}

func (bytesCodec) Decode(b []byte) (any, error)     { return "0x" + hex.EncodeToString(b), nil }
func (bytesCodec) HashCode(b []byte) (int32, error) { return keygroup.HashBytes(b), nil }

type msgpackCodec struct{}

func (msgpackCodec) Decode(b []byte) (any, error) {
	var v any
	err := msgpack.Unmarshal(b, &v)
	return v, err
}
func (msgpackCodec) HashCode([]byte) (int32, error) { return 0, errNoHash }

type jsonCodec struct{}

func (jsonCodec) Decode(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}
func (jsonCodec) HashCode([]byte) (int32, error) { return 0, errNoHash }

type voidCodec struct{}

func (voidCodec) Decode(b []byte) (any, error) {
	if len(b) != 0 {
		return nil, errors.New("void namespace has bytes")
	}
	return nil, nil
}
func (voidCodec) HashCode([]byte) (int32, error) { return 0, errNoHash }

func init() {
	RegisterCodec(TypeString, stringCodec{})
	RegisterCodec(TypeInt32, fixedWidth{4})
	RegisterCodec(TypeInt64, fixedWidth{8})
	RegisterCodec(TypeBytes, bytesCodec{})
	RegisterCodec(TypeMsgpack, msgpackCodec{})
	RegisterCodec(TypeJSON, jsonCodec{})
	RegisterCodec(TypeVoid, voidCodec{})
}

// EncodeInt32 is the stateutil encoding of an int32.
func EncodeInt32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// EncodeInt64 is the stateutil encoding of an int64.
func EncodeInt64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// EncodeText encodes a key given as text (e.g. on a command line) as type t.
func EncodeText(t string, text string) ([]byte, error) {
	switch t {
	case TypeString, TypeBytes:
		return []byte(text), nil
	case TypeInt32:
		v, err := strconv.ParseInt(text, 10, 32)
		return EncodeInt32(int32(v)), err
	case TypeInt64:
		v, err := strconv.ParseInt(text, 10, 64)
		return EncodeInt64(v), err
	}
	return nil, fmt.Errorf("cannot write a %s key as text", t)
}
