package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/stateutil/stateutil/internal/safemsgpack"
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

// Encoder is implemented by codecs that write values given as decoded
// JSON (strings, json.Number, bools, []any, map[string]any): how a key
// typed on a command line becomes the bytes a snapshot stores.
type Encoder interface {
	Encode(v any) ([]byte, error)
}

// EncodeKey encodes text, a key as a user writes it, as type t: JSON when
// it parses as JSON (so '["a",1]' is a tuple and '"42"' a string), else
// the text itself as a string. Text that t cannot take is ErrBadValue.
func (c *Codecs) EncodeKey(t Type, text string) ([]byte, error) {
	codec, err := c.Codec(t)
	if err != nil {
		return nil, err
	}
	enc, ok := codec.(Encoder)
	if !ok {
		return nil, fmt.Errorf("stateutil cannot write keys of type %s", t)
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: %q is not UTF-8 text (write bytes as 0x-prefixed hex)", ErrBadValue, text)
	}
	var v any = text
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var parsed any
	if err := dec.Decode(&parsed); err == nil && !dec.More() {
		v = parsed
	}
	b, err := enc.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a %s: %w", ErrBadValue, text, t, err)
	}
	return b, nil
}

// TextOf is the text of a scalar JSON value, for types whose values are
// written as text (strings, numbers).
func TextOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// CodecFactory builds the codec of a type from what the type records (its
// name, class and serializer snapshot), so that a codec follows from the
// snapshot alone, whichever process or format it was read from, and from
// the schemas the user gave for classes the snapshot only names (nil:
// none).
type CodecFactory func(t Type, s *Schemas) (Codec, error)

// Codecs finds the codec of a type: an exact name, else the longest
// registered prefix (a format's own namespace of names, such as "flink:").
// Built codecs are kept, keyed by everything the factory was given.
type Codecs struct {
	exact    map[string]CodecFactory
	prefixes map[string]CodecFactory
	built    sync.Map // codecKey -> Codec or error
	schemas  *Schemas
}

type codecKey struct{ name, class, snapshot string }

// NewCodecs returns the codecs of stateutil's own types.
func NewCodecs() *Codecs {
	c := &Codecs{exact: map[string]CodecFactory{}, prefixes: map[string]CodecFactory{}}
	for name, codec := range map[string]Codec{
		TypeString: stringCodec{}, TypeInt32: fixedWidth{4}, TypeInt64: fixedWidth{8},
		TypeBytes: bytesCodec{}, TypeMsgpack: msgpackCodec{}, TypeJSON: jsonCodec{}, TypeVoid: voidCodec{},
	} {
		c.Register(name, func(Type, *Schemas) (Codec, error) { return codec, nil })
	}
	return c
}

// Register adds the factory of type name; a name ending in ':' covers
// every name with that prefix. Registering a name twice panics.
func (c *Codecs) Register(name string, f CodecFactory) {
	m := c.exact
	if strings.HasSuffix(name, ":") {
		m = c.prefixes
	}
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("snapshot: codec %q registered twice", name))
	}
	m[name] = f
}

// Codec returns the codec of t, or an error wrapping
// keygroup.ErrUnknownKeyType when no factory knows it.
func (c *Codecs) Codec(t Type) (Codec, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: %q (no codecs given)", keygroup.ErrUnknownKeyType, t.Name)
	}
	k := codecKey{t.Name, t.Class, string(t.SerializerSnapshot)}
	if v, ok := c.built.Load(k); ok {
		return unpackCodec(v)
	}
	f := c.exact[t.Name]
	if f == nil {
		best := ""
		for p, pf := range c.prefixes {
			if strings.HasPrefix(t.Name, p) && len(p) > len(best) {
				best, f = p, pf
			}
		}
	}
	var v any
	if f == nil {
		v = fmt.Errorf("%w: %q", keygroup.ErrUnknownKeyType, t.Name)
	} else if codec, err := f(t, c.schemas); err != nil {
		v = fmt.Errorf("type %s: %w", t, err)
	} else {
		v = codec
	}
	v, _ = c.built.LoadOrStore(k, v)
	return unpackCodec(v)
}

func unpackCodec(v any) (Codec, error) {
	if err, ok := v.(error); ok {
		return nil, err
	}
	return v.(Codec), nil
}

// Decode renders b as type t; a value whose serializer stateutil does not
// implement comes back as a NotDecoded, unknown types and undecodable
// bytes as hex.
func (c *Codecs) Decode(t Type, b []byte) any { return c.Decoder(t)(b) }

// Decoder is Decode for one type, resolved once: what a caller decoding
// many values of a type uses.
func (c *Codecs) Decoder(t Type) func(b []byte) any {
	codec, err := c.Codec(t)
	return func(b []byte) any {
		if err == nil {
			v, err := codec.Decode(b)
			if err == nil {
				return v
			}
			if nd := (*NotDecodedError)(nil); errors.As(err, &nd) {
				shown := nd.Bytes
				if shown == nil {
					shown = b
				}
				return NotDecoded{Class: nd.Class, Bytes: bytes.Clone(shown)}
			}
		}
		return "0x" + hex.EncodeToString(b)
	}
}

// ScalarDecoder is implemented by codecs that can decode some values
// without allocating: what a dump of millions of entries decodes most.
// ok is false where DecodeScalar cannot; the caller then decodes with
// Decode, whose value a Scalar always equals where ok.
type ScalarDecoder interface {
	DecodeScalar(b []byte) (s Scalar, ok bool)
}

// Checker is implemented by codecs that can tell whether bytes decode
// without decoding them: what verify asks of every entry.
type Checker interface {
	Check(b []byte) error
}

// Check is nil when b decodes with c, else Decode's error. It decodes
// nothing it need not: through c's Check, or its DecodeScalar where that
// succeeds.
func Check(c Codec, b []byte) error {
	switch d := c.(type) {
	case Checker:
		return d.Check(b)
	case ScalarDecoder:
		if _, ok := d.DecodeScalar(b); ok {
			return nil
		}
	}
	_, err := c.Decode(b)
	return err
}

// Scalar is a null, an integer, a boolean or a string decoded without
// allocating: a string's bytes alias the bytes it was decoded from.
type Scalar struct {
	Kind ScalarKind
	Int  int64 // ScalarInt; ScalarBool: 1 for true
	Str  []byte
}

// ScalarKind says which of Scalar's fields holds the value.
type ScalarKind uint8

// The kinds of Scalar.
const (
	ScalarNull ScalarKind = iota
	ScalarInt
	ScalarBool
	ScalarString
)

// ScalarDecoder is type t's codec's DecodeScalar, nil when it has none.
func (c *Codecs) ScalarDecoder(t Type) func(b []byte) (Scalar, bool) {
	codec, err := c.Codec(t)
	if err != nil {
		return nil
	}
	if d, ok := codec.(ScalarDecoder); ok {
		return d.DecodeScalar
	}
	return nil
}

// HashCode is the Java hashCode of key bytes b of type t.
func (c *Codecs) HashCode(t Type, b []byte) (int32, error) {
	codec, err := c.Codec(t)
	if err != nil {
		return 0, err
	}
	return codec.HashCode(b)
}

// Hashable reports whether keys of type t have a known hash, and if not
// why (an error wrapping keygroup.ErrUnknownKeyType).
func (c *Codecs) Hashable(t Type) error {
	_, err := c.HashCode(t, nil)
	if errors.Is(err, keygroup.ErrUnknownKeyType) {
		return err
	}
	return nil
}

// KeyGroupOf is the key group of key bytes b of type t.
func (c *Codecs) KeyGroupOf(t Type, b []byte, maxParallelism int) (int, error) {
	h, err := c.HashCode(t, b)
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

func (c fixedWidth) DecodeScalar(b []byte) (Scalar, bool) {
	v, err := c.read(b)
	return Scalar{Kind: ScalarInt, Int: v}, err == nil
}

func (c fixedWidth) Encode(v any) ([]byte, error) {
	text, ok := TextOf(v)
	if !ok {
		return nil, fmt.Errorf("want a number, not %v", v)
	}
	n, err := strconv.ParseInt(text, 10, 8*c.width)
	if err != nil {
		return nil, err
	}
	if c.width == 4 {
		return binary.BigEndian.AppendUint32(nil, uint32(n)), nil
	}
	return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
}

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

func (stringCodec) DecodeScalar(b []byte) (Scalar, bool) {
	return Scalar{Kind: ScalarString, Str: b}, utf8.Valid(b)
}

func (stringCodec) HashCode(b []byte) (int32, error) {
	if !utf8.Valid(b) {
		return 0, errors.New("string key is not UTF-8")
	}
	return keygroup.HashString(string(b)), nil
}

func (stringCodec) Encode(v any) ([]byte, error) {
	text, ok := TextOf(v)
	if !ok {
		return nil, fmt.Errorf("want a string, not %v", v)
	}
	return []byte(text), nil
}

type bytesCodec struct{}

// Encode takes 0x-prefixed hex, or text as its UTF-8 bytes.
func (bytesCodec) Encode(v any) ([]byte, error) {
	text, ok := TextOf(v)
	if !ok {
		return nil, fmt.Errorf("want 0x-prefixed hex or text, not %v", v)
	}
	if h, ok := strings.CutPrefix(text, "0x"); ok {
		return hex.DecodeString(h)
	}
	return []byte(text), nil
}

func (bytesCodec) Decode(b []byte) (any, error)     { return "0x" + hex.EncodeToString(b), nil }
func (bytesCodec) Check([]byte) error               { return nil } // any bytes are a byte string
func (bytesCodec) HashCode(b []byte) (int32, error) { return keygroup.HashBytes(b), nil }

type msgpackCodec struct{}

// Decode decodes a value that may be damaged or hostile (see safemsgpack).
func (msgpackCodec) Decode(b []byte) (any, error) {
	var v any
	err := safemsgpack.Unmarshal(b, &v)
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

func (jsonCodec) Encode(v any) ([]byte, error) { return json.Marshal(v) }

type voidCodec struct{}

func (voidCodec) Encode(any) ([]byte, error) { return nil, nil }

func (voidCodec) Decode(b []byte) (any, error) {
	if len(b) != 0 {
		return nil, errors.New("void namespace has bytes")
	}
	return nil, nil
}
func (voidCodec) HashCode([]byte) (int32, error) { return 0, errNoHash }

// EncodeInt64 is the stateutil encoding of an int64.
func EncodeInt64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
