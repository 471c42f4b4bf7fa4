package flink

import (
	"fmt"
)

// The headers of the state files a canonical savepoint holds: Flink's
// KeyedBackendSerializationProxy and OperatorBackendSerializationProxy in
// their current layouts (keyed version 6, operator version 6, or 5 for the
// Flink lines that read no newer), with the serializer snapshots written
// back as the bytes the source recorded.

// keyedHeaderVersion is the KeyedBackendSerializationProxy version written:
// what Flink 1.7 to 2.x write and read.
const keyedHeaderVersion = 6

// operatorHeaderVersion is the OperatorBackendSerializationProxy version
// that Flink 1.18 to 2.x write.
const operatorHeaderVersion = 6

// operatorHeaderFor is the operator state header version written for an
// operator carried as co: the newest the Flink line asked for reads
// (Release.OperatorHeader); without one, 5 for a source older than
// operatorHeaderVersion (a Flink 1.15 to 1.17 savepoint, whose `_metadata`
// version 1.18 to 1.20 share, and whose Flink reads no newer), else
// operatorHeaderVersion. Version 6 only adds a compression flag, which
// stateutil writes false.
func (w *writer) operatorHeaderFor(co *carriedOperator) int {
	switch {
	case w.operatorHeader != 0:
		return w.operatorHeader
	case co.OperatorVersion > 0 && co.OperatorVersion < operatorHeaderVersion:
		return 5
	}
	return operatorHeaderVersion
}

// encodeMeta writes one state meta info in the current layout.
func encodeMeta(o *out, m carriedMeta) {
	o.utf(m.Name)
	o.i32(m.Type)
	o.i32(int32(len(m.Options)))
	for _, kv := range m.Options {
		o.utf(kv[0])
		o.utf(kv[1])
	}
	o.i32(int32(len(m.Serializers)))
	for _, s := range m.Serializers {
		if len(s.Raw) == 0 {
			o.fail("state %q: its %s was recorded in the layout of Flink 1.3-1.6, which stateutil cannot write back", m.Name, s.Key)
			return
		}
		o.utf(s.Key)
		o.raw(s.Raw)
	}
}

// encodeKeyedHeader writes the keyed state header: no compression, the key
// serializer, then every state's meta info.
func encodeKeyedHeader(keySerializer []byte, states []carriedMeta) ([]byte, error) {
	o := &out{}
	o.i32(keyedHeaderVersion)
	o.bool(false)
	if len(keySerializer) == 0 {
		return nil, fmt.Errorf("no key serializer snapshot of Flink 1.7+ recorded")
	}
	o.raw(keySerializer)
	if len(states) > 0x7FFF {
		return nil, fmt.Errorf("%d keyed states, more than a header holds", len(states))
	}
	o.u16(uint16(len(states)))
	for _, m := range states {
		encodeMeta(o, m)
	}
	return o.b, o.err
}

// encodeOperatorHeader writes the operator state header of version 5 or 6:
// no compression (6 says so, 5 has no flag), the list states' meta infos,
// then the broadcast states'.
func encodeOperatorHeader(version int, lists, broadcasts []carriedMeta) ([]byte, error) {
	o := &out{}
	o.i32(int32(version))
	if version >= 6 {
		o.bool(false)
	}
	for _, group := range [][]carriedMeta{lists, broadcasts} {
		if len(group) > 0x7FFF {
			return nil, fmt.Errorf("%d operator states, more than a header holds", len(group))
		}
		o.u16(uint16(len(group)))
		for _, m := range group {
			encodeMeta(o, m)
		}
	}
	return o.b, o.err
}

// stateMetaOf parses a carried meta info back into the reader's model, so
// that the writer lays entries out with the reader's layout rules.
func stateMetaOf(m carriedMeta) (*StateMeta, error) {
	sm := &StateMeta{Name: m.Name, Type: BackendStateType(m.Type), Options: map[string]string{}, Serializers: map[string]*SerializerSnapshot{}}
	for _, kv := range m.Options {
		sm.Options[kv[0]] = kv[1]
	}
	for _, s := range m.Serializers {
		ss, err := parseSerializerSnapshot(s.Raw)
		if err != nil {
			return nil, fmt.Errorf("state %q %s: %w", m.Name, s.Key, err)
		}
		sm.Serializers[s.Key] = ss
		sm.SerializerKeys = append(sm.SerializerKeys, s.Key)
	}
	return sm, nil
}

// parseSerializerSnapshot decodes the bytes of one serializer snapshot
// (proxy version included), as a header holds it.
func parseSerializerSnapshot(raw []byte) (*SerializerSnapshot, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("no serializer snapshot bytes (Flink 1.3-1.6 layout)")
	}
	r := newReader(raw, "serializer snapshot", 0)
	sr := &snapReader{r: r, table: serializers}
	s := sr.snapshotProxy(func(q int) bool { return q == len(raw) })
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}
