package flink

import (
	"context"
	"errors"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
)

// CheckWhole checks, for verify (snapshot.WholeChecker), what no entry
// or element read reaches: the files the checksum manifest lists
// (sidecar.go) and the channel state of an unaligned checkpoint
// (statefile.CheckChannels). Each finding is an error of its own, joined.
func (r *SnapshotReader) CheckWhole(ctx context.Context) error {
	return errors.Join(append(r.checkSums(ctx), statefile.CheckChannels(ctx, r.res, r.meta.Operators)...)...)
}
