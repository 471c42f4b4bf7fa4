package flink

import (
	"encoding/binary"
	"fmt"
)

// BackendStateType is the kind of a registered state.
type BackendStateType int32

// Backend state types by their stored ordinal.
const (
	KeyValueState      BackendStateType = 0
	OperatorListState  BackendStateType = 1
	BroadcastMapState  BackendStateType = 2
	PriorityQueueState BackendStateType = 3
)

func (t BackendStateType) String() string {
	switch t {
	case KeyValueState:
		return "KEY_VALUE"
	case OperatorListState:
		return "OPERATOR"
	case BroadcastMapState:
		return "BROADCAST"
	case PriorityQueueState:
		return "PRIORITY_QUEUE"
	}
	return fmt.Sprintf("STATE_TYPE_%d", int32(t))
}

// MarshalText renders the type by name in JSON.
func (t BackendStateType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// StateMeta describes one registered state as a header records it.
type StateMeta struct {
	Name string           `json:"name"`
	Type BackendStateType `json:"type"`
	// Options holds KEYED_STATE_TYPE (VALUE, LIST, MAP, ...) or
	// OPERATOR_STATE_DISTRIBUTION_MODE.
	Options map[string]string `json:"options"`
	// Serializers by key: KEY_SERIALIZER, NAMESPACE_SERIALIZER,
	// VALUE_SERIALIZER.
	Serializers map[string]*SerializerSnapshot `json:"serializers"`
	// SerializerKeys keeps the stored order of Serializers.
	SerializerKeys []string `json:"-"`
}

// KeyedStateType returns the KEYED_STATE_TYPE option ("VALUE", "LIST", ...).
func (m *StateMeta) KeyedStateType() string { return m.Options["KEYED_STATE_TYPE"] }

// Value returns the value serializer snapshot.
func (m *StateMeta) Value() *SerializerSnapshot { return m.Serializers["VALUE_SERIALIZER"] }

// HasTTL reports whether the value serializer wraps values with a TTL
// timestamp.
func (m *StateMeta) HasTTL() bool {
	v := m.Value()
	return v != nil && v.typeKey() == "TTL"
}

// metaReader reads state meta infos in one of the stored layouts.
type metaReader struct {
	sr *snapReader
	// layout: "keyed-v3" (Flink 1.3-1.5 keyed), "op-v1", "op-v2" (operator
	// 1.3-1.5), "v5" (Flink 1.6), "current" (1.7+).
	layout string
	// end is the buffer index where the header ends, or -1 when unknown.
	end int
}

var serializerKeyNames = map[string]bool{
	"KEY_SERIALIZER": true, "NAMESPACE_SERIALIZER": true, "VALUE_SERIALIZER": true, "USER_KEY_SERIALIZER": true,
}

// plausibleMetaAt reports whether a current-layout state meta info starts at
// buf[q]: a name, a state type ordinal and a small option count.
func plausibleMetaAt(buf []byte, q int, types ...BackendStateType) bool {
	name, e, ok := utfAt(buf, q)
	if !ok || e+8 > len(buf) {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7F || c == 0xFFFD {
			return false
		}
	}
	t := int32(binary.BigEndian.Uint32(buf[e:]))
	n := int32(binary.BigEndian.Uint32(buf[e+4:]))
	if t < 0 || t > 3 || n < 0 || n > 16 {
		return false
	}
	// What follows is an option key, or (no options) a small serializer
	// count and a serializer key.
	if n > 0 {
		if k, _, ok := utfAt(buf, e+8); !ok || !optionKeyNames[k] {
			return false
		}
	} else {
		if e+12 > len(buf) {
			return false
		}
		ns := int32(binary.BigEndian.Uint32(buf[e+8:]))
		if k, _, ok := utfAt(buf, e+12); ns < 1 || ns > 8 || !ok || !serializerKeyNames[k] {
			return false
		}
	}
	if len(types) == 0 {
		return true
	}
	for _, w := range types {
		if BackendStateType(t) == w {
			return true
		}
	}
	return false
}

var optionKeyNames = map[string]bool{"KEYED_STATE_TYPE": true, "OPERATOR_STATE_DISTRIBUTION_MODE": true}

// metas reads a short count and that many state meta infos; after reads
// whether what follows the list plausibly starts at a buffer index.
func (mr *metaReader) metas(what string, after contFunc, types ...BackendStateType) []*StateMeta {
	r := mr.sr.r
	at := r.pos()
	n := r.count(int64(r.i16(what+" count")), 2, what+" count", at)
	out := make([]*StateMeta, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		next := after
		if i < n-1 {
			next = func(q int) bool { return plausibleMetaAt(r.buf, q, types...) }
		}
		out = append(out, mr.meta(next))
	}
	return out
}

func (mr *metaReader) meta(next contFunc) *StateMeta {
	r := mr.sr.r
	m := &StateMeta{Options: map[string]string{}, Serializers: map[string]*SerializerSnapshot{}}
	add := func(k string, s *SerializerSnapshot) {
		m.Serializers[k] = s
		m.SerializerKeys = append(m.SerializerKeys, k)
	}
	switch mr.layout {
	case "keyed-v3":
		kind := r.i32("state descriptor type")
		m.Name = r.utf("state name")
		m.Type = KeyValueState
		m.Options["KEYED_STATE_TYPE"] = stateDescriptorType(kind)
		ss := mr.sr.legacySerializers("state serializers")
		if len(ss) == 2 {
			add("NAMESPACE_SERIALIZER", ss[0])
			add("VALUE_SERIALIZER", ss[1])
		} else if r.err == nil {
			r.fail("state %q: %d serializers, want 2", m.Name, len(ss))
		}
	case "op-v1", "op-v2":
		m.Name = r.utf("state name")
		at := r.pos()
		mode := DistributionMode(r.u8("distribution mode"))
		if r.err == nil && mode > Broadcast {
			r.failAt(at, "state %q: unknown distribution mode %d", m.Name, byte(mode))
		}
		m.Options["OPERATOR_STATE_DISTRIBUTION_MODE"] = mode.String()
		m.Type = OperatorListState
		if mr.layout == "op-v1" {
			_, used, classes, _, err := ParseJavaObject(r.buf[r.off:], r.file, r.pos())
			if err != nil {
				r.err = err
				return m
			}
			r.off += used
			s := &SerializerSnapshot{}
			if len(classes) > 0 {
				s.SerializerClass = classes[0]
			}
			add("VALUE_SERIALIZER", s)
			break
		}
		ss := mr.sr.legacySerializers("state serializers")
		switch len(ss) {
		case 1:
			add("VALUE_SERIALIZER", ss[0])
		case 2:
			m.Type = BroadcastMapState
			add("KEY_SERIALIZER", ss[0])
			add("VALUE_SERIALIZER", ss[1])
		}
	default: // "v5", "current"
		m.Name = r.utf("state name")
		at := r.pos()
		m.Type = BackendStateType(r.i32("state type"))
		if r.err == nil && (m.Type < 0 || m.Type > PriorityQueueState) {
			r.failAt(at, "state %q: unknown state type %d", m.Name, int32(m.Type))
		}
		no := r.count32(4, "option count")
		for i := 0; i < no && r.err == nil; i++ {
			k := r.utf("option key")
			m.Options[k] = r.utf("option value")
		}
		ns := r.count32(2, "serializer count")
		if mr.layout == "v5" {
			keys := make([]string, 0, ns)
			for i := 0; i < ns && r.err == nil; i++ {
				keys = append(keys, r.utf("serializer key"))
			}
			ss := mr.sr.legacySerializers("state serializers")
			if r.err == nil && len(ss) != len(keys) {
				r.fail("state %q: %d serializer keys but %d serializers", m.Name, len(keys), len(ss))
			}
			for i := 0; i < len(keys) && i < len(ss); i++ {
				add(keys[i], ss[i])
			}
			break
		}
		for i := 0; i < ns && r.err == nil; i++ {
			k := r.utf("serializer key")
			cont := next
			if i < ns-1 {
				cont = func(q int) bool {
					s, _, ok := utfAt(r.buf, q)
					return ok && serializerKeyNames[s]
				}
			}
			add(k, mr.sr.snapshotProxy(cont))
		}
	}
	return m
}

// stateDescriptorType names the ordinal of Flink's StateDescriptor.Type.
func stateDescriptorType(v int32) string {
	names := []string{"UNKNOWN", "VALUE", "LIST", "REDUCING", "FOLDING", "AGGREGATING", "MAP"}
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("TYPE_%d", v)
}
