package flink

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// What a Flink snapshot records beyond stateutil's model, carried in
// snapshot.Snapshot.Carried and snapshot.Operator.Carried so that the
// flink writer can write it back: serializer snapshots as bytes, the
// coordinator state, master states, CheckpointProperties, raw state
// offsets. The reader fills it in (carryOver); only the writer reads it.
// It travels as JSON inside the model, so a plan written by one process
// can be executed by another.

const carriedFormat = "flink/1"

// carriedSnapshot is the snapshot-level part.
type carriedSnapshot struct {
	Format          string                 `json:"format"`
	MetadataVersion int                    `json:"metadata_version"`
	MasterStates    []metadata.MasterState `json:"master_states"`
	Savepoint       bool                   `json:"savepoint"`
	TypeName        string                 `json:"type_name,omitempty"`
	PostAction      string                 `json:"post_action,omitempty"`
	Flags           map[string]bool        `json:"flags,omitempty"`
}

// carriedMeta is one state's meta info as a header records it.
type carriedMeta struct {
	Name    string      `json:"name"`
	Type    int32       `json:"type"` // BackendStateType
	Options [][2]string `json:"options"`
	// Serializers in stored order, each its key and its snapshot's bytes
	// (proxy version included); Raw is nil for the legacy layouts of
	// Flink 1.3-1.6, which stateutil cannot write back.
	Serializers []carriedSerializer `json:"serializers"`
}

type carriedSerializer struct {
	Key string `json:"key"`
	Raw []byte `json:"raw"`
}

// carriedRaw is a subtask's raw state layout: key-group offsets of raw
// keyed state, the per-state element offsets of raw operator state, both
// relative to the start of their stream.
type carriedRaw struct {
	KeyedStart   int32         `json:"keyed_start"`
	KeyedOffsets []int64       `json:"keyed_offsets,omitempty"`
	HasKeyed     bool          `json:"has_keyed,omitempty"`
	Operator     []carriedInfo `json:"operator,omitempty"`
	HasOperator  bool          `json:"has_operator,omitempty"`
}

// carriedInfo is an OperatorStateInfo.
type carriedInfo struct {
	Name    string  `json:"name"`
	Mode    byte    `json:"mode"`
	Offsets []int64 `json:"offsets"`
}

// carriedOperator is the operator-level part.
type carriedOperator struct {
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
	KeySerializer []byte        `json:"key_serializer,omitempty"`
	KeyedVersion  int           `json:"keyed_version,omitempty"`
	Keyed         []carriedMeta `json:"keyed,omitempty"`
	// Compressed: a keyed or operator stream of the source was
	// Snappy-compressed.
	Compressed      bool                `json:"compressed,omitempty"`
	OperatorVersion int                 `json:"operator_version,omitempty"`
	Operator        []carriedMeta       `json:"operator,omitempty"`
	Broadcast       []carriedMeta       `json:"broadcast,omitempty"`
	Raw             map[int]*carriedRaw `json:"raw,omitempty"`
}

func metaOf(m *statefile.StateMeta) carriedMeta {
	c := carriedMeta{Name: m.Name, Type: int32(m.Type)}
	keys := make([]string, 0, len(m.Options))
	for k := range m.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.Options = append(c.Options, [2]string{k, m.Options[k]})
	}
	for _, k := range m.SerializerKeys {
		c.Serializers = append(c.Serializers, carriedSerializer{Key: k, Raw: rawOrNil(m.Serializers[k])})
	}
	return c
}

func rawOrNil(s *typeser.SerializerSnapshot) []byte {
	if s == nil {
		return nil
	}
	return s.Raw
}

func addMeta(list []carriedMeta, m *statefile.StateMeta) []carriedMeta {
	if slices.ContainsFunc(list, func(c carriedMeta) bool { return c.Name == m.Name }) {
		return list
	}
	return append(list, metaOf(m))
}

// carriedAs is the meta info list records for the state named carried,
// under the state's name in the copy (a copy may rename it).
func carriedAs(list []carriedMeta, carried, name string) (carriedMeta, bool) {
	j := slices.IndexFunc(list, func(m carriedMeta) bool { return m.Name == carried })
	if j < 0 {
		return carriedMeta{}, false
	}
	m := list[j]
	m.Name = name
	return m, true
}

// carryOver fills in the Carried fields of the snapshot r built.
func (r *SnapshotReader) carryOver(ctx context.Context) error {
	m := r.meta
	cs := carriedSnapshot{Format: carriedFormat, MetadataVersion: m.Version, MasterStates: m.MasterStates}
	if p := m.Properties; p != nil {
		cs.Savepoint, cs.TypeName, cs.PostAction, cs.Flags = p.Savepoint, p.TypeName, p.PostCheckpointAction, p.Flags
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	r.snap.Carried = b
	for o, op := range r.ops {
		co, err := r.carryOperator(ctx, op)
		if err != nil {
			return fmt.Errorf("operator %s: %w", o.ID, err)
		}
		if o.Carried, err = json.Marshal(co); err != nil {
			return err
		}
	}
	return nil
}

func (r *SnapshotReader) carryOperator(ctx context.Context, op *metadata.OperatorState) (*carriedOperator, error) {
	co := &carriedOperator{Format: carriedFormat, ID: op.ID.String(), UID: op.UID, Name: op.Name,
		Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism, FullyFinished: op.FullyFinished}
	if c := op.CoordinatorState; c != nil {
		co.HasCoordinator, co.CoordinatorName, co.CoordinatorData = true, c.Name, c.Data
	}
	hdrs, err := r.headers(ctx, op, map[string]bool{})
	if err != nil {
		return nil, err
	}
	for _, h := range hdrs {
		if co.KeySerializer == nil && h.KeySerializer != nil {
			co.KeySerializer, co.KeyedVersion = h.KeySerializer.Raw, h.Version
		}
		co.Compressed = co.Compressed || h.Compression
		for _, m := range h.States {
			co.Keyed = addMeta(co.Keyed, m)
		}
	}
	for _, st := range op.Subtasks {
		if h := st.ManagedOperatorState; h != nil && h.Delegate != nil {
			f, err := r.res.ReadOperatorState(ctx, h)
			if err != nil {
				return nil, err
			}
			co.OperatorVersion = max(co.OperatorVersion, f.Version)
			co.Compressed = co.Compressed || f.Compression
			for _, m := range f.States {
				co.Operator = addMeta(co.Operator, m)
			}
			for _, m := range f.BroadcastStates {
				co.Broadcast = addMeta(co.Broadcast, m)
			}
		}
		raw := &carriedRaw{}
		if h := st.RawKeyedState; h != nil && h.KeyGroups != nil {
			raw.HasKeyed, raw.KeyedStart, raw.KeyedOffsets = true, h.KeyGroups.Range.Start, h.KeyGroups.Offsets
		}
		if h := st.RawOperatorState; h != nil {
			raw.HasOperator = true
			for _, info := range h.States {
				raw.Operator = append(raw.Operator, carriedInfo{Name: info.Name, Mode: byte(info.Mode), Offsets: info.Offsets})
			}
		}
		if raw.HasKeyed || raw.HasOperator {
			if co.Raw == nil {
				co.Raw = map[int]*carriedRaw{}
			}
			co.Raw[st.Index] = raw
		}
	}
	return co, nil
}

// carriedOf decodes what an operator carries; nil when it carries nothing
// of Flink's (a snapshot read from another format).
func carriedOf(op *snapshot.Operator) (*carriedOperator, error) {
	if len(op.Carried) == 0 {
		return nil, nil
	}
	var co carriedOperator
	if err := json.Unmarshal(op.Carried, &co); err != nil {
		return nil, fmt.Errorf("operator %q: what the Flink reader carried does not decode: %w", op.Label(), err)
	}
	if co.Format != carriedFormat {
		return nil, nil
	}
	return &co, nil
}

func carriedSnapshotOf(s *snapshot.Snapshot) *carriedSnapshot {
	var cs carriedSnapshot
	if len(s.Carried) == 0 || json.Unmarshal(s.Carried, &cs) != nil || cs.Format != carriedFormat {
		return nil
	}
	return &cs
}

// timerKeyType gives a timer state's key type the bytes of the backend's
// key serializer snapshot, which it is (the timer's nested copy is not
// stored on its own), so that timers' keys hash like the states' keys.
func timerKeyType(t snapshot.Type, hdrs []*statefile.KeyedHeader) snapshot.Type {
	if len(t.SerializerSnapshot) > 0 {
		return t
	}
	for _, h := range hdrs {
		if k := h.KeySerializer; k != nil && len(k.Raw) > 0 && typeser.TypeOf(k).Name == t.Name && k.Name() == t.Class {
			return typeser.TypeOf(k)
		}
	}
	return t
}
