package flink

import (
	"fmt"
	"math"

	"github.com/stateutil/stateutil/snapshot"
)

// KindTimer is the snapshot.StateKind given to Flink's priority-queue
// states (timers, "_timer_state/..."): snapshot.Timer.
const KindTimer = snapshot.Timer

// layout says how one state's entries are laid out: its serializers, with
// list, map and TTL wrappers taken apart.
type layout struct {
	name string
	kind snapshot.StateKind
	// key, ns: the key and namespace serializers. For timers, the
	// timer's own key and namespace serializers.
	key, ns *SerializerSnapshot
	// userKey: the map key serializer (map state).
	userKey *SerializerSnapshot
	// stored is the serializer of what is stored per key (the list, map or
	// TTL wrapper); elem is one value/element/map value, TTL wrapper
	// included; user is elem without its TTL wrapper.
	stored, elem, user *SerializerSnapshot
	ttl                *SerializerSnapshot
	// ambiguous: key and namespace are both variable-length, so canonical
	// keys carry a length after each.
	ambiguous bool
}

// newLayout builds the layout of a state from its header meta info.
func newLayout(m *StateMeta, keySer *SerializerSnapshot) *layout {
	l := &layout{name: m.Name, key: keySer, ns: m.Serializers["NAMESPACE_SERIALIZER"], stored: m.Value()}
	if m.Type == PriorityQueueState {
		l.kind = KindTimer
		if s := l.stored; s != nil && serKind(s) == "Timer" && len(s.Nested) == 2 {
			l.key, l.ns = s.Nested[0], s.Nested[1]
		} else {
			l.key, l.ns = nil, nil
		}
		return l
	}
	l.elem = l.stored
	switch m.KeyedStateType() {
	case "LIST":
		l.kind = snapshot.List
		if s := l.stored; s != nil && serKind(s) == "List" && len(s.Nested) == 1 {
			l.elem = s.Nested[0]
		} else {
			l.elem = nil
		}
	case "MAP":
		l.kind = snapshot.Map
		if s := l.stored; s != nil && serKind(s) == "Map" && len(s.Nested) == 2 {
			l.userKey, l.elem = s.Nested[0], s.Nested[1]
		} else {
			l.elem = nil
		}
	case "REDUCING":
		l.kind = snapshot.Reducing
	case "AGGREGATING":
		l.kind = snapshot.Aggregating
	case "FOLDING":
		l.kind = snapshot.Folding
	default:
		l.kind = snapshot.Value
	}
	l.user = l.elem
	if l.elem != nil && serKind(l.elem) == "TTL" && len(l.elem.Nested) == 2 {
		l.ttl = l.elem
		if ttlTimestampFirst(l.elem) {
			l.user = l.elem.Nested[1]
		} else {
			l.user = l.elem.Nested[0]
		}
	}
	l.ambiguous = fixedLength(l.key) < 0 && fixedLength(l.ns) < 0
	return l
}

// written is the number of bytes a fixed-length serializer writes, or -1.
// VoidNamespace and GlobalWindow declare length 0 but write one byte.
func written(s *SerializerSnapshot) int {
	switch serKind(s) {
	case "VoidNamespace", "GlobalWindow", "Void":
		return 1
	}
	return fixedLength(s)
}

// splitTTL takes the last-access timestamp off one stored element.
func (l *layout) splitTTL(b []byte) (value []byte, lastAccess int64, err error) {
	if l.ttl == nil {
		return b, 0, nil
	}
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("state %q: TTL value of %d bytes has no room for its 8-byte timestamp", l.name, len(b))
	}
	if ttlTimestampFirst(l.ttl) {
		return b[8:], int64(be64(b)), nil
	}
	return b[:len(b)-8], int64(be64(b[len(b)-8:])), nil
}

func be64(b []byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

func put64(v int64) []byte {
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

// splitKey splits a canonical (RocksDB layout) key, key-group prefix
// removed, into key, namespace and user key. ok is false when the parts
// could not be told apart; then key holds all of body.
func (l *layout) splitKey(body []byte) (key, ns, userKey []byte, ok bool) {
	if l.kind == KindTimer {
		// The timer: flipped timestamp, key, namespace; no suffixes.
		if len(body) < 8 {
			return body, nil, nil, false
		}
		rest := body[8:]
		if n, sz, err := span(l.key, rest); err == nil && sz {
			if m, sz2, err := span(l.ns, rest[n:]); err == nil && sz2 && n+m == len(rest) {
				return rest[:n], rest[n:], nil, true
			}
		}
		if w := written(l.ns); w >= 0 && w <= len(rest) {
			return rest[:len(rest)-w], rest[len(rest)-w:], nil, true
		}
		return body, nil, nil, false
	}
	n, sz, err := span(l.key, body)
	if err != nil || !sz {
		if l.ambiguous || l.kind == snapshot.Map {
			return body, nil, nil, false
		}
		w := written(l.ns)
		if w < 0 || w > len(body) {
			return body, nil, nil, false
		}
		return body[:len(body)-w], body[len(body)-w:], nil, true
	}
	key, rest := body[:n], body[n:]
	if l.ambiguous {
		s := lengthSuffix(n)
		if s > len(rest) {
			return body, nil, nil, false
		}
		rest = rest[s:]
	}
	m, sz, err := span(l.ns, rest)
	if err != nil || !sz {
		if l.kind == snapshot.Map || l.ambiguous {
			return body, nil, nil, false
		}
		return key, rest, nil, true
	}
	ns, rest = rest[:m], rest[m:]
	if l.ambiguous {
		s := lengthSuffix(m)
		if s > len(rest) {
			return body, nil, nil, false
		}
		rest = rest[s:]
	}
	if l.kind == snapshot.Map {
		return key, ns, rest, true
	}
	if len(rest) != 0 {
		return body, nil, nil, false
	}
	return key, ns, nil, true
}

// canonicalEntries turns one stored key/value pair of the RocksDB layout
// (canonical savepoints and native RocksDB) into entries. unsplit reports
// that some part had to be left whole.
func (l *layout) canonicalEntries(kg int, body, value []byte, emit func(snapshot.Entry) bool) (cont, unsplit bool, err error) {
	key, ns, uk, ok := l.splitKey(body)
	e := snapshot.Entry{KeyGroup: kg, State: l.name, Key: key, Namespace: ns, UserKey: uk}
	unsplit = !ok
	switch l.kind {
	case KindTimer:
		if len(body) < 8 {
			return false, unsplit, fmt.Errorf("state %q: timer key of %d bytes", l.name, len(body))
		}
		e.Value = put64(int64(be64(body)) ^ math.MinInt64)
		return emit(e), unsplit, nil
	case snapshot.Map:
		if len(value) < 1 {
			return false, unsplit, fmt.Errorf("state %q: map value without its null flag", l.name)
		}
		if value[0] == 0 {
			if e.Value, e.ExpiresAt, err = l.splitTTL(value[1:]); err != nil {
				return false, unsplit, err
			}
		}
		return emit(e), unsplit, nil
	case snapshot.List:
		// Elements joined by ',' (RocksDB's string-append merge).
		rest := value
		for len(rest) > 0 {
			n, sz, err := span(l.elem, rest)
			if err != nil || !sz {
				e.Value, e.ExpiresAt = rest, 0
				return emit(e), true, nil
			}
			el := e
			if el.Value, el.ExpiresAt, err = l.splitTTL(rest[:n]); err != nil {
				return false, unsplit, err
			}
			if !emit(el) {
				return false, unsplit, nil
			}
			rest = rest[n:]
			if len(rest) > 0 {
				if rest[0] != ',' {
					return false, unsplit, fmt.Errorf("state %q: list elements separated by 0x%02x, not ','", l.name, rest[0])
				}
				rest = rest[1:]
			}
		}
		return true, unsplit, nil
	}
	if e.Value, e.ExpiresAt, err = l.splitTTL(value); err != nil {
		return false, unsplit, err
	}
	return emit(e), unsplit, nil
}
