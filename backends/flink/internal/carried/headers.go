package carried

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

// OperatorHeaderVersion is the OperatorBackendSerializationProxy version
// that Flink 1.18 to 2.x write.
const OperatorHeaderVersion = 6

// encodeMeta writes one state meta info in the current layout.
func encodeMeta(o *wire.Writer, m Meta) {
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

// EncodeKeyedHeader writes the keyed state header: no compression, the key
// serializer, then every state's meta info.
func EncodeKeyedHeader(keySerializer []byte, states []Meta) ([]byte, error) {
	o := &wire.Writer{}
	o.I32(keyedHeaderVersion)
	o.Bool(false)
	if len(keySerializer) == 0 {
		return nil, fmt.Errorf("no key serializer snapshot of Flink 1.7+ recorded")
	}
	o.Raw(keySerializer)
	if err := encodeMetas(o, "keyed", states); err != nil {
		return nil, err
	}
	return o.B, o.Err
}

// EncodeOperatorHeader writes the operator state header of version 5 or 6:
// no compression (6 says so, 5 has no flag), the list states' meta infos,
// then the broadcast states'.
func EncodeOperatorHeader(version int, lists, broadcasts []Meta) ([]byte, error) {
	o := &wire.Writer{}
	o.I32(int32(version))
	if version >= 6 {
		o.Bool(false)
	}
	for _, group := range [][]Meta{lists, broadcasts} {
		if err := encodeMetas(o, "operator", group); err != nil {
			return nil, err
		}
	}
	return o.B, o.Err
}

// encodeMetas writes a count of meta infos, a short, then each.
func encodeMetas(o *wire.Writer, what string, list []Meta) error {
	if len(list) > 0x7FFF {
		return fmt.Errorf("%d %s states, more than a header holds", len(list), what)
	}
	o.U16(uint16(len(list)))
	for _, m := range list {
		encodeMeta(o, m)
	}
	return nil
}

// StateMeta parses a carried meta info back into the reader's model, so
// that the writer lays entries out with the reader's layout rules, with the
// serializers of table (which may read by the user's schemas).
func StateMeta(table *typeser.Table, m Meta) (*statefile.StateMeta, error) {
	sm := &statefile.StateMeta{Name: m.Name, Type: statefile.BackendStateType(m.Type), Options: map[string]string{}, Serializers: map[string]*typeser.SerializerSnapshot{}}
	for _, kv := range m.Options {
		sm.Options[kv[0]] = kv[1]
	}
	for _, s := range m.Serializers {
		ss, err := ParseSerializerSnapshot(table, s.Raw)
		if err != nil {
			return nil, fmt.Errorf("state %q %s: %w", m.Name, s.Key, err)
		}
		sm.Serializers[s.Key] = ss
		sm.SerializerKeys = append(sm.SerializerKeys, s.Key)
	}
	return sm, nil
}

// ParseSerializerSnapshot decodes the bytes of one serializer snapshot
// (proxy version included), as a header holds it, with the serializers of
// table.
func ParseSerializerSnapshot(table *typeser.Table, raw []byte) (*typeser.SerializerSnapshot, error) {
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
