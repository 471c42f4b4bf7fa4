package flink

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// carryOver fills in the Carried fields of the snapshot r built.
func (r *SnapshotReader) carryOver(ctx context.Context) error {
	m := r.meta
	cs := carried.Snapshot{Format: carried.Format, MetadataVersion: m.Version, MasterStates: m.MasterStates}
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

func (r *SnapshotReader) carryOperator(ctx context.Context, op *metadata.OperatorState) (*carried.Operator, error) {
	co := &carried.Operator{Format: carried.Format, ID: op.ID.String(), UID: op.UID, Name: op.Name,
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
			co.Keyed = carried.AddMeta(co.Keyed, m)
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
				co.Operator = carried.AddMeta(co.Operator, m)
			}
			for _, m := range f.BroadcastStates {
				co.Broadcast = carried.AddMeta(co.Broadcast, m)
			}
		}
		raw := &carried.Raw{}
		if h := st.RawKeyedState; h != nil && h.KeyGroups != nil {
			raw.HasKeyed, raw.KeyedStart, raw.KeyedOffsets = true, h.KeyGroups.Range.Start, h.KeyGroups.Offsets
		}
		if h := st.RawOperatorState; h != nil {
			raw.HasOperator = true
			for _, info := range h.States {
				raw.Operator = append(raw.Operator, carried.Info{Name: info.Name, Mode: byte(info.Mode), Offsets: info.Offsets})
			}
		}
		if raw.HasKeyed || raw.HasOperator {
			if co.Raw == nil {
				co.Raw = map[int]*carried.Raw{}
			}
			co.Raw[st.Index] = raw
		}
	}
	return co, nil
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
