package flink

import (
	"context"
	"strconv"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// describe reads a Flink snapshot's `_metadata` alone: operators, their
// parallelism and key-group ranges, the kind, and every file a handle
// names (state, shared and private RocksDB files, changelog, channel and
// coordinator state), located without being opened. State descriptors are
// in the state files, so the model has none.
func describe(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*snapshot.Description, error) {
	mp, data, name, err := readMetadata(ctx, st, p)
	if err != nil {
		return nil, err
	}
	m, err := metadata.ParseMetadata(data, name)
	if err != nil {
		return nil, err
	}
	var maps []statefile.PathMapping
	for old, nw := range opts.PathMap {
		maps = append(maps, statefile.PathMapping{Old: old, New: nw})
	}
	s := &snapshot.Snapshot{Format: "flink", CheckpointID: m.CheckpointID, Operators: []*snapshot.Operator{},
		Properties: map[string]string{"metadata_version": strconv.Itoa(m.Version)}}
	r := &SnapshotReader{meta: m, snap: s, res: statefile.NewResolver(st, mp, opts.Storage, maps...)}
	var handles []*metadata.StreamHandle
	for _, op := range m.Operators {
		o := &snapshot.Operator{ID: op.ID.String(), UID: op.UID, Name: op.Name, Parallelism: op.Parallelism,
			MaxParallelism: op.MaxParallelism, KeyedStates: []snapshot.KeyedState{}, OperatorStates: []snapshot.OperatorState{}}
		handles = append(handles, op.CoordinatorState)
		for _, sub := range op.Subtasks {
			kgs := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub.Index)
			for _, h := range []*metadata.KeyedHandle{sub.ManagedKeyedState, sub.RawKeyedState} {
				if h != nil {
					kr := h.Range()
					kgs = keygroup.Range{Start: int(kr.Start), End: int(kr.End())}
					break
				}
			}
			o.Subtasks = append(o.Subtasks, &snapshot.Subtask{Index: sub.Index, KeyGroups: kgs, Files: r.files(sub)})
			for _, c := range sub.InputChannels {
				handles = append(handles, c.Delegate)
			}
			for _, c := range sub.ResultSubpartitions {
				handles = append(handles, c.Delegate)
			}
		}
		o.Subtasks = withEmptySubtasks(o)
		s.Operators = append(s.Operators, o)
	}
	r.kindAndFormat(handleHints(m))
	if err := snapshot.Validate(s, r.res.MetadataFile); err != nil {
		return nil, err
	}
	desc := &snapshot.Description{Snapshot: s, Metadata: mp}
	seen := map[string]bool{}
	add := func(h *metadata.StreamHandle) {
		if h == nil || seen[h.Path] || (h.Type != metadata.HandleFile && h.Type != metadata.HandleRelativeFile && h.Type != metadata.HandleSegmentFile) {
			return
		}
		seen[h.Path] = true
		f := snapshot.DescribedFile{Ref: h.Path, MinSize: h.Size}
		if h.Type == metadata.HandleSegmentFile {
			f.MinSize = h.StartPos + h.Size
		}
		loc, err := r.res.Locate(ctx, h)
		f.Unmapped = loc.Absolute && !loc.Remapped
		if err != nil {
			f.Err = err
		} else {
			f.Storage, f.Path = loc.Storage, loc.Path
		}
		desc.Files = append(desc.Files, f)
	}
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			for _, ref := range sub.Files {
				t := metadata.HandleRelativeFile
				if ref.Absolute {
					t = metadata.HandleFile
				}
				add(&metadata.StreamHandle{Type: t, Path: ref.Path, Size: ref.Size})
			}
		}
	}
	for _, h := range handles {
		add(h)
	}
	return desc, nil
}

// handleHints are the hints to the kind that the handles' types give,
// without a state file read (see keyedStates, which reads their headers
// too).
func handleHints(m *metadata.Metadata) map[string]bool {
	hints := map[string]bool{}
	for _, op := range m.Operators {
		addHandleHints(hints, op)
	}
	return hints
}

// addHandleHints adds the hints that op's keyed handles' types give.
func addHandleHints(hints map[string]bool, op *metadata.OperatorState) {
	for _, st := range op.Subtasks {
		switch h := st.ManagedKeyedState; {
		case h == nil:
		case h.Type == metadata.HandleSavepointKeyGroups:
			hints["savepoint-key-groups"] = true
		case nativeHandle(h) != nil:
			hints["native"], hints["backend:rocksdb"] = true, true
		case h.Changelog != nil || h.ChangelogBytes != nil || h.ChangelogFiles != nil:
			hints["backend:changelog"] = true
		}
	}
}
