package flink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// The channel state of unaligned checkpoints (FLINK-FORMATS.md §5): per
// subtask, input-channel and result-subpartition handles, each a stream
// of buffers at the offsets it lists. A stream starts with an int version
// (0); a buffer is an int length, then that many bytes. The size Flink
// records for a channel counts its buffers with their lengths, and the
// version too where the stream is the channel's own bytes inside
// `_metadata` (Flink copies a small channel's buffers out of the shared
// stream into a byte-stream handle of its own).

// inFlight lists what a subtask's channel handles hold, one row a channel.
func (r *SnapshotReader) inFlight(st *metadata.SubtaskState) []snapshot.InFlight {
	var out []snapshot.InFlight
	add := func(dir string, hs []*metadata.ChannelHandle) {
		for _, h := range hs {
			file, framing := "", int64(0)
			if d := h.Delegate; d != nil && d.Type != metadata.HandleByteStream {
				file = d.Path
			} else {
				framing = statefile.ChannelHeader
			}
			for _, c := range h.Channels() {
				data := c.Size - framing - 4*int64(len(c.Offsets))
				out = append(out, snapshot.InFlight{Direction: dir, Gate: int(c.Info[0]), Channel: int(c.Info[1]),
					Buffers: len(c.Offsets), Bytes: max(0, data), File: file})
			}
		}
	}
	add(snapshot.InputChannel, st.InputChannels)
	add(snapshot.ResultSubpartition, st.ResultSubpartitions)
	slices.SortStableFunc(out, func(a, b snapshot.InFlight) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Gate, b.Gate), cmp.Compare(a.Channel, b.Channel))
	})
	return out
}

// CheckWhole checks, for verify (snapshot.WholeChecker), what no entry
// or element read reaches: the files the checksum manifest lists
// (sidecar.go) and the channel state of an unaligned checkpoint. Each
// finding is an error of its own, joined.
func (r *SnapshotReader) CheckWhole(ctx context.Context) error {
	return errors.Join(append(r.checkSums(ctx), r.checkChannels(ctx)...)...)
}

// checkChannels reads the buffer lengths of every channel handle and
// checks them against what `_metadata` records: the stream exists and is
// as long as recorded, starts with version 0, every buffer lies inside it
// after the one before, and the buffers add up to the channel's size (a
// merged handle's: to the sizes of its channels).
func (r *SnapshotReader) checkChannels(ctx context.Context) []error {
	var errs []error
	for _, op := range r.meta.Operators {
		for _, st := range op.Subtasks {
			if st == nil {
				continue
			}
			for _, h := range append(append([]*metadata.ChannelHandle(nil), st.InputChannels...), st.ResultSubpartitions...) {
				if err := ctx.Err(); err != nil {
					return append(errs, err)
				}
				if err := statefile.CheckChannelHandle(ctx, r.res, h); err != nil {
					errs = append(errs, fmt.Errorf("operator %s subtask %d, in-flight data: %w", op.ID, st.Index, err))
				}
			}
		}
	}
	return errs
}
