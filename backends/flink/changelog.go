package flink

import (
	"context"
	"errors"

	"github.com/stateutil/stateutil/backends/flink/internal/changelog"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// changelog returns a subtask's changelog state, applying its changes on
// the first call.
func (r *SnapshotReader) changelog(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState) (*changelog.ChangelogState, error) {
	r.mu.Lock()
	s, ok := r.applied[st]
	r.mu.Unlock()
	if ok {
		return s.state, s.err
	}
	state, err := r.applyChangelog(ctx, op, st)
	r.mu.Lock()
	if r.applied == nil {
		r.applied = map[*metadata.SubtaskState]appliedChangelog{}
	}
	r.applied[st] = appliedChangelog{state, err}
	r.mu.Unlock()
	return state, err
}

func (r *SnapshotReader) applyChangelog(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState) (*changelog.ChangelogState, error) {
	h := st.ManagedKeyedState.Changelog
	s := &changelog.ChangelogState{Kryo5: r.res.Kryo5, Table: r.res.Serializers, Rng: h.Range, MaxParallelism: op.MaxParallelism,
		Groups: map[int]*changelog.ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
	all := keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}
	var base snapshot.Entries
	if inc := nativeHandle(st.ManagedKeyedState); inc != nil {
		hdr, err := r.res.ReadNativeMeta(ctx, inc)
		if err != nil {
			return nil, err
		}
		s.Header.KeySerializer, s.Header.States = hdr.KeySerializer, hdr.States
		base = r.nativeEntries(ctx, op, st, inc, all, nil)
	} else if kgs := managedKeyGroups(st.ManagedKeyedState); len(kgs) > 0 {
		for _, kh := range kgs {
			ks, err := statefile.OpenKGStream(ctx, r.res, kh, op.MaxParallelism)
			if err != nil {
				return nil, err
			}
			s.Header.KeySerializer = ks.Header.KeySerializer
			s.Header.States = append(s.Header.States, ks.Header.States...)
			ks.Close()
		}
		// A materialized heap state that cannot be read stays broken
		// whatever its changes.
		base = r.keyGroupEntries(ctx, op, st, all, func(state string, err error) {
			if s.Broken[state] == nil {
				s.Broken[state] = err
			}
		}, false)
	}
	changes, err := changelog.ListChanges(ctx, r.res, h)
	if err != nil {
		return nil, err
	}
	if ks := r.keysFrom; ks != nil {
		s.GivenKey = func() (*typeser.SerializerSnapshot, error) { return ks.givenKey(r.res.MetadataFile, op, r.res.Kryo5) }
	}
	if err := s.Apply(ctx, base, changes); err != nil {
		if m := (*changelog.KeyMisfitError)(nil); errors.As(err, &m) {
			return nil, r.keysFrom.misfit(r.res.MetadataFile, op, m)
		}
		return nil, err
	}
	if s.KeysNotDecoded() {
		r.mu.Lock()
		if r.keysNotRecorded == nil {
			r.keysNotRecorded = map[*metadata.OperatorState]bool{}
		}
		r.keysNotRecorded[op] = true
		r.mu.Unlock()
	}
	return s, nil
}

// changelogEntries streams a changelog subtask's entries in the key groups
// kgs, its changes applied.
func (r *SnapshotReader) changelogEntries(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, kgs keygroup.Range) snapshot.Entries {
	s, err := r.changelog(ctx, op, st)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	return s.Entries(ctx, kgs)
}

// changelogFigures applies a subtask's changes and counts what results;
// a state whose changes cannot be applied is marked unreadable.
func (r *SnapshotReader) changelogFigures(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState) (snapshot.Stats, error) {
	s, err := r.changelog(ctx, op, st)
	if err != nil {
		if !degradable(err) {
			return snapshot.Stats{}, err
		}
		r.degrade(st, snapshot.ScopeKeyed, "", err)
		return snapshot.Stats{Known: true, Bytes: keyedBytes(st.ManagedKeyedState)}, nil
	}
	for name, err := range s.Broken {
		r.degrade(st, snapshot.ScopeKeyed, name, err)
	}
	stats := snapshot.Stats{Known: true}
	for e, err := range s.Entries(ctx, keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}) {
		if err != nil {
			return snapshot.Stats{}, err
		}
		stats.Entries++
		stats.Bytes += e.Size()
	}
	return stats, nil
}

// appliedChangelog is the outcome of applying a subtask's changes.
type appliedChangelog struct {
	state *changelog.ChangelogState
	err   error
}
