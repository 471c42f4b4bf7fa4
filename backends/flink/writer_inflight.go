package flink

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/releases"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// The data in flight of an unaligned checkpoint, carried into a savepoint
// that keeps the job's shape (the same operators, parallelism and max
// parallelism): Flink restores each subtask's channel state handles to
// the subtask of the same index as they are, its input channels and
// result subpartitions by their gate and channel, so the handles of the
// copy are the source's, pointing at copies of their buffers. A channel
// whose stream Flink kept inside `_metadata` stays there; one in a file
// has its buffers copied into a file of the savepoint, op<k>-<i>-channels
// (statefile.CopyChannels).

// carriesInFlight is the flink format's snapshot.Format.CarriesInFlight:
// within the Flink major that wrote the checkpoint. The records in flight
// are the job's serialized by that Flink, and nothing rewrites them for
// the other major's.
func carriesInFlight(s *snapshot.Snapshot, opts snapshot.WriteOptions) string {
	cs := carried.SnapshotOf(s)
	if cs == nil {
		return "only a copy of a Flink checkpoint carries"
	}
	if opts.ReaderVersion == "" {
		return ""
	}
	to, err := ReleaseOf(opts.ReaderVersion)
	if from := releases.MajorOfMetadata(cs.MetadataVersion); err == nil && to.Major != from {
		return fmt.Sprintf("a savepoint for Flink %s cannot carry: its records are serialized as the job's Flink %d.x serializes them, which stateutil does not rewrite for Flink %d.x",
			to.Line, from, to.Major)
	}
	return ""
}

// CarryInFlight copies the channel state of subtask sw of op, an operator
// of r's snapshot, into sw (snapshot.InFlightCarrier). r is a Flink
// snapshot's reader, or a wrapper of one that leaves op's subtasks as
// they are.
func (w *writer) CarryInFlight(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, sw snapshot.SubtaskWriter) error {
	sr, ok := snapshot.Unwrapped(r).(*SnapshotReader)
	if !ok {
		return fmt.Errorf("operator %q: the flink writer carries data in flight only from a Flink snapshot: %w", op.Label(), ErrNotFromFlink)
	}
	s, ok := sw.(*subtaskWriter)
	if !ok || s.w != w {
		return fmt.Errorf("operator %q: a subtask another writer started", op.Label())
	}
	fo, ok := sr.operatorState(op)
	if !ok {
		return fmt.Errorf("operator %q is not one of the snapshot read", op.Label())
	}
	i := slices.IndexFunc(fo.Subtasks, func(st *metadata.SubtaskState) bool { return st != nil && st.Index == s.index })
	if i < 0 {
		return fmt.Errorf("operator %q: the snapshot read has no subtask %d to carry data in flight from", op.Label(), s.index)
	}
	return s.carryChannels(ctx, sr.res, fo.Subtasks[i])
}

// carryChannels copies the channel state of st, the source's subtask of
// sw's index, into the savepoint.
func (sw *subtaskWriter) carryChannels(ctx context.Context, res *statefile.Resolver, st *metadata.SubtaskState) error {
	if sw.err != nil {
		return sw.err
	}
	hs := append(slices.Clip(st.InputChannels), st.ResultSubpartitions...)
	if len(hs) == 0 {
		return nil
	}
	var f *stateFile
	var out io.Writer
	to := &metadata.StreamHandle{Type: metadata.HandleRelativeFile}
	if slices.ContainsFunc(hs, statefile.InFile) {
		var err error
		if f, err = sw.w.file(ctx, sw.name("channels"), false); err != nil {
			return sw.fail(err)
		}
		to.Path, out = f.name, f
	}
	copied, err := statefile.CopyChannels(ctx, res, hs, out, to)
	if err == nil && f != nil {
		err = f.commit()
	}
	if err != nil {
		if f != nil {
			f.p.Abort()
		}
		return sw.fail(fmt.Errorf("operator %q subtask %d, in-flight data: %w", sw.op.Label(), sw.index, err))
	}
	if f != nil {
		sw.w.written.Add(f.name)
		sw.channels = f
	}
	sw.inputs, sw.outputs = copied[:len(st.InputChannels)], copied[len(st.InputChannels):]
	return nil
}
