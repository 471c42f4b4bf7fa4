package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stateutil/stateutil/backends/flink/internal/changelog"
	"github.com/stateutil/stateutil/backends/flink/internal/sidecar"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SnapshotReader is the snapshot.Reader of the "flink" format.
//
// Entries carry Flink's serialized bytes: Key and Namespace as the key and
// namespace serializers wrote them (no key-group prefix, no length
// suffixes), UserKey for map state, Value as the value serializer wrote it
// with TTL wrappers removed; list state yields one entry per element, map
// state one per user key, timer states one per timer (see KindTimer).
// Flink stores no TTL duration, so ExpiresAt of a TTL'd entry holds the
// last-access time Flink stored.
type SnapshotReader struct {
	meta   *metadata.Metadata
	res    *statefile.Resolver
	snap   *snapshot.Snapshot
	ops    map[*snapshot.Operator]*metadata.OperatorState
	unread map[*metadata.SubtaskState]map[unreadKey]error
	// unreadValues counts the values of the heap states in unread, where
	// the snapshot records them.
	unreadValues map[*metadata.SubtaskState]map[string]int64
	// sizes holds each broadcast state's entry count per subtask.
	sizes map[*metadata.SubtaskState]map[string]int64
	// opBytes holds the bytes of each subtask's operator-state elements.
	opBytes map[*metadata.SubtaskState]int64
	tempDir string
	// sums is the checksum manifest stateutil wrote beside _metadata, or
	// nil (sidecar.go).
	sums *sidecar.Manifest

	mu      sync.Mutex
	natives map[nativeKey]*nativeDB
	// applied holds each changelog subtask's state, changes applied.
	applied map[*metadata.SubtaskState]appliedChangelog
	// keysFrom is the snapshot the user named for the key serializers
	// this one does not record (keysfrom.go), or nil.
	keysFrom *keySource
	// keysNotRecorded holds the operators with a changelog subtask whose
	// keys are not decoded for want of a key serializer.
	keysNotRecorded map[*metadata.OperatorState]bool
	// walks holds the open's walks of heap key groups for the read.
	walks statefile.Walks
}

// Metadata is the decoded `_metadata` the snapshot was read from.
func (r *SnapshotReader) Metadata() *metadata.Metadata { return r.meta }

// Snapshot is the snapshot's metadata in stateutil's model.
func (r *SnapshotReader) Snapshot() *snapshot.Snapshot { return r.snap }

// operatorState is op's state as `_metadata` records it, found by the
// operator or, for a copy of it, by its id.
func (r *SnapshotReader) operatorState(op *snapshot.Operator) (*metadata.OperatorState, bool) {
	if fo, ok := r.ops[op]; ok {
		return fo, true
	}
	for o, f := range r.ops {
		if o.ID == op.ID {
			return f, true
		}
	}
	return nil, false
}

// CoordinatorStateBytes is the size of op's operator coordinator state,
// which `_metadata` holds inline (snapshot.CoordinatorSizer).
func (r *SnapshotReader) CoordinatorStateBytes(op *snapshot.Operator) (int64, bool) {
	fo, ok := r.operatorState(op)
	if !ok {
		return 0, false
	}
	if fo.CoordinatorState == nil {
		return 0, true
	}
	return fo.CoordinatorState.Size, true
}

func (r *SnapshotReader) subtaskState(op *snapshot.Operator, subtask int) (*metadata.OperatorState, *metadata.SubtaskState, error) {
	fo, ok := r.operatorState(op)
	if !ok {
		return nil, nil, fmt.Errorf("%w: operator %q is not in this snapshot", snapshot.ErrNotFound, op.Label())
	}
	for _, st := range fo.Subtasks {
		if st.Index == subtask {
			return fo, st, nil
		}
	}
	return fo, nil, nil
}

// KeyEntries gives one key's entries of one state (lookup.KeyReader): in
// a native RocksDB subtask a seek to the key in the state's column family,
// elsewhere a scan of the key's group.
func (r *SnapshotReader) KeyEntries(ctx context.Context, op *snapshot.Operator, subtask, kg int, state string, key, namespace []byte) ([]snapshot.Entry, error) {
	group := keygroup.Range{Start: kg, End: kg}
	es := r.Entries(ctx, op, subtask, group)
	if fo, st, err := r.subtaskState(op, subtask); err == nil && st != nil && st.ManagedKeyedState != nil && len(r.unread[st]) == 0 && !changelog.PendingChanges(st.ManagedKeyedState) {
		if h := nativeHandle(st.ManagedKeyedState); h != nil {
			es = r.nativeEntries(ctx, fo, st, h, group, &onlyKey{state, key})
		}
	}
	var out []snapshot.Entry
	for e, err := range es {
		if err != nil {
			return nil, err
		}
		if e.State == state && bytes.Equal(e.Key, key) && bytes.Equal(e.Namespace, namespace) {
			out = append(out, e.Clone())
		}
	}
	return out, nil
}

// Entries streams a subtask's keyed entries in the key groups kgs.
func (r *SnapshotReader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	fo, st, err := r.subtaskState(op, subtask)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	if st == nil || st.ManagedKeyedState == nil {
		return func(func(snapshot.Entry, error) bool) {}
	}
	u := r.unread[st]
	if err := u[unreadKey{snapshot.ScopeKeyed, ""}]; err != nil {
		return snapshot.FailedEntries(err)
	}
	var es snapshot.Entries
	if changelog.PendingChanges(st.ManagedKeyedState) {
		es = r.changelogEntries(ctx, fo, st, kgs)
	} else if h := nativeHandle(st.ManagedKeyedState); h != nil {
		es = r.nativeEntries(ctx, fo, st, h, kgs, nil)
	} else {
		es = r.keyGroupEntries(ctx, fo, st, kgs, nil, false)
	}
	if len(u) == 0 {
		return es
	}
	// States marked unreadable are left out: what they would yield is
	// wrong (parts that could not be told apart), and the snapshot says so.
	return func(yield func(snapshot.Entry, error) bool) {
		for e, err := range es {
			if err == nil && u[unreadKey{snapshot.ScopeKeyed, e.State}] != nil {
				continue
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// keyGroupEntries streams the entries of key-groups handles (full and
// canonical snapshots, materialized changelog state), key group by key
// group, reading only the key groups asked for; lost (nil: none) is told
// of the heap states that could not be read in a key group, and
// keepWalks keeps the heap key groups' walks for the read that follows.
func (r *SnapshotReader) keyGroupEntries(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, kgs keygroup.Range, lost func(state string, err error), keepWalks bool) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		handles := managedKeyGroups(st.ManagedKeyedState)
		if len(handles) == 0 {
			if h := st.ManagedKeyedState; h != nil {
				yield(snapshot.Entry{}, fmt.Errorf("subtask %d: %s handle: %w", st.Index, h.Type, wire.ErrUnsupportedVersion))
			}
			return
		}
		var streams []*statefile.KeyGroupStream
		defer func() {
			for _, s := range streams {
				s.Close()
			}
		}()
		lo, hi := kgs.Start, kgs.End
		for _, h := range handles {
			s, err := statefile.OpenKGStream(ctx, r.res, h, op.MaxParallelism)
			if err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			s.Lost, s.Walks, s.KeepWalks = lost, &r.walks, keepWalks
			streams = append(streams, s)
		}
		span := keygroup.Range{Start: lo, End: hi}
		stopped := false
		emit := func(e snapshot.Entry) bool {
			if !yield(e, nil) {
				stopped = true
			}
			return !stopped
		}
		for kg := span.Start; kg <= span.End; kg++ {
			for _, s := range streams {
				kr := s.H.Range
				if kg < int(kr.Start) || kg > int(kr.End()) {
					continue
				}
				if err := ctx.Err(); err != nil {
					yield(snapshot.Entry{}, err)
					return
				}
				if _, err := s.Entries(kg, emit, func(string) {}); err != nil {
					yield(snapshot.Entry{}, err)
					return
				}
				if stopped {
					return
				}
			}
			if kg >= maxRangeEnd(streams) {
				return
			}
		}
	}
}

func maxRangeEnd(ss []*statefile.KeyGroupStream) int {
	m := -1
	for _, s := range ss {
		m = max(m, int(s.H.Range.End()))
	}
	return m
}

// Elements streams a subtask's managed operator-state elements, state by
// state in descriptor order. A broadcast state yields one element per map
// entry: its key and its value as their serializers wrote them.
func (r *SnapshotReader) Elements(ctx context.Context, op *snapshot.Operator, subtask int) snapshot.Elements {
	_, st, err := r.subtaskState(op, subtask)
	if err != nil {
		return snapshot.FailedElements(err)
	}
	u := r.unread[st]
	if err := u[unreadKey{snapshot.ScopeOperator, ""}]; err != nil {
		return snapshot.FailedElements(err)
	}
	return func(yield func(snapshot.Element, error) bool) {
		if st == nil || st.ManagedOperatorState == nil {
			return
		}
		f, err := r.res.ReadOperatorState(ctx, st.ManagedOperatorState)
		if err != nil {
			yield(snapshot.Element{}, err)
			return
		}
		for _, d := range op.OperatorStates {
			if u[unreadKey{snapshot.ScopeOperator, d.Name}] != nil {
				continue
			}
			for _, p := range f.Partitions {
				if p.Name != d.Name {
					continue
				}
				elements := p.Elements
				if p.Mode == metadata.Broadcast {
					if elements, err = statefile.BroadcastEntries(p, f.File); err != nil {
						yield(snapshot.Element{}, err)
						return
					}
				}
				for _, el := range elements {
					if err := ctx.Err(); err != nil {
						yield(snapshot.Element{}, err)
						return
					}
					if !yield(snapshot.Element{State: p.Name, Subtask: subtask, Value: el}, nil) {
						return
					}
				}
			}
		}
	}
}

// Raw returns the raw keyed and raw operator state streams of a subtask,
// as the operator wrote them (raw keyed state: the key groups' bytes in
// stream order).
func (r *SnapshotReader) Raw(ctx context.Context, op *snapshot.Operator, subtask int) (snapshot.RawState, error) {
	_, st, err := r.subtaskState(op, subtask)
	if err != nil || st == nil {
		return snapshot.RawState{}, err
	}
	var out snapshot.RawState
	if h := st.RawKeyedState; h != nil {
		if h.KeyGroups == nil {
			return out, fmt.Errorf("raw keyed state in a %s handle: %w", h.Type, wire.ErrUnsupportedVersion)
		}
		f, err := r.res.ReadRawKeyGroups(ctx, h)
		if err != nil {
			return out, err
		}
		out.Keyed = []byte{}
		for _, g := range f.KeyGroups {
			out.Keyed = append(out.Keyed, g.Raw...)
		}
	}
	if h := st.RawOperatorState; h != nil && h.Delegate != nil {
		data, _, _, err := r.res.Bytes(ctx, h.Delegate)
		if err != nil {
			return out, err
		}
		out.Operator = append([]byte(nil), data...)
	}
	return out, nil
}

// Close removes the temporary RocksDB instances rebuilt for native
// snapshots, and gives back the heap walks kept.
func (r *SnapshotReader) Close() error {
	r.walks.Drop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, db := range r.natives {
		errs = append(errs, db.Close())
		delete(r.natives, k)
	}
	return errors.Join(errs...)
}
