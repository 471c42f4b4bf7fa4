package statefile

import (
	"encoding/binary"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// MarkStatesKryo5 marks the Kryo serializers of a key serializer and of
// states' serializers as Kryo 5's, when kryo5.
func MarkStatesKryo5(kryo5 bool, key *typeser.SerializerSnapshot, states ...*StateMeta) {
	if !kryo5 {
		return
	}
	typeser.MarkKryo5(key)
	for _, m := range states {
		for _, s := range m.Serializers {
			typeser.MarkKryo5(s)
		}
	}
}

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
	Serializers map[string]*typeser.SerializerSnapshot `json:"serializers"`
	// SerializerKeys keeps the stored order of Serializers.
	SerializerKeys []string `json:"-"`
}

// KeyedStateType returns the KEYED_STATE_TYPE option ("VALUE", "LIST", ...).
func (m *StateMeta) KeyedStateType() string { return m.Options["KEYED_STATE_TYPE"] }

// Value returns the value serializer snapshot.
func (m *StateMeta) Value() *typeser.SerializerSnapshot { return m.Serializers["VALUE_SERIALIZER"] }

// HasTTL reports whether the value serializer wraps values with a TTL
// timestamp.
func (m *StateMeta) HasTTL() bool {
	v := m.Value()
	return v != nil && v.TypeKey() == "TTL"
}

// MetaReader reads state meta infos in one of the stored layouts.
type MetaReader struct {
	Sr *typeser.SnapReader
	// Layout: "keyed-v3" (Flink 1.3-1.5 keyed), "op-v1", "op-v2" (operator
	// 1.3-1.5), "v5" (Flink 1.6), "current" (1.7+).
	Layout string
	// End is the buffer index where the header ends, or -1 when unknown.
	End int
}

var serializerKeyNames = map[string]bool{
	"KEY_SERIALIZER": true, "NAMESPACE_SERIALIZER": true, "VALUE_SERIALIZER": true, "USER_KEY_SERIALIZER": true,
}

// plausibleMetaAt reports whether a current-layout state meta info starts at
// buf[q]: a name, a state type ordinal and a small option count.
func plausibleMetaAt(buf []byte, q int, types ...BackendStateType) bool {
	name, e, ok := typeser.UTFAt(buf, q)
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
		if k, _, ok := typeser.UTFAt(buf, e+8); !ok || !optionKeyNames[k] {
			return false
		}
	} else {
		if e+12 > len(buf) {
			return false
		}
		ns := int32(binary.BigEndian.Uint32(buf[e+8:]))
		if k, _, ok := typeser.UTFAt(buf, e+12); ns < 1 || ns > 8 || !ok || !serializerKeyNames[k] {
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
func (mr *MetaReader) metas(what string, after typeser.ContFunc, types ...BackendStateType) []*StateMeta {
	r := mr.Sr.R
	at := r.Pos()
	n := r.Count(int64(r.I16(what+" count")), 2, what+" count", at)
	out := make([]*StateMeta, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		next := after
		if i < n-1 {
			next = func(q int) bool { return plausibleMetaAt(r.Buf, q, types...) }
		}
		out = append(out, mr.Meta(next))
	}
	return out
}

func (mr *MetaReader) Meta(next typeser.ContFunc) *StateMeta {
	r := mr.Sr.R
	m := &StateMeta{Options: map[string]string{}, Serializers: map[string]*typeser.SerializerSnapshot{}}
	add := func(k string, s *typeser.SerializerSnapshot) {
		m.Serializers[k] = s
		m.SerializerKeys = append(m.SerializerKeys, k)
	}
	switch mr.Layout {
	case "keyed-v3":
		kind := r.I32("state descriptor type")
		m.Name = r.UTF("state name")
		m.Type = KeyValueState
		m.Options["KEYED_STATE_TYPE"] = stateDescriptorType(kind)
		ss := mr.Sr.LegacySerializers("state serializers")
		if len(ss) == 2 {
			add("NAMESPACE_SERIALIZER", ss[0])
			add("VALUE_SERIALIZER", ss[1])
		} else if r.Err == nil {
			r.Fail("state %q: %d serializers, want 2", m.Name, len(ss))
		}
	case "op-v1", "op-v2":
		m.Name = r.UTF("state name")
		at := r.Pos()
		mode := metadata.DistributionMode(r.U8("distribution mode"))
		if r.Err == nil && mode > metadata.Broadcast {
			r.FailAt(at, "state %q: unknown distribution mode %d", m.Name, byte(mode))
		}
		m.Options["OPERATOR_STATE_DISTRIBUTION_MODE"] = mode.String()
		m.Type = OperatorListState
		if mr.Layout == "op-v1" {
			_, used, classes, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
			if err != nil {
				r.Err = err
				return m
			}
			r.Off += used
			s := &typeser.SerializerSnapshot{}
			if len(classes) > 0 {
				s.SerializerClass = classes[0]
			}
			add("VALUE_SERIALIZER", s)
			break
		}
		ss := mr.Sr.LegacySerializers("state serializers")
		switch len(ss) {
		case 1:
			add("VALUE_SERIALIZER", ss[0])
		case 2:
			m.Type = BroadcastMapState
			add("KEY_SERIALIZER", ss[0])
			add("VALUE_SERIALIZER", ss[1])
		}
	default: // "v5", "current"
		m.Name = r.UTF("state name")
		at := r.Pos()
		m.Type = BackendStateType(r.I32("state type"))
		if r.Err == nil && (m.Type < 0 || m.Type > PriorityQueueState) {
			r.FailAt(at, "state %q: unknown state type %d", m.Name, int32(m.Type))
		}
		no := r.Count32(4, "option count")
		for i := 0; i < no && r.Err == nil; i++ {
			k := r.UTF("option key")
			m.Options[k] = r.UTF("option value")
		}
		ns := r.Count32(2, "serializer count")
		if mr.Layout == "v5" {
			keys := make([]string, 0, ns)
			for i := 0; i < ns && r.Err == nil; i++ {
				keys = append(keys, r.UTF("serializer key"))
			}
			ss := mr.Sr.LegacySerializers("state serializers")
			if r.Err == nil && len(ss) != len(keys) {
				r.Fail("state %q: %d serializer keys but %d serializers", m.Name, len(keys), len(ss))
			}
			for i := 0; i < len(keys) && i < len(ss); i++ {
				add(keys[i], ss[i])
			}
			break
		}
		for i := 0; i < ns && r.Err == nil; i++ {
			k := r.UTF("serializer key")
			cont := next
			if i < ns-1 {
				cont = func(q int) bool {
					s, _, ok := typeser.UTFAt(r.Buf, q)
					return ok && serializerKeyNames[s]
				}
			}
			add(k, mr.Sr.SnapshotProxy(cont))
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
