package flink

import (
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
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
func encodeMeta(o *wire.Writer, m carriedMeta) {
	o.UTF(m.Name)
	o.I32(m.Type)
	o.I32(int32(len(m.Options)))
	for _, kv := range m.Options {
		o.UTF(kv[0])
		o.UTF(kv[1])
	}
	o.I32(int32(len(m.Serializers)))
	for _, s := range m.Serializers {
		if len(s.Raw) == 0 {
			o.Fail("state %q: its %s was recorded in the layout of Flink 1.3-1.6, which stateutil cannot write back", m.Name, s.Key)
			return
		}
		o.UTF(s.Key)
		o.Raw(s.Raw)
	}
}

// encodeKeyedHeader writes the keyed state header: no compression, the key
// serializer, then every state's meta info.
func encodeKeyedHeader(keySerializer []byte, states []carriedMeta) ([]byte, error) {
	o := &wire.Writer{}
	o.I32(keyedHeaderVersion)
	o.Bool(false)
	if len(keySerializer) == 0 {
		return nil, fmt.Errorf("no key serializer snapshot of Flink 1.7+ recorded")
	}
	o.Raw(keySerializer)
	if len(states) > 0x7FFF {
		return nil, fmt.Errorf("%d keyed states, more than a header holds", len(states))
	}
	o.U16(uint16(len(states)))
	for _, m := range states {
		encodeMeta(o, m)
	}
	return o.B, o.Err
}

// encodeOperatorHeader writes the operator state header of version 5 or 6:
// no compression (6 says so, 5 has no flag), the list states' meta infos,
// then the broadcast states'.
func encodeOperatorHeader(version int, lists, broadcasts []carriedMeta) ([]byte, error) {
	o := &wire.Writer{}
	o.I32(int32(version))
	if version >= 6 {
		o.Bool(false)
	}
	for _, group := range [][]carriedMeta{lists, broadcasts} {
		if len(group) > 0x7FFF {
			return nil, fmt.Errorf("%d operator states, more than a header holds", len(group))
		}
		o.U16(uint16(len(group)))
		for _, m := range group {
			encodeMeta(o, m)
		}
	}
	return o.B, o.Err
}

// stateMetaOf parses a carried meta info back into the reader's model, so
// that the writer lays entries out with the reader's layout rules.
func stateMetaOf(m carriedMeta) (*statefile.StateMeta, error) {
	return stateMetaWith(serializers, m)
}

// stateMetaWith is stateMetaOf with the serializers of table (which may
// read by the user's schemas).
func stateMetaWith(table *typeser.Table, m carriedMeta) (*statefile.StateMeta, error) {
	sm := &statefile.StateMeta{Name: m.Name, Type: statefile.BackendStateType(m.Type), Options: map[string]string{}, Serializers: map[string]*typeser.SerializerSnapshot{}}
	for _, kv := range m.Options {
		sm.Options[kv[0]] = kv[1]
	}
	for _, s := range m.Serializers {
		ss, err := parseSerializerSnapshotWith(table, s.Raw)
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
func parseSerializerSnapshot(raw []byte) (*typeser.SerializerSnapshot, error) {
	return parseSerializerSnapshotWith(serializers, raw)
}

// parseSerializerSnapshotWith is parseSerializerSnapshot with the
// serializers of table.
func parseSerializerSnapshotWith(table *typeser.Table, raw []byte) (*typeser.SerializerSnapshot, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("no serializer snapshot bytes (Flink 1.3-1.6 layout)")
	}
	r := wire.NewReader(raw, "serializer snapshot", 0)
	sr := &typeser.SnapReader{R: r, Table: table}
	s := sr.SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil {
		return nil, r.Err
	}
	return s, nil
}
