package carried

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// Format marks what this version of the reader carries: a writer reads
// only its own.
const Format = "flink/1"

// Snapshot is the snapshot-level part.
type Snapshot struct {
	Format          string                 `json:"format"`
	MetadataVersion int                    `json:"metadata_version"`
	MasterStates    []metadata.MasterState `json:"master_states"`
	Savepoint       bool                   `json:"savepoint"`
	TypeName        string                 `json:"type_name,omitempty"`
	PostAction      string                 `json:"post_action,omitempty"`
	Flags           map[string]bool        `json:"flags,omitempty"`
}

// Meta is one state's meta info as a header records it.
type Meta struct {
	Name    string      `json:"name"`
	Type    int32       `json:"type"` // BackendStateType
	Options [][2]string `json:"options"`
	// Serializers in stored order, each its key and its snapshot's bytes
	// (proxy version included); Raw is nil for the legacy layouts of
	// Flink 1.3-1.6, which stateutil cannot write back.
	Serializers []Serializer `json:"serializers"`
}

// Serializer is one serializer snapshot of a state: its key in the header
// (VALUE_SERIALIZER, ...) and its bytes.
type Serializer struct {
	Key string `json:"key"`
	Raw []byte `json:"raw"`
}

// Raw is a subtask's raw state layout: key-group offsets of raw
// keyed state, the per-state element offsets of raw operator state, both
// relative to the start of their stream.
type Raw struct {
	KeyedStart   int32   `json:"keyed_start"`
	KeyedOffsets []int64 `json:"keyed_offsets,omitempty"`
	HasKeyed     bool    `json:"has_keyed,omitempty"`
	Operator     []Info  `json:"operator,omitempty"`
	HasOperator  bool    `json:"has_operator,omitempty"`
}

// Info is an OperatorStateInfo.
type Info struct {
	Name    string  `json:"name"`
	Mode    byte    `json:"mode"`
	Offsets []int64 `json:"offsets"`
}

// Operator is the operator-level part.
type Operator struct {
	Format         string `json:"format"`
	ID             string `json:"id"`
	UID            string `json:"uid"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	FullyFinished  bool   `json:"fully_finished,omitempty"`
	// Coordinator is the coordinator state's handle name and bytes.
	HasCoordinator  bool   `json:"has_coordinator,omitempty"`
	CoordinatorName string `json:"coordinator_name,omitempty"`
	CoordinatorData []byte `json:"coordinator_data,omitempty"`
	// KeySerializer is the keyed header's key serializer snapshot bytes.
	KeySerializer []byte `json:"key_serializer,omitempty"`
	KeyedVersion  int    `json:"keyed_version,omitempty"`
	Keyed         []Meta `json:"keyed,omitempty"`
	// Compressed: a keyed or operator stream of the source was
	// Snappy-compressed.
	Compressed      bool         `json:"compressed,omitempty"`
	OperatorVersion int          `json:"operator_version,omitempty"`
	Operator        []Meta       `json:"operator,omitempty"`
	Broadcast       []Meta       `json:"broadcast,omitempty"`
	Raw             map[int]*Raw `json:"raw,omitempty"`
}

func metaOf(m *statefile.StateMeta) Meta {
	c := Meta{Name: m.Name, Type: int32(m.Type)}
	keys := make([]string, 0, len(m.Options))
	for k := range m.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.Options = append(c.Options, [2]string{k, m.Options[k]})
	}
	for _, k := range m.SerializerKeys {
		c.Serializers = append(c.Serializers, Serializer{Key: k, Raw: rawOrNil(m.Serializers[k])})
	}
	return c
}

func rawOrNil(s *typeser.SerializerSnapshot) []byte {
	if s == nil {
		return nil
	}
	return s.Raw
}

// AddMeta adds m to list unless list holds a state of its name: the
// subtasks of an operator repeat their states' meta infos.
func AddMeta(list []Meta, m *statefile.StateMeta) []Meta {
	if slices.ContainsFunc(list, func(c Meta) bool { return c.Name == m.Name }) {
		return list
	}
	return append(list, metaOf(m))
}

// Renamed is the meta info list records for the state named from, under
// the state's name in the copy (a copy may rename it).
func Renamed(list []Meta, from, name string) (Meta, bool) {
	j := slices.IndexFunc(list, func(m Meta) bool { return m.Name == from })
	if j < 0 {
		return Meta{}, false
	}
	m := list[j]
	m.Name = name
	return m, true
}

// OperatorOf decodes what an operator carries; nil when it carries nothing
// of Flink's (a snapshot read from another format).
func OperatorOf(op *snapshot.Operator) (*Operator, error) {
	if len(op.Carried) == 0 {
		return nil, nil
	}
	var co Operator
	if err := json.Unmarshal(op.Carried, &co); err != nil {
		return nil, fmt.Errorf("operator %q: what the Flink reader carried does not decode: %w", op.Label(), err)
	}
	if co.Format != Format {
		return nil, nil
	}
	return &co, nil
}

// SnapshotOf decodes what a snapshot carries; nil when it carries nothing
// of Flink's.
func SnapshotOf(s *snapshot.Snapshot) *Snapshot {
	var cs Snapshot
	if len(s.Carried) == 0 || json.Unmarshal(s.Carried, &cs) != nil || cs.Format != Format {
		return nil
	}
	return &cs
}
