package flink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// build maps the decoded `_metadata` onto the snapshot model.
func (r *SnapshotReader) build(ctx context.Context) error {
	m := r.meta
	s := &snapshot.Snapshot{Format: "flink", CheckpointID: m.CheckpointID, Operators: []*snapshot.Operator{},
		Properties: map[string]string{"metadata_version": strconv.Itoa(m.Version)}}
	r.snap = s
	r.ops = map[*snapshot.Operator]*OperatorState{}
	hints := map[string]bool{}
	for _, op := range m.Operators {
		o := &snapshot.Operator{ID: op.ID.String(), UID: op.UID, Name: op.Name, Parallelism: op.Parallelism,
			MaxParallelism: op.MaxParallelism, KeyedStates: []snapshot.KeyedState{}, OperatorStates: []snapshot.OperatorState{}}
		r.ops[o] = op
		if err := r.keyedStates(ctx, o, op, hints); err != nil {
			return fmt.Errorf("operator %s: %w", o.ID, err)
		}
		if err := r.operatorStates(ctx, o, op); err != nil {
			return fmt.Errorf("operator %s: %w", o.ID, err)
		}
		for _, st := range op.Subtasks {
			sub, err := r.subtask(ctx, o, op, st)
			if err != nil {
				return fmt.Errorf("operator %s subtask %d: %w", o.ID, st.Index, err)
			}
			o.Subtasks = append(o.Subtasks, sub)
		}
		o.Subtasks = withEmptySubtasks(o)
		s.Operators = append(s.Operators, o)
	}
	r.kindAndFormat(hints)
	return r.carryOver(ctx) // for the flink writer: carry.go
}

// kindAndFormat fills Kind and the properties that tell how the snapshot
// was taken, saying where each answer came from.
func (r *SnapshotReader) kindAndFormat(hints map[string]bool) {
	s, m := r.snap, r.meta
	p := s.Properties
	switch {
	case m.Properties != nil:
		s.Kind = snapshot.Checkpoint
		if m.Properties.Savepoint {
			s.Kind = snapshot.Savepoint
		}
		p["kind_source"] = "checkpoint properties"
		p["snapshot_type"] = m.Properties.TypeName
		if m.Properties.Format != "" {
			p["savepoint_format"] = strings.ToLower(m.Properties.Format)
		}
	case hints["savepoint-key-groups"]:
		s.Kind, p["kind_source"] = snapshot.Savepoint, "savepoint key-group handles"
	default:
		k, ok := kindFromDir(r.res.MetadataFile)
		s.Kind, p["kind_source"] = k, "directory name"
		if !ok {
			p["kind_source"] = "default (no checkpoint properties before _metadata v4)"
		}
	}
	if _, ok := p["savepoint_format"]; !ok && s.Kind == snapshot.Savepoint {
		switch {
		case hints["savepoint-key-groups"] || hints["canonical"]:
			p["savepoint_format"] = "canonical"
		case hints["native"]:
			p["savepoint_format"] = "native"
		}
	}
	var backends []string
	for _, b := range []string{"rocksdb", "heap", "changelog"} {
		if hints["backend:"+b] {
			backends = append(backends, b)
		}
	}
	if len(backends) > 0 {
		p["state_backend"] = strings.Join(backends, ",")
	}

}

// headers returns the keyed headers of every subtask that has one. A
// subtask registers only the states it used, so each may list fewer.
func (r *SnapshotReader) headers(ctx context.Context, op *OperatorState, hints map[string]bool) ([]*KeyedHeader, error) {
	var out []*KeyedHeader
	for _, st := range op.Subtasks {
		for _, h := range managedKeyGroups(st.ManagedKeyedState) {
			s, err := openKGStream(ctx, r.res, h, op.MaxParallelism)
			if err != nil {
				return nil, err
			}
			f, err := s.detect()
			s.Close()
			if err != nil {
				return nil, err
			}
			switch {
			case f == HeapFormat:
				hints["backend:heap"] = true
			case f == CanonicalFormat && h.Type != HandleSavepointKeyGroups:
				hints["backend:rocksdb"], hints["canonical"] = true, true
			}
			out = append(out, s.header)
		}
		if h := st.ManagedKeyedState; h != nil && h.Incremental != nil {
			hdr, err := r.res.ReadNativeMeta(ctx, h.Incremental)
			if err != nil {
				return nil, err
			}
			out = append(out, hdr)
		}
	}
	return out, nil
}

// managedKeyGroups lists the key-groups handles that hold a managed keyed
// handle's state: the handle itself, or the materialized part of a
// changelog handle.
func managedKeyGroups(h *KeyedHandle) []*KeyedHandle {
	switch {
	case h == nil:
		return nil
	case h.KeyGroups != nil:
		return []*KeyedHandle{h}
	case h.Changelog != nil:
		var out []*KeyedHandle
		for _, m := range h.Changelog.Materialized {
			out = append(out, managedKeyGroups(m)...)
		}
		return out
	}
	return nil
}

func (r *SnapshotReader) keyedStates(ctx context.Context, o *snapshot.Operator, op *OperatorState, hints map[string]bool) error {
	for _, st := range op.Subtasks {
		switch h := st.ManagedKeyedState; {
		case h == nil:
		case h.Type == HandleSavepointKeyGroups:
			hints["savepoint-key-groups"] = true
		case h.Incremental != nil:
			hints["native"], hints["backend:rocksdb"] = true, true
		case h.Changelog != nil || h.ChangelogBytes != nil || h.ChangelogFiles != nil:
			hints["backend:changelog"] = true
		}
	}
	hdrs, err := r.headers(ctx, op, hints)
	if err != nil {
		return err
	}
	var ls []*layout
	for _, hdr := range hdrs {
		hl, _ := layoutsOf(hdr)
		for _, l := range hl {
			if !slices.ContainsFunc(ls, func(o *layout) bool { return o.name == l.name }) {
				ls = append(ls, l)
			}
		}
	}
	for _, l := range ls {
		ks := snapshot.KeyedState{Name: l.name, Kind: l.kind, KeyType: typeOf(l.key), NamespaceType: typeOf(l.ns), ValueType: typeOf(l.user)}
		if l.kind == KindTimer {
			ks.ValueType = typeOf(&SerializerSnapshot{Class: "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"})
			ks.KeyType = timerKeyType(ks.KeyType, hdrs) // carry.go
		}
		if l.kind == snapshot.Map {
			ks.UserKeyType = typeOf(l.userKey)
		}
		if l.ttl != nil {
			// Flink does not store the TTL settings in snapshots; only the
			// values' last-access times are known.
			ks.TTL = &snapshot.TTL{}
		}
		o.KeyedStates = append(o.KeyedStates, ks)
	}
	return nil
}

func (r *SnapshotReader) operatorStates(ctx context.Context, o *snapshot.Operator, op *OperatorState) error {
	typed := map[string]bool{}
	for _, st := range op.Subtasks {
		h := st.ManagedOperatorState
		if h == nil {
			continue
		}
		var need bool
		for _, info := range h.States {
			if _, ok := o.OperatorStateByName(info.Name); !ok {
				o.OperatorStates = append(o.OperatorStates, snapshot.OperatorState{Name: info.Name, Mode: modeOf(info.Mode), ElementType: snapshot.Type{Name: TypeBytes}})
			}
			need = need || !typed[info.Name]
		}
		if !need {
			continue
		}
		f, err := r.res.ReadOperatorState(ctx, h)
		if err != nil {
			return err
		}
		for _, m := range f.States {
			if os, ok := o.OperatorStateByName(m.Name); ok && !typed[m.Name] {
				os.ElementType, typed[m.Name] = typeOf(m.Value()), true
			}
		}
		for _, m := range f.BroadcastStates {
			if os, ok := o.OperatorStateByName(m.Name); ok && !typed[m.Name] {
				b := &SerializerSnapshot{Class: broadcastClass, Nested: []*SerializerSnapshot{m.Serializers["KEY_SERIALIZER"], m.Value()}}
				os.ElementType, typed[m.Name] = typeOf(b), true
			}
		}
	}
	return nil
}

func modeOf(m DistributionMode) snapshot.Mode {
	switch m {
	case Union:
		return snapshot.Union
	case Broadcast:
		return snapshot.Broadcast
	}
	return snapshot.Split
}

func (r *SnapshotReader) subtask(ctx context.Context, o *snapshot.Operator, op *OperatorState, st *SubtaskState) (*snapshot.Subtask, error) {
	sub := &snapshot.Subtask{Index: st.Index, KeyGroups: keygroup.RangeOf(op.MaxParallelism, op.Parallelism, st.Index)}
	for _, h := range []*KeyedHandle{st.ManagedKeyedState, st.RawKeyedState} {
		if h != nil {
			kr := h.Range()
			sub.KeyGroups = keygroup.Range{Start: int(kr.Start), End: int(kr.End())}
			break
		}
	}
	// Operator state figures come from the offsets in `_metadata`.
	sub.Operator = snapshot.Stats{Known: true}
	if h := st.ManagedOperatorState; h != nil {
		sub.OperatorElements = snapshot.ElementCounts{}
		for _, info := range h.States {
			sub.OperatorElements[info.Name] += int64(len(info.Offsets))
			sub.Operator.Entries += int64(len(info.Offsets))
		}
		sub.Operator.Bytes = elementBytes(h)
	}
	if h := st.RawOperatorState; h != nil && h.Delegate != nil {
		sub.RawOperatorBytes = h.Delegate.Size
	}
	if h := st.RawKeyedState; h != nil && h.KeyGroups != nil && h.KeyGroups.Delegate != nil {
		sub.RawKeyedBytes = h.KeyGroups.Delegate.Size
	}
	sub.Files = r.files(st)
	keyed, err := r.keyedFigures(ctx, o, op, st)
	if err != nil {
		return nil, err
	}
	sub.Keyed = keyed
	if err := r.degraded[st]; err != nil {
		// Known bytes, unknown entries: never an empty subtask.
		sub.Unreadable = append(sub.Unreadable, snapshot.Unreadable{Scope: snapshot.ScopeKeyed, Reason: err.Error(), Bytes: keyed.Bytes})
		sub.Keyed = snapshot.Stats{Bytes: keyed.Bytes}
	}
	return sub, nil
}

// elementBytes sizes the elements of an operator state handle: each runs to
// the next offset, the last to the end of the stream.
func elementBytes(h *OperatorStateHandle) int64 {
	var offs []int64
	for _, info := range h.States {
		offs = append(offs, info.Offsets...)
	}
	if len(offs) == 0 || h.Delegate == nil {
		return 0
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return max(h.Delegate.Size-offs[0], 0)
}

// keyedFigures decides whether a subtask's keyed state can be scanned. It
// cannot when it is only a changelog of changes, or when it is a heap
// snapshot written by serializers stateutil cannot walk; then the stored
// bytes are given, and the subtask is marked degraded (see subtask).
func (r *SnapshotReader) keyedFigures(ctx context.Context, o *snapshot.Operator, op *OperatorState, st *SubtaskState) (snapshot.Stats, error) {
	h := st.ManagedKeyedState
	switch {
	case h == nil:
		return snapshot.Stats{Known: true}, nil
	case h.Incremental != nil:
		return snapshot.Stats{}, nil
	case h.Changelog != nil && len(h.Changelog.NonMaterialized) == 0:
	case h.KeyGroups != nil:
	default:
		err := fmt.Errorf("%s handle: state changes not yet materialised, which stateutil does not apply (%w)", h.Type, ErrUnsupportedVersion)
		r.degrade(st, err)
		size := int64(0)
		if h.Changelog != nil {
			size = h.Changelog.CheckpointedSize
		}
		return snapshot.Stats{Known: true, Bytes: size}, nil
	}
	// Scan now only when some serializer cannot be walked: a heap key group
	// may then be impossible to split, which must be known before anyone
	// asks for entries.
	need := false
	var stored int64
	for _, kh := range managedKeyGroups(h) {
		s, err := openKGStream(ctx, r.res, kh, op.MaxParallelism)
		if err != nil {
			return snapshot.Stats{}, err
		}
		stored += s.storedBytes()
		for _, l := range s.layouts {
			need = need || !l.heapSized()
		}
		s.Close()
	}
	if !need {
		return snapshot.Stats{}, nil
	}
	stats := snapshot.Stats{Known: true}
	for e, err := range r.keyGroupEntries(ctx, op, st, keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}) {
		if errors.Is(err, ErrUnsupportedVersion) {
			r.degrade(st, err)
			return snapshot.Stats{Known: true, Bytes: stored}, nil
		}
		if err != nil {
			return snapshot.Stats{}, err
		}
		stats.Entries++
		stats.Bytes += e.Size()
	}
	return stats, nil
}

// heapSized reports whether every part of the state's heap entries can be
// walked.
func (l *layout) heapSized() bool {
	if !sized(l.key) || !sized(l.ns) {
		return false
	}
	if l.kind == snapshot.Map && !sized(l.userKey) {
		return false
	}
	return l.kind == KindTimer || sized(l.elem)
}

func (r *SnapshotReader) degrade(st *SubtaskState, err error) {
	if r.degraded == nil {
		r.degraded = map[*SubtaskState]error{}
	}
	r.degraded[st] = err
}

// files lists the files holding a subtask's state.
func (r *SnapshotReader) files(st *SubtaskState) []snapshot.FileRef {
	var out []snapshot.FileRef
	seen := map[string]bool{}
	add := func(h *StreamHandle, shared bool) {
		if h == nil || (h.Type != HandleFile && h.Type != HandleRelativeFile && h.Type != HandleSegmentFile) || seen[h.Path] {
			return
		}
		seen[h.Path] = true
		out = append(out, snapshot.FileRef{Path: h.Path, Size: h.Size, Shared: shared, Absolute: h.Type != HandleRelativeFile})
	}
	var keyed func(*KeyedHandle)
	keyed = func(h *KeyedHandle) {
		switch {
		case h == nil:
		case h.KeyGroups != nil:
			add(h.KeyGroups.Delegate, false)
		case h.Incremental != nil:
			add(h.Incremental.Meta, false)
			for _, f := range h.Incremental.Shared {
				add(f.Handle, true)
			}
			for _, f := range h.Incremental.Private {
				add(f.Handle, false)
			}
		case h.Changelog != nil:
			for _, k := range h.Changelog.Materialized {
				keyed(k)
			}
			for _, k := range h.Changelog.NonMaterialized {
				keyed(k)
			}
		case h.ChangelogFiles != nil:
			for _, f := range h.ChangelogFiles.Handles {
				add(f.Handle, true)
			}
		}
	}
	for _, h := range []*OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
		if h != nil {
			add(h.Delegate, false)
		}
	}
	keyed(st.ManagedKeyedState)
	keyed(st.RawKeyedState)
	return out
}

// withEmptySubtasks lists every subtask 0..parallelism-1: Flink records
// only subtasks that hold state (and none of a finished operator), while
// the model, and every writer, expects one per index.
func withEmptySubtasks(o *snapshot.Operator) []*snapshot.Subtask {
	byIndex := make(map[int]*snapshot.Subtask, len(o.Subtasks))
	for _, sub := range o.Subtasks {
		if _, dup := byIndex[sub.Index]; dup || sub.Index < 0 || sub.Index >= o.Parallelism {
			return o.Subtasks // leave as recorded, for snapshot.Validate to refuse
		}
		byIndex[sub.Index] = sub
	}
	all := make([]*snapshot.Subtask, 0, o.Parallelism)
	for i := range o.Parallelism {
		if sub, ok := byIndex[i]; ok {
			all = append(all, sub)
			continue
		}
		all = append(all, &snapshot.Subtask{Index: i, KeyGroups: keygroup.RangeOf(o.MaxParallelism, o.Parallelism, i),
			Keyed: snapshot.Stats{Known: true}, Operator: snapshot.Stats{Known: true}})
	}
	return all
}
