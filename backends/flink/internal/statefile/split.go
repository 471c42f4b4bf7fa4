package statefile

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// KindTimer is the snapshot.StateKind given to Flink's priority-queue
// states (timers, "_timer_state/..."): snapshot.Timer.
const KindTimer = snapshot.Timer

// Layout says how one state's entries are laid out: its serializers, with
// list, map and TTL wrappers taken apart.
type Layout struct {
	Name string
	Kind snapshot.StateKind
	// Key, Namespace: the key and namespace serializers. For timers, the
	// timer's own key and namespace serializers.
	Key, Namespace *typeser.SerializerSnapshot
	// UserKey: the map key serializer (map state).
	UserKey *typeser.SerializerSnapshot
	// Stored is the serializer of what is stored per key (the list, map or
	// TTL wrapper); Elem is one value/element/map value, TTL wrapper
	// included; User is Elem without its TTL wrapper; TTL is the wrapper.
	Stored, Elem, User *typeser.SerializerSnapshot
	TTL                *typeser.SerializerSnapshot
	// Ambiguous: key and namespace are both variable-length, so canonical
	// keys carry a length after each.
	Ambiguous bool
}

// NewLayout builds the layout of a state from its header meta info.
func NewLayout(m *StateMeta, keySer *typeser.SerializerSnapshot) *Layout {
	l := &Layout{Name: m.Name, Key: keySer, Namespace: m.Serializers["NAMESPACE_SERIALIZER"], Stored: m.Value()}
	if m.Type == PriorityQueueState {
		l.Kind = KindTimer
		if s := l.Stored; s != nil && typeser.KindOf(s) == "Timer" && len(s.Nested) == 2 {
			l.Key, l.Namespace = s.Nested[0], s.Nested[1]
		} else {
			l.Key, l.Namespace = nil, nil
		}
		return l
	}
	l.Elem = l.Stored
	switch m.KeyedStateType() {
	case "LIST":
		l.Kind = snapshot.List
		if s := l.Stored; s != nil && typeser.KindOf(s) == "List" && len(s.Nested) == 1 {
			l.Elem = s.Nested[0]
		} else {
			l.Elem = nil
		}
	case "MAP":
		l.Kind = snapshot.Map
		if s := l.Stored; s != nil && typeser.KindOf(s) == "Map" && len(s.Nested) == 2 {
			l.UserKey, l.Elem = s.Nested[0], s.Nested[1]
		} else {
			l.Elem = nil
		}
	case "REDUCING":
		l.Kind = snapshot.Reducing
	case "AGGREGATING":
		l.Kind = snapshot.Aggregating
	case "FOLDING":
		l.Kind = snapshot.Folding
	default:
		l.Kind = snapshot.Value
	}
	l.User = l.Elem
	if l.Elem != nil && typeser.KindOf(l.Elem) == "TTL" && len(l.Elem.Nested) == 2 {
		l.TTL = l.Elem
		if typeser.TTLTimestampFirst(l.Elem) {
			l.User = l.Elem.Nested[1]
		} else {
			l.User = l.Elem.Nested[0]
		}
	}
	l.Ambiguous = typeser.FixedLength(l.Key) < 0 && typeser.FixedLength(l.Namespace) < 0
	return l
}

// written is the number of bytes a fixed-length serializer writes, or -1.
// VoidNamespace and GlobalWindow declare length 0 but write one byte.
func written(s *typeser.SerializerSnapshot) int {
	switch typeser.KindOf(s) {
	case "VoidNamespace", "GlobalWindow", "Void":
		return 1
	}
	return typeser.FixedLength(s)
}

// SplitTTL takes the last-access timestamp off one stored element.
func (l *Layout) SplitTTL(b []byte) (value []byte, lastAccess int64, err error) {
	if l.TTL == nil {
		return b, 0, nil
	}
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("state %q: TTL value of %d bytes has no room for its 8-byte timestamp", l.Name, len(b))
	}
	if typeser.TTLTimestampFirst(l.TTL) {
		return b[8:], int64(be64(b)), nil
	}
	return b[:len(b)-8], int64(be64(b[len(b)-8:])), nil
}

func be64(b []byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

func Put64(v int64) []byte {
	u := uint64(v)
	return []byte{byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
}

// lengthSuffix is the number of bytes of the length Flink appends after a
// variable-length key or namespace when both are: the length, low byte
// first, as many bytes as it needs (at least one).
func lengthSuffix(n int) int {
	k := 1
	for n >>= 8; n != 0; n >>= 8 {
		k++
	}
	return k
}

// SplitKey splits a canonical (RocksDB layout) key, key-group prefix
// removed, into key, namespace and user key. ok is false when the parts
// could not be told apart; then key holds all of body.
func (l *Layout) SplitKey(body []byte) (key, ns, userKey []byte, ok bool) {
	if l.Kind == KindTimer {
		// The timer: flipped timestamp, key, namespace; no suffixes.
		if len(body) < 8 {
			return body, nil, nil, false
		}
		rest := body[8:]
		if n, sz, err := typeser.Span(l.Key, rest); err == nil && sz {
			if m, sz2, err := typeser.Span(l.Namespace, rest[n:]); err == nil && sz2 && n+m == len(rest) {
				return rest[:n], rest[n:], nil, true
			}
		}
		if w := written(l.Namespace); w >= 0 && w <= len(rest) {
			return rest[:len(rest)-w], rest[len(rest)-w:], nil, true
		}
		return body, nil, nil, false
	}
	n, sz, err := typeser.Span(l.Key, body)
	if err != nil || !sz {
		if l.Ambiguous || l.Kind == snapshot.Map {
			return body, nil, nil, false
		}
		w := written(l.Namespace)
		if w < 0 || w > len(body) {
			return body, nil, nil, false
		}
		return body[:len(body)-w], body[len(body)-w:], nil, true
	}
	key, rest := body[:n], body[n:]
	if l.Ambiguous {
		s := lengthSuffix(n)
		if s > len(rest) {
			return body, nil, nil, false
		}
		rest = rest[s:]
	}
	m, sz, err := typeser.Span(l.Namespace, rest)
	if err != nil || !sz {
		if l.Kind == snapshot.Map || l.Ambiguous {
			return body, nil, nil, false
		}
		return key, rest, nil, true
	}
	ns, rest = rest[:m], rest[m:]
	if l.Ambiguous {
		s := lengthSuffix(m)
		if s > len(rest) {
			return body, nil, nil, false
		}
		rest = rest[s:]
	}
	if l.Kind == snapshot.Map {
		return key, ns, rest, true
	}
	if len(rest) != 0 {
		return body, nil, nil, false
	}
	return key, ns, nil, true
}

// CanonicalEntries turns one stored key/value pair of the RocksDB layout
// (canonical savepoints and native RocksDB) into entries. unsplit reports
// that some part had to be left whole.
func (l *Layout) CanonicalEntries(kg int, body, value []byte, emit func(snapshot.Entry) bool) (cont, unsplit bool, err error) {
	key, ns, uk, ok := l.SplitKey(body)
	e := snapshot.Entry{KeyGroup: kg, State: l.Name, Key: key, Namespace: ns, UserKey: uk}
	unsplit = !ok
	switch l.Kind {
	case KindTimer:
		if len(body) < 8 {
			return false, unsplit, fmt.Errorf("state %q: timer key of %d bytes", l.Name, len(body))
		}
		e.Value = Put64(int64(be64(body)) ^ math.MinInt64)
		return emit(e), unsplit, nil
	case snapshot.Map:
		if len(value) < 1 {
			return false, unsplit, fmt.Errorf("state %q: map value without its null flag", l.Name)
		}
		if value[0] == 0 {
			if e.Value, e.ExpiresAt, err = l.SplitTTL(value[1:]); err != nil {
				return false, unsplit, err
			}
		}
		return emit(e), unsplit, nil
	case snapshot.List:
		// Elements joined by ',' (RocksDB's string-append merge).
		rest := value
		for len(rest) > 0 {
			n, sz, err := typeser.Span(l.Elem, rest)
			if err != nil || !sz {
				e.Value, e.ExpiresAt = rest, 0
				return emit(e), true, nil
			}
			el := e
			if el.Value, el.ExpiresAt, err = l.SplitTTL(rest[:n]); err != nil {
				return false, unsplit, err
			}
			if !emit(el) {
				return false, unsplit, nil
			}
			rest = rest[n:]
			if len(rest) > 0 {
				if rest[0] != ',' {
					return false, unsplit, fmt.Errorf("state %q: list elements separated by 0x%02x, not ','", l.Name, rest[0])
				}
				rest = rest[1:]
			}
		}
		return true, unsplit, nil
	}
	if e.Value, e.ExpiresAt, err = l.SplitTTL(value); err != nil {
		return false, unsplit, err
	}
	return emit(e), unsplit, nil
}

// heapSized reports whether every part of the state's heap entries can be
// walked.
func (l *Layout) HasKryo() bool {
	for _, s := range []*typeser.SerializerSnapshot{l.Key, l.Namespace, l.UserKey, l.Elem} {
		if hasKind(s, "Kryo", 0) {
			return true
		}
	}
	return false
}

func hasKind(s *typeser.SerializerSnapshot, kind string, depth int) bool {
	if s == nil || depth > 16 {
		return false
	}
	if typeser.KindOf(s) == kind {
		return true
	}
	for _, c := range s.Nested {
		if hasKind(c, kind, depth+1) {
			return true
		}
	}
	return false
}

func (l *Layout) HeapSized() bool {
	if !typeser.Sized(l.Key) || !typeser.Sized(l.Namespace) {
		return false
	}
	if l.Kind == snapshot.Map && !typeser.Sized(l.UserKey) {
		return false
	}
	return l.Kind == KindTimer || typeser.Sized(l.Elem)
}

// StoredEntries is the number of entries one stored value holds: a list's
// elements, else one.
func (l *Layout) StoredEntries(value []byte) int64 {
	if l.Kind != snapshot.List {
		return 1
	}
	n := int64(0)
	for rest := value; len(rest) > 0; {
		k, ok, err := typeser.Span(l.Elem, rest)
		if err != nil || !ok || k >= len(rest) {
			return n + 1
		}
		n++
		rest = rest[k+1:] // the ',' between elements
	}
	return n
}

// AppendTTL appends a stored value: with the last-access time Flink's TTL
// serializer writes beside it, when the state has TTL.
func (l *Layout) AppendTTL(a, v []byte, lastAccess int64) []byte {
	switch {
	case l.TTL == nil:
		return append(a, v...)
	case typeser.TTLTimestampFirst(l.TTL):
		a = binary.BigEndian.AppendUint64(a, uint64(lastAccess))
		return append(a, v...)
	}
	a = append(a, v...)
	return binary.BigEndian.AppendUint64(a, uint64(lastAccess))
}
