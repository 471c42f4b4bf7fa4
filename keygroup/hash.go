package keygroup

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
)

// KeyType names a key type whose Java hashCode stateutil knows.
type KeyType string

// Key types with a known Java hashCode.
const (
	String KeyType = "string" // java.lang.String
	Int32  KeyType = "int32"  // java.lang.Integer
	Int64  KeyType = "int64"  // java.lang.Long
	Bytes  KeyType = "bytes"  // hashed as java.util.Arrays.hashCode(byte[])
)

// ErrUnknownKeyType reports a key type with no known hash.
var ErrUnknownKeyType = errors.New("key type has no known hash")

// ParseKeyType accepts stateutil's names and the Java names users know.
func ParseKeyType(s string) (KeyType, error) {
	switch s {
	case "string", "String", "java.lang.String":
		return String, nil
	case "int", "int32", "integer", "Integer", "java.lang.Integer":
		return Int32, nil
	case "long", "int64", "Long", "java.lang.Long":
		return Int64, nil
	case "bytes", "byte[]":
		return Bytes, nil
	}
	return "", fmt.Errorf("%w: %q (known: string, int, long, bytes)", ErrUnknownKeyType, s)
}

// HashString is java.lang.String.hashCode over the UTF-16 code units of s.
func HashString(s string) int32 {
	var h int32
	for _, r := range s { // invalid UTF-8 is U+FFFD, as []rune(s) makes it
		if r < 0x10000 {
			h = 31*h + r
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		h = 31*(31*h+hi) + lo
	}
	return h
}

// HashInt32 is java.lang.Integer.hashCode.
func HashInt32(v int32) int32 { return v }

// HashInt64 is java.lang.Long.hashCode.
func HashInt64(v int64) int32 { return int32(v ^ int64(uint64(v)>>32)) }

// HashBytes is java.util.Arrays.hashCode(byte[]) with Java's signed bytes.
func HashBytes(b []byte) int32 {
	h := int32(1)
	for _, c := range b {
		h = 31*h + int32(int8(c))
	}
	return h
}

// HashText parses a key written as text (as on the command line) and
// returns its Java hashCode.
func HashText(t KeyType, text string) (int32, error) {
	switch t {
	case String:
		return HashString(text), nil
	case Int32:
		v, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("key %q is not an int: %w", text, err)
		}
		return HashInt32(int32(v)), nil
	case Int64:
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("key %q is not a long: %w", text, err)
		}
		return HashInt64(v), nil
	case Bytes:
		return HashBytes([]byte(text)), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownKeyType, t)
}
