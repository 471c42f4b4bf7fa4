package runtime

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/snapshot"
)

// Serializer turns values of T into the bytes kept in state and back.
type Serializer[T any] interface {
	// Type names the encoding in snapshot descriptors.
	Type() snapshot.Type
	// Encode appends v's bytes to dst.
	Encode(dst []byte, v T) []byte
	// Decode reads a value written by Encode.
	Decode(b []byte) (T, error)
}

// Int64Serializer encodes int64 as 8 big-endian bytes (snapshot.TypeInt64).
type Int64Serializer struct{}

// Type implements Serializer.
func (Int64Serializer) Type() snapshot.Type { return snapshot.Type{Name: snapshot.TypeInt64} }

// Encode implements Serializer.
func (Int64Serializer) Encode(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// Decode implements Serializer.
func (Int64Serializer) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("int64 value has %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// StringSerializer encodes strings as their UTF-8 bytes (snapshot.TypeString).
type StringSerializer struct{}

// Type implements Serializer.
func (StringSerializer) Type() snapshot.Type { return snapshot.Type{Name: snapshot.TypeString} }

// Encode implements Serializer.
func (StringSerializer) Encode(dst []byte, v string) []byte { return append(dst, v...) }

// Decode implements Serializer.
func (StringSerializer) Decode(b []byte) (string, error) { return string(b), nil }

// MsgpackSerializer encodes any msgpack-encodable T (snapshot.TypeMsgpack).
type MsgpackSerializer[T any] struct{}

// Type implements Serializer.
func (MsgpackSerializer[T]) Type() snapshot.Type { return snapshot.Type{Name: snapshot.TypeMsgpack} }

// Encode implements Serializer. A value msgpack cannot encode is a
// programming error in the job and panics.
func (MsgpackSerializer[T]) Encode(dst []byte, v T) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("runtime: msgpack cannot encode %T: %v", v, err))
	}
	return append(dst, b...)
}

// Decode implements Serializer. The bytes come from snapshots, which may
// be damaged or hostile: see safemsgpack.
func (MsgpackSerializer[T]) Decode(b []byte) (T, error) {
	var v T
	err := safemsgpack.Unmarshal(b, &v)
	return v, err
}
