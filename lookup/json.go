package lookup

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/stateutil/stateutil/snapshot"
)

// AppendJSON appends rec as one line of JSON, as encoding/json would write
// it (HTML left unescaped), without reflection for the values decoders
// make: what dump spends its time on.
func AppendJSON(b []byte, rec *Record) []byte {
	b = append(b, `{"schema_version":`...)
	b = strconv.AppendInt(b, int64(rec.SchemaVersion), 10)
	b = append(b, `,"operator":`...)
	b = appendString(b, rec.Operator)
	b = append(b, `,"state":`...)
	b = appendString(b, rec.State)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(rec.Kind))
	b = append(b, `,"key":`...)
	b = appendValue(b, rec.Key)
	if rec.Namespace != nil {
		b = append(b, `,"namespace":`...)
		b = appendValue(b, rec.Namespace)
	}
	b = append(b, `,"key_group":`...)
	b = strconv.AppendInt(b, int64(rec.KeyGroup), 10)
	b = append(b, `,"subtask":`...)
	b = strconv.AppendInt(b, int64(rec.Subtask), 10)
	b = append(b, `,"value":`...)
	b = appendValue(b, rec.Value)
	if t := rec.TTL; t != nil && !t.LastAccess.IsZero() {
		b = append(b, `,"ttl":{"last_access":"`...)
		b = t.LastAccess.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","now":"`...)
		b = t.appendNow(b)
		b = append(b, `"}`...)
	} else if t != nil {
		b = append(b, `,"ttl":{"expires_at":"`...)
		b = t.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","expired":`...)
		b = strconv.AppendBool(b, t.Expired)
		b = append(b, `,"now":"`...)
		b = t.appendNow(b)
		b = append(b, `"}`...)
	}
	return append(b, "}\n"...)
}

func (t *TTL) appendNow(b []byte) []byte {
	if t.nowText != nil {
		return append(b, t.nowText...)
	}
	return t.Now.AppendFormat(b, time.RFC3339Nano)
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, x)
	case hexBytes:
		return appendHex(b, x)
	case *hexBytes:
		return appendHex(b, *x)
	case *json.RawMessage:
		return append(b, *x...)
	case *snapshot.Scalar:
		return appendScalar(b, x)
	case *[]any:
		return appendValue(b, *x)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			return appendFloat(b, x, 64)
		}
	case []any:
		if x == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	case *object:
		b = append(b, '{')
		for i, m := range *x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.key)
			b = append(b, ':')
			b = appendValue(b, m.value)
		}
		return append(b, '}')
	case map[string]any:
		if x == nil {
			return append(b, "null"...)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendValue(b, x[k])
		}
		return append(b, '}')
	}
	m, err := json.Marshal(v)
	if err != nil {
		return appendString(b, err.Error())
	}
	return append(b, m...)
}

// appendScalar appends s as appendValue appends the value Decode makes.
func appendScalar(b []byte, s *snapshot.Scalar) []byte {
	switch s.Kind {
	case snapshot.ScalarInt:
		return strconv.AppendInt(b, s.Int, 10)
	case snapshot.ScalarBool:
		return strconv.AppendBool(b, s.Int != 0)
	case snapshot.ScalarString:
		return appendString(b, unsafe.String(unsafe.SliceData(s.Str), len(s.Str)))
	}
	return append(b, "null"...)
}

// hexBytes is a bytes-typed value, shown as the decoders show opaque bytes:
// a string of "0x" and hex digits. It aliases the entry it was decoded
// from.
type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return appendHex(nil, h), nil }

func (h hexBytes) String() string { return "0x" + hex.EncodeToString(h) }

func appendHex(b, h []byte) []byte {
	b = append(b, `"0x`...)
	b = appendHexDigits(b, h)
	return append(b, '"')
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping off.
// jsonPlain8 reports whether the 8 bytes of s are ASCII that JSON writes
// as they are (no control character, quote or backslash): strings in
// state are mostly that, and a word at a time is what keeps dump near the
// speed of its reads.
func jsonPlain8(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs } // a 0 byte
	below := (x - ones*0x20) &^ x & highs                            // a byte < 0x20
	return x&highs|below|zero(x^ones*'"')|zero(x^ones*'\\') == 0
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && jsonPlain8(s[i:i+8]) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// object is a map state's entries as dump renders them: the JSON object
// of the map[string]any get renders, without a map made per record.
type object []member

type member struct {
	key   string
	value any
}

// sortKeys orders the members by key and keeps the last of equal keys,
// as a map assigned them in order would hold them.
func (o *object) sortKeys() {
	ms := *o
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].key == m.key {
			continue
		}
		out = append(out, m)
	}
	*o = out
}

func (o *object) MarshalJSON() ([]byte, error) { return appendValue(nil, o), nil }
