package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// CommitOptions tune CommitShards.
type CommitOptions struct {
	// Verify re-reads the destination and compares it with the source, as
	// Request.Verify.
	Verify bool
	// TempDir: where the source unpacks what it must (see OpenOptions).
	TempDir string
	// BeforePlace, if set, is called once the metadata is written, before
	// the snapshot moves to the destination: where tests kill a commit.
	BeforePlace func()
}

// CommitResult is what a commit did.
type CommitResult struct {
	*Result
	// AlreadyCommitted is set when an earlier commit of the plan had put
	// the snapshot in place (and this one only cleaned up after it).
	AlreadyCommitted bool `json:"already_committed"`
}

// CommitShards finishes sp: it claims the destination, checks that every
// shard recorded its part (naming those that did not) and that every
// file a record lists is there with the size recorded, removes what
// killed or superseded shard runs left, writes the format's metadata from
// the records, moves the snapshot to the destination (a forced write
// replaces what is there as Run does) and removes the staging area.
// Killed at any point, it leaves nothing at the destination that a reader
// accepts, and running it again finishes the job.
func CommitShards(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, opts CommitOptions) (*CommitResult, error) {
	st, dst, err := reg.Storage.Resolve(ctx, sp.Destination)
	if err != nil {
		return nil, err
	}
	stStaging, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return nil, err
	}
	if stStaging.URI("/") != st.URI("/") {
		return nil, fmt.Errorf("%w: staging %s is not on the destination's storage", ErrPlanMismatch, sp.Staging)
	}
	r, plan, f, err := openPlanned(ctx, reg, sp, opts.TempDir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res := &CommitResult{Result: &Result{Plan: plan, From: sp.SourceFormat, Totals: plan.Totals(), Dropped: []snapshot.UnreadablePart{}}}
	claim, err := st.Claim(ctx, dst)
	if err != nil {
		return nil, err
	}
	defer claim.Release()
	data := path.Join(staging, stagingData, path.Base(dst))
	// The memory format stages parts beside the file it commits; the
	// directory formats write into data itself.
	if _, err := st.Stat(ctx, path.Dir(data)); errors.Is(err, storage.ErrNotFound) {
		if _, _, _, detectErr := reg.Detect(ctx, sp.Destination); detectErr == nil {
			if _, err := st.Stat(ctx, staging); err == nil {
				// Moved in by a commit killed before it cleaned up.
				if err := st.RemoveAll(ctx, staging); err != nil {
					return nil, err
				}
			}
			res.AlreadyCommitted = true
			return res, verifyIf(ctx, reg, r, plan, opts, res.Result)
		}
		return nil, fmt.Errorf("%w: %s holds nothing of plan %s (no shard has run, or the staging area was removed); run the shards", ErrShardsIncomplete, st.URI(staging), sp.ID)
	} else if err != nil {
		return nil, err
	}
	records, err := readRecords(ctx, st, staging, sp)
	if err != nil {
		return nil, err
	}
	keep, err := checkFiles(ctx, st, staging, records)
	if err != nil {
		return nil, err
	}
	where, err := placement(ctx, reg, st, dst, sp)
	if err != nil {
		return nil, err
	}
	// What killed or superseded runs wrote, and the metadata of a commit
	// killed before it moved the snapshot: none of it is recorded.
	if err := removeUnkept(ctx, st, path.Join(staging, stagingData), keep); err != nil {
		return nil, err
	}
	w, err := f.Create(ctx, st, data, snapshot.WriteOptions{ReaderVersion: sp.ReaderVersion})
	if err != nil {
		return nil, err
	}
	adopter, ok := w.(snapshot.Adopter)
	if !ok {
		return nil, errors.Join(fmt.Errorf("%w: format %q cannot commit shards", snapshot.ErrUnsupportedVersion, f.Name), w.Abort(context.WithoutCancel(ctx)))
	}
	for _, rec := range records {
		for _, s := range rec.Subtasks {
			for k := range s.Files {
				s.Files[k].Path = path.Join(staging, s.Files[k].Path)
			}
			if err := adopter.Adopt(ctx, plan.output(s.PlanOperator), s.StagedSubtask); err != nil {
				return nil, errors.Join(fmt.Errorf("shard %d: %w", rec.Shard, err), w.Abort(context.WithoutCancel(ctx)))
			}
		}
	}
	if err := Commit(ctx, w, plan); err != nil {
		return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
	}
	if opts.BeforePlace != nil {
		opts.BeforePlace()
	}
	if err := where.put(ctx, data); err != nil {
		return nil, err
	}
	if err := st.RemoveAll(ctx, staging); err != nil {
		return nil, fmt.Errorf("committed %s; removing the staging area %s: %w", sp.Destination, st.URI(staging), err)
	}
	return res, verifyIf(ctx, reg, r, plan, opts, res.Result)
}

// checkFiles checks that every file the records list is in the staging
// area with the size recorded, and returns their paths. It lists each
// directory once rather than asking for each file: a rocksdb snapshot of
// terabytes has millions of files, and a namenode answers a listing of a
// thousand in one call.
func checkFiles(ctx context.Context, st storage.Storage, staging string, records []*ShardRecord) (map[string]bool, error) {
	keep := map[string]bool{}
	listed := map[string]map[string]storage.Info{}
	for _, rec := range records {
		for _, s := range rec.Subtasks {
			for _, file := range s.Files {
				p := path.Join(staging, file.Path)
				dir := path.Dir(p)
				infos, ok := listed[dir]
				if !ok {
					entries, err := st.List(ctx, dir)
					if err != nil && !errors.Is(err, storage.ErrNotFound) {
						return nil, err
					}
					infos = make(map[string]storage.Info, len(entries))
					for _, e := range entries {
						infos[e.Name] = e
					}
					listed[dir] = infos
				}
				info, ok := infos[path.Base(p)]
				switch {
				case !ok:
					return nil, fmt.Errorf("%w: shard %d: %s, which it recorded, is missing; run shard %d again", ErrShardsIncomplete, rec.Shard, st.URI(p), rec.Shard)
				case info.IsDir || info.Size != file.Size:
					return nil, fmt.Errorf("%w: shard %d: %s is %d bytes, recorded as %d; run shard %d again", ErrShardsIncomplete, rec.Shard, st.URI(p), info.Size, file.Size, rec.Shard)
				}
				keep[p] = true
			}
		}
	}
	return keep, nil
}

func verifyIf(ctx context.Context, reg *snapshot.Registry, r snapshot.Reader, plan *Plan, opts CommitOptions, res *Result) error {
	if !opts.Verify {
		return nil
	}
	if err := Verify(ctx, reg, r, plan); err != nil {
		return err
	}
	res.Verified = true
	return nil
}

// readRecords reads every shard's record, refusing, with the shards
// named, while any is missing.
func readRecords(ctx context.Context, st storage.Storage, staging string, sp *ShardPlan) ([]*ShardRecord, error) {
	var records []*ShardRecord
	var missing []string
	for i, a := range sp.Shards {
		p := RecordPath(staging, i+1)
		data, err := storage.ReadAll(ctx, st, p, maxPlanFile)
		if errors.Is(err, storage.ErrNotFound) {
			missing = append(missing, strconv.Itoa(i+1))
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec ShardRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, snapshot.Corrupt(st.URI(p), -1, "shard record: %v", err)
		}
		if rec.Plan != sp.ID || rec.Shard != i+1 || rec.Of != len(sp.Shards) {
			return nil, fmt.Errorf("%w: %s is shard %d of %d of plan %s, not shard %d of %d of plan %s", ErrPlanMismatch, st.URI(p), rec.Shard, rec.Of, rec.Plan, i+1, len(sp.Shards), sp.ID)
		}
		if err := checkCoverage(a, &rec); err != nil {
			return nil, err
		}
		for _, s := range rec.Subtasks {
			for _, f := range s.Files {
				if !storageRelative(f.Path) {
					return nil, snapshot.Corrupt(st.URI(p), -1, "shard %d records file %q outside the staging area", i+1, f.Path)
				}
			}
		}
		records = append(records, &rec)
	}
	if len(missing) > 0 {
		s := "s"
		if len(missing) == 1 {
			s = ""
		}
		return nil, fmt.Errorf("%w: shard%s %s of %d %s not finished (no record in %s); run %s, then commit again",
			ErrShardsIncomplete, s, strings.Join(missing, ", "), len(sp.Shards), map[bool]string{true: "has", false: "have"}[len(missing) == 1],
			st.URI(path.Join(staging, stagingShards)), map[bool]string{true: "it", false: "them"}[len(missing) == 1])
	}
	return records, nil
}

// storageRelative reports whether p is a plain relative path below the
// staging area's data directory.
func storageRelative(p string) bool {
	return strings.HasPrefix(p, stagingData+"/") && path.Clean(p) == p && !strings.Contains(p, "..")
}

// destPlacement is how the staged snapshot gets to the destination.
type destPlacement struct {
	st      storage.Storage
	dst     string
	replace bool // a snapshot is there: swap (Run's forced replace)
	empty   bool // an empty directory is there: remove it first
}

// placement looks at the destination as Create does and says how the
// staged snapshot goes there, refusing what Create refuses.
func placement(ctx context.Context, reg *snapshot.Registry, st storage.Storage, dst string, sp *ShardPlan) (*destPlacement, error) {
	pl := &destPlacement{st: st, dst: dst}
	info, err := st.Stat(ctx, dst)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return pl, nil
	case err != nil:
		return nil, err
	case info.Special:
		return nil, fmt.Errorf("%w: %q is %w", ErrBadDestination, sp.Destination, storage.ErrNotRegular)
	}
	if info.IsDir {
		if err := removeDeadWrite(ctx, reg, st, dst, sp.Destination); err != nil {
			return nil, err
		}
		if _, err := st.Stat(ctx, dst); errors.Is(err, storage.ErrNotFound) {
			return pl, nil
		}
		if err := removeLeftovers(ctx, st, dst); err != nil {
			return nil, err
		}
	}
	_, _, _, detectErr := reg.Detect(ctx, sp.Destination)
	if detectErr == nil && info.IsDir {
		if meta, err := st.Stat(ctx, path.Join(dst, "_metadata")); err != nil || meta.IsDir {
			return nil, fmt.Errorf("%w: %q is a job directory of checkpoints; write to a new chk-<N> or savepoint directory", ErrBadDestination, sp.Destination)
		}
	}
	switch {
	case detectErr == nil && !sp.Force:
		return nil, fmt.Errorf("%w: %q already holds a snapshot (plan with --force to replace it)", storage.ErrExist, sp.Destination)
	case detectErr == nil, sp.Force && errors.Is(detectErr, snapshot.ErrCorrupt):
		pl.replace = true
		return pl, nil
	case info.IsDir:
		entries, err := st.List(ctx, dst)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			return nil, fmt.Errorf("%w: %q is a directory that holds no snapshot but %s; write to a new or empty directory", ErrBadDestination, sp.Destination, someNames(entries))
		}
		pl.empty = true
		return pl, nil
	}
	return nil, fmt.Errorf("%w: %q already holds a file that is not a readable snapshot (plan with --force to replace it)", storage.ErrExist, sp.Destination)
}

// put moves the committed snapshot at staged to the destination.
func (pl *destPlacement) put(ctx context.Context, staged string) error {
	switch {
	case pl.replace:
		d := &destination{st: pl.st, path: pl.dst, staged: staged}
		return d.swap(ctx)
	case pl.empty:
		if err := pl.st.Remove(ctx, pl.dst); err != nil {
			return err
		}
	}
	if dir := path.Dir(pl.dst); dir != pl.dst {
		if err := pl.st.MkdirAll(ctx, dir); err != nil {
			return err
		}
	}
	return pl.st.Rename(ctx, staged, pl.dst)
}
