package flink

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/backends/flink/internal/changelog"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// typeOf is typeOf for a state of this snapshot.
func (r *SnapshotReader) typeOf(s *typeser.SerializerSnapshot) snapshot.Type {
	if r.res.Kryo5 {
		typeser.MarkKryo5(s)
	}
	return typeser.TypeOf(s)
}

// build maps the decoded `_metadata` onto the snapshot model.
func (r *SnapshotReader) build(ctx context.Context) error {
	m := r.meta
	s := &snapshot.Snapshot{Format: "flink", CheckpointID: m.CheckpointID, Operators: []*snapshot.Operator{},
		Properties: map[string]string{"metadata_version": strconv.Itoa(m.Version)}}
	r.snap = s
	r.ops = map[*snapshot.Operator]*metadata.OperatorState{}
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
	case m.NullProperties:
		// Only the State Processor API writes no properties, and what it
		// writes are savepoints.
		s.Kind, p["kind_source"] = snapshot.Savepoint, "null checkpoint properties (State Processor API)"
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
func (r *SnapshotReader) headers(ctx context.Context, op *metadata.OperatorState, hints map[string]bool) ([]*statefile.KeyedHeader, error) {
	var out []*statefile.KeyedHeader
	for _, st := range op.Subtasks {
		hs, err := r.subtaskHeaders(ctx, op, st, hints)
		if err != nil {
			if !degradable(err) {
				return nil, err
			}
			// The other subtasks, and this one's operator state, still read.
			r.degrade(st, snapshot.ScopeKeyed, "", err)
			continue
		}
		out = append(out, hs...)
	}
	return out, nil
}

func (r *SnapshotReader) subtaskHeaders(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, hints map[string]bool) ([]*statefile.KeyedHeader, error) {
	if changelog.PendingChanges(st.ManagedKeyedState) {
		s, err := r.changelog(ctx, op, st)
		if err != nil {
			return nil, err
		}
		return []*statefile.KeyedHeader{s.Header}, nil
	}
	var out []*statefile.KeyedHeader
	for _, h := range managedKeyGroups(st.ManagedKeyedState) {
		s, err := statefile.OpenKGStream(ctx, r.res, h, op.MaxParallelism)
		if err != nil {
			return nil, err
		}
		f, err := s.Detect()
		s.Close()
		if err != nil {
			return nil, err
		}
		switch {
		case f == statefile.HeapFormat:
			hints["backend:heap"] = true
		case f == statefile.CanonicalFormat && h.Type != metadata.HandleSavepointKeyGroups:
			hints["backend:rocksdb"], hints["canonical"] = true, true
		}
		out = append(out, s.Header)
	}
	if inc := nativeHandle(st.ManagedKeyedState); inc != nil {
		hdr, err := r.res.ReadNativeMeta(ctx, inc)
		if err != nil {
			return nil, err
		}
		out = append(out, hdr)
	}
	return out, nil
}

// nativeHandle is the native RocksDB handle that holds a managed keyed
// handle's state: the handle itself, or the materialized part of a
// changelog handle (a native savepoint of the changelog backend).
func nativeHandle(h *metadata.KeyedHandle) *metadata.IncrementalKeyedHandle {
	switch {
	case h == nil:
		return nil
	case h.Incremental != nil:
		return h.Incremental
	case h.Changelog != nil:
		for _, m := range h.Changelog.Materialized {
			if inc := nativeHandle(m); inc != nil {
				return inc
			}
		}
	}
	return nil
}

// managedKeyGroups lists the key-groups handles that hold a managed keyed
// handle's state: the handle itself, or the materialized part of a
// changelog handle.
func managedKeyGroups(h *metadata.KeyedHandle) []*metadata.KeyedHandle {
	switch {
	case h == nil:
		return nil
	case h.KeyGroups != nil:
		return []*metadata.KeyedHandle{h}
	case h.Changelog != nil:
		var out []*metadata.KeyedHandle
		for _, m := range h.Changelog.Materialized {
			out = append(out, managedKeyGroups(m)...)
		}
		return out
	}
	return nil
}

func (r *SnapshotReader) keyedStates(ctx context.Context, o *snapshot.Operator, op *metadata.OperatorState, hints map[string]bool) error {
	addHandleHints(hints, op)
	hdrs, err := r.headers(ctx, op, hints)
	if err != nil {
		return err
	}
	var ls []*statefile.Layout
	for _, hdr := range hdrs {
		hl, _ := statefile.LayoutsOf(hdr)
		for _, l := range hl {
			if !slices.ContainsFunc(ls, func(o *statefile.Layout) bool { return o.Name == l.Name }) {
				ls = append(ls, l)
			}
		}
	}
	for _, l := range ls {
		ks := snapshot.KeyedState{Name: l.Name, Kind: l.Kind, KeyType: r.typeOf(l.Key), NamespaceType: r.typeOf(l.Namespace), ValueType: r.typeOf(l.User)}
		if l.Kind == statefile.KindTimer {
			ks.ValueType = typeser.TypeOf(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"})
			ks.KeyType = timerKeyType(ks.KeyType, hdrs) // carry.go
		}
		if l.Kind == snapshot.Map {
			ks.UserKeyType = r.typeOf(l.UserKey)
		}
		if l.TTL != nil {
			// Flink does not store the TTL settings in snapshots; only the
			// values' last-access times are known.
			ks.TTL = &snapshot.TTL{Unknown: true}
		}
		o.KeyedStates = append(o.KeyedStates, ks)
	}
	return nil
}

// operatorStates lists an operator's operator-state descriptors with their
// types, reading every subtask's operator-state stream: the header gives
// the types, and a broadcast state's stored map its entry count. A stream
// that cannot be read marks that subtask's operator state unreadable; the
// rest of the snapshot still reads.
func (r *SnapshotReader) operatorStates(ctx context.Context, o *snapshot.Operator, op *metadata.OperatorState) error {
	typed := map[string]bool{}
	for _, st := range op.Subtasks {
		h := st.ManagedOperatorState
		if h == nil {
			continue
		}
		for _, info := range h.States {
			if _, ok := o.OperatorStateByName(info.Name); !ok {
				o.OperatorStates = append(o.OperatorStates, snapshot.OperatorState{Name: info.Name, Mode: modeOf(info.Mode), ElementType: snapshot.Type{Name: typeser.TypeBytes}})
			}
		}
		f, err := r.res.ReadOperatorState(ctx, h)
		if err != nil {
			if !degradable(err) {
				return err
			}
			r.degrade(st, snapshot.ScopeOperator, "", err)
			continue
		}
		for _, m := range f.States {
			if os, ok := o.OperatorStateByName(m.Name); ok && !typed[m.Name] {
				os.ElementType, typed[m.Name] = r.typeOf(m.Value()), true
				if t, ok := r.res.Serializers.StateElementType(m.Name, m.Value()); ok {
					os.ElementType = t
				}
			}
		}
		for _, m := range f.BroadcastStates {
			key, value, err := statefile.BroadcastKV(m)
			if os, ok := o.OperatorStateByName(m.Name); ok && !typed[m.Name] && err == nil {
				os.ElementType, typed[m.Name] = typeser.TypeOf(&typeser.SerializerSnapshot{Class: typeser.BroadcastEntryClass, Nested: []*typeser.SerializerSnapshot{key, value}}), true
			}
		}
		if r.opBytes == nil {
			r.opBytes = map[*metadata.SubtaskState]int64{}
		}
		r.opBytes[st] += elementBytes(f)
		for _, p := range f.Partitions {
			if p.Mode != metadata.Broadcast {
				continue
			}
			if _, _, err := statefile.BroadcastKV(p.Meta); err != nil {
				r.degrade(st, snapshot.ScopeOperator, p.Name, err)
				continue
			}
			n, err := statefile.BroadcastSize(p, f.File)
			if err != nil {
				r.degrade(st, snapshot.ScopeOperator, p.Name, err)
				continue
			}
			if r.sizes == nil {
				r.sizes = map[*metadata.SubtaskState]map[string]int64{}
			}
			if r.sizes[st] == nil {
				r.sizes[st] = map[string]int64{}
			}
			r.sizes[st][p.Name] += n
		}
	}
	return nil
}

// degradable says whether an error reading one state's bytes leaves the
// rest of the snapshot readable: damage and unknown layouts do; a missing
// file (most often an absolute path to map) or a cancelled read end the
// whole read.
func degradable(err error) bool {
	return errors.Is(err, wire.ErrCorrupt) || errors.Is(err, wire.ErrUnsupportedVersion)
}

func modeOf(m metadata.DistributionMode) snapshot.Mode {
	switch m {
	case metadata.Union:
		return snapshot.Union
	case metadata.Broadcast:
		return snapshot.Broadcast
	}
	return snapshot.Split
}

func (r *SnapshotReader) subtask(ctx context.Context, o *snapshot.Operator, op *metadata.OperatorState, st *metadata.SubtaskState) (*snapshot.Subtask, error) {
	sub := &snapshot.Subtask{Index: st.Index, KeyGroups: keygroup.RangeOf(op.MaxParallelism, op.Parallelism, st.Index)}
	for _, h := range []*metadata.KeyedHandle{st.ManagedKeyedState, st.RawKeyedState} {
		if h != nil {
			kr := h.Range()
			sub.KeyGroups = keygroup.Range{Start: int(kr.Start), End: int(kr.End())}
			break
		}
	}
	// Operator state figures come from the offsets in `_metadata`, a
	// broadcast state's from its stored map.
	sub.Operator = snapshot.Stats{Known: true}
	if h := st.ManagedOperatorState; h != nil {
		sub.OperatorElements = snapshot.ElementCounts{}
		for _, info := range h.States {
			n := int64(len(info.Offsets))
			if info.Mode == metadata.Broadcast {
				n = r.sizes[st][info.Name]
			}
			sub.OperatorElements[info.Name] += n
			sub.Operator.Entries += n
		}
		sub.Operator.Bytes = r.opBytes[st]
	}
	if h := st.RawOperatorState; h != nil && h.Delegate != nil {
		sub.RawOperatorBytes = h.Delegate.Size
	}
	if h := st.RawKeyedState; h != nil && h.KeyGroups != nil && h.KeyGroups.Delegate != nil {
		sub.RawKeyedBytes = h.KeyGroups.Delegate.Size
	}
	sub.Files = r.files(st)
	sub.InFlight = statefile.InFlight(st)
	keyed, err := r.keyedFigures(ctx, o, op, st)
	if err != nil {
		return nil, err
	}
	sub.Keyed = keyed
	u := r.unread[st]
	keys := make([]unreadKey, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].scope < keys[j].scope || keys[i].scope == keys[j].scope && keys[i].state < keys[j].state
	})
	for _, k := range keys {
		// Known bytes, unknown entries: never an empty state.
		err := u[k]
		un := snapshot.Unreadable{Scope: k.scope, State: k.state, Reason: err.Error(), Damaged: errors.Is(err, wire.ErrCorrupt)}
		if nd := (*snapshot.NotDecodedError)(nil); !un.Damaged && errors.As(err, &nd) {
			un.Serializer, un.ValueClass, un.Values = nd.Serializer, nd.ValueClass, r.unreadValues[st][k.state]
		}
		switch {
		case k.scope == snapshot.ScopeKeyed && k.state == "":
			un.Bytes = keyed.Bytes
			sub.Keyed = snapshot.Stats{Bytes: keyed.Bytes}
		case k.scope == snapshot.ScopeKeyed:
			sub.Keyed = snapshot.Stats{}
		case k.state == "":
			if h := st.ManagedOperatorState; h != nil && h.Delegate != nil {
				un.Bytes = h.Delegate.Size
			}
			sub.Operator = snapshot.Stats{Known: true}
			sub.OperatorElements = nil
		default:
			sub.Operator = snapshot.Stats{}
			delete(sub.OperatorElements, k.state)
		}
		sub.Unreadable = append(sub.Unreadable, un)
	}
	return sub, nil
}

// elementBytes sizes the elements of an operator state file as they are
// read (decompressed): a broadcast state's one element holds its map's
// entry count, which belongs to no entry.
func elementBytes(f *statefile.OperatorStateFile) int64 {
	var n int64
	for _, p := range f.Partitions {
		for _, e := range p.Elements {
			n += int64(len(e))
			if p.Mode == metadata.Broadcast {
				n -= 4
			}
		}
	}
	return n
}

// keyedFigures decides whether a subtask's keyed state can be scanned. It
// cannot when it is only a changelog of changes, or when it is a heap
// snapshot written by serializers stateutil cannot walk; then the stored
// bytes are given, and the subtask is marked degraded (see subtask).
func (r *SnapshotReader) keyedFigures(ctx context.Context, o *snapshot.Operator, op *metadata.OperatorState, st *metadata.SubtaskState) (snapshot.Stats, error) {
	h := st.ManagedKeyedState
	if r.unread[st][unreadKey{snapshot.ScopeKeyed, ""}] != nil {
		return snapshot.Stats{Known: true, Bytes: keyedBytes(h)}, nil
	}
	switch {
	case h == nil:
		return snapshot.Stats{Known: true}, nil
	case changelog.PendingChanges(h):
		return r.changelogFigures(ctx, op, st)
	case nativeHandle(h) != nil && h.Changelog != nil && len(h.Changelog.NonMaterialized) == 0 && len(h.Changelog.Materialized) > 1:
		err := fmt.Errorf("%s handle with %d materialized parts: %w", h.Type, len(h.Changelog.Materialized), wire.ErrUnsupportedVersion)
		r.degrade(st, snapshot.ScopeKeyed, "", err)
		return snapshot.Stats{Known: true, Bytes: h.Changelog.CheckpointedSize}, nil
	case nativeHandle(h) != nil && (h.Changelog == nil || len(h.Changelog.NonMaterialized) == 0):
		return snapshot.Stats{}, nil
	case h.Changelog != nil && len(h.Changelog.NonMaterialized) == 0:
	case h.KeyGroups != nil:
	default:
		err := fmt.Errorf("%s handle: no materialized state stateutil reads (%w)", h.Type, wire.ErrUnsupportedVersion)
		r.degrade(st, snapshot.ScopeKeyed, "", err)
		return snapshot.Stats{Known: true, Bytes: keyedBytes(h)}, nil
	}
	// Scan now only when some serializer cannot be walked: a heap key group
	// may then be impossible to split, which must be known before anyone
	// asks for entries.
	if len(managedKeyGroups(h)) == 0 {
		// A handle whose state no reader here can list is never empty state.
		err := fmt.Errorf("%s handle holds no state stateutil can list: %w", h.Type, wire.ErrUnsupportedVersion)
		r.degrade(st, snapshot.ScopeKeyed, "", err)
		return snapshot.Stats{Known: true, Bytes: keyedBytes(h)}, nil
	}
	need := false
	var stored int64
	for _, kh := range managedKeyGroups(h) {
		s, err := statefile.OpenKGStream(ctx, r.res, kh, op.MaxParallelism)
		if err == nil {
			_, err = s.Detect()
		}
		if err != nil {
			if s != nil {
				s.Close()
			}
			if !degradable(err) {
				return snapshot.Stats{}, err
			}
			r.degrade(st, snapshot.ScopeKeyed, "", err)
			return snapshot.Stats{Known: true, Bytes: keyedBytes(h)}, nil
		}
		stored += s.StoredBytes()
		for _, l := range s.Layouts {
			// Kryo values walk only when the decoder reads them.
			need = need || !l.HeapSized() || s.Format == statefile.HeapFormat && l.HasKryo()
		}
		s.Close()
	}
	if !need {
		return snapshot.Stats{}, nil
	}
	// The key groups are walked in parallel, in contiguous spans, and the
	// spans' findings taken in key-group order, as one walk would make them.
	spans := scanSpans(managedKeyGroups(h), runtime.GOMAXPROCS(0))
	scans := make([]keyedScan, len(spans))
	var wg sync.WaitGroup
	for i, span := range spans {
		wg.Go(func() { scans[i] = r.scanKeyGroups(ctx, op, st, span) })
	}
	wg.Wait()
	stats := snapshot.Stats{Known: true}
	// A heap state that cannot be read in some key group is marked
	// unreadable as a whole: what it would yield is partial.
	lost := map[string]error{}
	values := map[string]int64{}
	for _, sc := range scans {
		if errors.Is(sc.err, wire.ErrUnsupportedVersion) {
			r.degrade(st, snapshot.ScopeKeyed, "", sc.err)
			return snapshot.Stats{Known: true, Bytes: stored}, nil
		}
		if sc.err != nil {
			return snapshot.Stats{}, sc.err
		}
		stats.Entries += sc.stats.Entries
		stats.Bytes += sc.stats.Bytes
		for _, l := range sc.lost {
			if lost[l.state] == nil {
				lost[l.state] = l.err
			}
			// A count is only given where every lost section has one.
			if n := statefile.UnsplitValues(l.err); n > 0 && values[l.state] >= 0 {
				values[l.state] += n
			} else {
				values[l.state] = -1
			}
		}
	}
	for name, err := range lost {
		r.degrade(st, snapshot.ScopeKeyed, name, err)
		if r.unreadValues == nil {
			r.unreadValues = map[*metadata.SubtaskState]map[string]int64{}
		}
		if r.unreadValues[st] == nil {
			r.unreadValues[st] = map[string]int64{}
		}
		r.unreadValues[st][name] = max(values[name], 0)
	}
	return stats, nil
}

// keyedScan is what a walk of some key groups of a subtask found: its
// entries' figures, the sections lost in the order met, or the error
// that stopped it.
type keyedScan struct {
	stats snapshot.Stats
	lost  []lostSection
	err   error
}

type lostSection struct {
	state string
	err   error
}

func (r *SnapshotReader) scanKeyGroups(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, span keygroup.Range) keyedScan {
	var sc keyedScan
	for e, err := range r.keyGroupEntries(ctx, op, st, span, func(state string, err error) {
		sc.lost = append(sc.lost, lostSection{state, err})
	}, true) {
		if err != nil {
			sc.err = err
			return sc
		}
		sc.stats.Entries++
		sc.stats.Bytes += e.Size()
	}
	return sc
}

// scanSpans splits the key groups the handles hold into at most n
// contiguous spans of about as many key groups each.
func scanSpans(handles []*metadata.KeyedHandle, n int) []keygroup.Range {
	lo, hi := -1, -1
	for _, h := range handles {
		kr := h.Range()
		if kr.Count == 0 {
			continue
		}
		if lo < 0 || int(kr.Start) < lo {
			lo = int(kr.Start)
		}
		hi = max(hi, int(kr.End()))
	}
	if lo < 0 || hi < lo {
		return []keygroup.Range{{Start: 0, End: keygroup.UpperBoundMaxParallelism}}
	}
	n = max(1, min(n, hi-lo+1))
	out := make([]keygroup.Range, 0, n)
	for i := range n {
		out = append(out, keygroup.Range{Start: lo + (hi-lo+1)*i/n, End: lo + (hi-lo+1)*(i+1)/n - 1})
	}
	return out
}

// unreadKey names unreadable state of a subtask: a scope and a state
// name ("" is every state of the scope).
type unreadKey struct{ scope, state string }

// keyedUnread says whether some keyed state of a subtask is unreadable.
func (r *SnapshotReader) keyedUnread(st *metadata.SubtaskState) bool {
	for k := range r.unread[st] {
		if k.scope == snapshot.ScopeKeyed {
			return true
		}
	}
	return false
}

// degrade marks state of a subtask unreadable, with the reason.
func (r *SnapshotReader) degrade(st *metadata.SubtaskState, scope, state string, err error) {
	if r.unread == nil {
		r.unread = map[*metadata.SubtaskState]map[unreadKey]error{}
	}
	if r.unread[st] == nil {
		r.unread[st] = map[unreadKey]error{}
	}
	if _, ok := r.unread[st][unreadKey{scope, state}]; !ok {
		r.unread[st][unreadKey{scope, state}] = err
	}
}

// files lists the files holding a subtask's state.
func (r *SnapshotReader) files(st *metadata.SubtaskState) []snapshot.FileRef {
	var out []snapshot.FileRef
	seen := map[string]bool{}
	add := func(h *metadata.StreamHandle, shared bool) {
		if h == nil || (h.Type != metadata.HandleFile && h.Type != metadata.HandleRelativeFile && h.Type != metadata.HandleSegmentFile) || seen[h.Path] {
			return
		}
		seen[h.Path] = true
		out = append(out, snapshot.FileRef{Path: h.Path, Size: h.Size, Shared: shared, Absolute: h.Type != metadata.HandleRelativeFile})
	}
	var keyed func(*metadata.KeyedHandle)
	keyed = func(h *metadata.KeyedHandle) {
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
	for _, h := range []*metadata.OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
		if h != nil {
			add(h.Delegate, false)
		}
	}
	for _, h := range append(slices.Clip(st.InputChannels), st.ResultSubpartitions...) {
		add(h.Delegate, false)
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

// keyedBytes is what a keyed handle's files take, as `_metadata` records.
func keyedBytes(h *metadata.KeyedHandle) int64 {
	switch {
	case h == nil:
		return 0
	case h.KeyGroups != nil && h.KeyGroups.Delegate != nil:
		return h.KeyGroups.Delegate.Size
	case h.Changelog != nil:
		return h.Changelog.CheckpointedSize
	case h.Incremental != nil:
		n := h.Incremental.Meta.SizeOrZero()
		for _, f := range append(append([]metadata.NamedStreamHandle{}, h.Incremental.Shared...), h.Incremental.Private...) {
			n += f.Handle.SizeOrZero()
		}
		return n
	}
	return 0
}
