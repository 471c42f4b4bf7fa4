package migrate

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// AbortResult is what an abort did.
type AbortResult struct {
	Plan    string `json:"plan"`
	Staging string `json:"staging"`
	// Removed is false when there was no staging area to remove: the plan
	// was aborted before, or committed and cleaned up.
	Removed bool `json:"removed"`
}

// AbortShards closes sp without committing it: it removes the plan from
// the staging area first, so that no shard or commit starts, then the rest
// of the staging area. It refuses a plan whose commit has begun
// (ErrPlanClosed: the commit finishes it) and a staging area of another
// plan (ErrPlanMismatch); it never touches the destination. Aborting
// again is no error.
func AbortShards(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan) (*AbortResult, error) {
	st, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return nil, err
	}
	res := &AbortResult{Plan: sp.ID, Staging: st.URI(staging)}
	switch _, err := st.Stat(ctx, staging); {
	case errors.Is(err, storage.ErrNotFound):
		return res, nil
	case err != nil:
		return nil, err
	}
	switch _, err := st.Stat(ctx, path.Join(staging, StagingCommitted)); {
	case err == nil:
		return nil, fmt.Errorf("%w: plan %s was committed; run commit to finish its cleanup", ErrPlanClosed, sp.ID)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	// Without its plan the staging area is an aborted one already (an
	// abort cut short): what is left goes.
	if err := CheckPlanOpen(ctx, reg, sp); err != nil && !errors.Is(err, ErrPlanClosed) {
		return nil, err
	}
	if err := st.RemoveAll(ctx, path.Join(staging, StagingPlan)); err != nil {
		return nil, err
	}
	if err := st.RemoveAll(ctx, staging); err != nil {
		return nil, fmt.Errorf("plan %s is aborted; removing the rest of its staging area %s: %w (abort again)", sp.ID, res.Staging, err)
	}
	res.Removed = true
	return res, nil
}
