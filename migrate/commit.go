package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// BeforePlace, if set, is called once the metadata is written (and
	// verified), before the plan is marked committed and the snapshot
	// moves to the destination: where tests kill a commit.
	BeforePlace func()
}

// CommitResult is what a commit did.
type CommitResult struct {
	*Result
	// Totals sum what the shards wrote, as their records count it; nil
	// when an earlier commit had written it (AlreadyCommitted).
	Totals *Totals `json:"totals,omitempty"`
	// AlreadyCommitted is set when an earlier commit of the plan had put
	// the snapshot in place, or begun to (this one finished the move and
	// the cleanup).
	AlreadyCommitted bool `json:"already_committed"`
	// StagingGone is set when it found no staging area at all, only a
	// snapshot at the destination: committed, or for a plan that
	// replaces a snapshot, possibly aborted.
	StagingGone bool `json:"staging_gone,omitempty"`
}

// CommitShards finishes sp, as the staging protocol says: it claims the
// destination and requires the plan open (staging/plan.json, the same
// plan); it checks that every shard recorded its part (naming those that
// did not), that every file a record lists is there with the size and
// CRC32C recorded, and that the figures the shards wrote add up to the
// source's; it removes what killed or superseded shard runs left, writes
// the format's metadata from the records and, with opts.Verify, compares
// the staged snapshot with the source. Only then does it mark the plan
// committed (staging/COMMITTED), move the snapshot to the destination (a
// forced write replaces what is there) and remove the staging area,
// COMMITTED last. Killed at any point, it leaves nothing at the
// destination that a reader accepts but the whole snapshot; run again, it
// finishes the job, a half-done move included.
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
	res := &CommitResult{Result: &Result{Plan: plan, From: sp.SourceFormat, Dropped: []snapshot.UnreadablePart{}}}
	data := path.Join(staging, stagingData, path.Base(dst))
	if dst, err = storage.Canonical(st, dst); err != nil {
		return nil, err
	}
	claim, err := st.Claim(ctx, dst)
	if err != nil {
		return nil, err
	}
	defer claim.Release()
	committed, err := openedOrCommitted(ctx, reg, st, staging, sp)
	if err != nil {
		return nil, err
	}
	if _, err := st.Stat(ctx, staging); errors.Is(err, storage.ErrNotFound) {
		res.StagingGone = true
	}
	if committed {
		// An earlier commit got as far as COMMITTED: finish its move and
		// its cleanup.
		if err := publishJournaled(ctx, reg, st, dst, data, sp); err != nil {
			return nil, err
		}
		if err := removeStaging(ctx, st, staging); err != nil {
			return nil, err
		}
		return alreadyCommitted(ctx, reg, r, plan, opts, res)
	}
	records, err := readRecords(ctx, st, staging, sp)
	if err != nil {
		return nil, err
	}
	keep, err := checkFiles(ctx, st, staging, records)
	if err != nil {
		return nil, err
	}
	if err := checkCounts(r.Snapshot(), plan, sp, records); err != nil {
		return nil, err
	}
	if _, _, err := lookAt(ctx, reg, st, dst, sp.Destination, sp.Force); err != nil {
		return nil, err
	}
	// What killed or superseded runs wrote, and the metadata of a commit
	// killed before it moved the snapshot: none of it is recorded.
	if err := removeUnkept(ctx, st, path.Join(staging, stagingData), keep); err != nil {
		return nil, err
	}
	if err := checkSums(ctx, st, staging, records); err != nil {
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
	t := writtenTotals(plan, records)
	res.Totals = &t
	if opts.Verify {
		// The staged snapshot, before anything is at the destination.
		staged := *plan
		rp := *plan.Plan
		rp.Destination = st.URI(data)
		staged.Plan = &rp
		if err := Verify(ctx, reg, r, &staged); err != nil {
			return nil, fmt.Errorf("%w; nothing was written to %s, the staging area %s stays for inspection (run stateutil abort to remove it)", err, sp.Destination, st.URI(staging))
		}
		res.Verified = true
	}
	if opts.BeforePlace != nil {
		opts.BeforePlace()
	}
	if err := storage.WriteFile(ctx, st, path.Join(staging, StagingCommitted), []byte(sp.ID+"\n")); err != nil {
		return nil, err
	}
	if err := publishJournaled(ctx, reg, st, dst, data, sp); err != nil {
		return nil, err
	}
	if err := removeStaging(ctx, st, staging); err != nil {
		return nil, fmt.Errorf("committed %s; removing the staging area %s: %w (commit again to finish)", sp.Destination, st.URI(staging), err)
	}
	return res, nil
}

// openedOrCommitted checks sp's staging area before a commit: whether an
// earlier commit marked it committed, else that the plan is open there.
// A staging area gone with a snapshot at the destination counts as
// committed; one without plan.json, or gone with nothing at the
// destination, is a closed plan.
func openedOrCommitted(ctx context.Context, reg *snapshot.Registry, st storage.Storage, staging string, sp *ShardPlan) (bool, error) {
	if _, err := st.Stat(ctx, staging); errors.Is(err, storage.ErrNotFound) {
		if _, _, _, err := reg.Detect(ctx, sp.Destination); err == nil {
			return true, nil
		}
		return false, fmt.Errorf("%w: plan %s is closed: its staging area %s is gone (committed or aborted) and %s holds no snapshot; plan again", ErrPlanClosed, sp.ID, st.URI(staging), sp.Destination)
	} else if err != nil {
		return false, err
	}
	mark := path.Join(staging, StagingCommitted)
	id, err := storage.ReadAll(ctx, st, mark, 1<<10)
	switch {
	case err == nil && strings.TrimSpace(string(id)) == sp.ID:
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%w: %s marks plan %q committed, not plan %s", ErrPlanMismatch, st.URI(mark), strings.TrimSpace(string(id)), sp.ID)
	case !errors.Is(err, storage.ErrNotFound):
		return false, err
	}
	p := path.Join(staging, StagingPlan)
	opened, err := ReadShardPlan(ctx, reg, st.URI(p))
	if errors.Is(err, snapshot.ErrNotFound) {
		return false, fmt.Errorf("%w: plan %s is closed: its staging area %s holds no plan (committed or aborted); plan again", ErrPlanClosed, sp.ID, st.URI(staging))
	}
	if err != nil {
		return false, err
	}
	a, errA := json.Marshal(opened)
	b, errB := json.Marshal(sp)
	if err := errors.Join(errA, errB); err != nil {
		return false, err
	}
	if !bytes.Equal(a, b) {
		return false, fmt.Errorf("%w: %s holds plan %s, another plan than the one given (%s); commit the plan file the shards ran", ErrPlanMismatch, st.URI(p), opened.ID, sp.ID)
	}
	return false, nil
}

// alreadyCommitted reports a plan an earlier commit had put in place.
func alreadyCommitted(ctx context.Context, reg *snapshot.Registry, r snapshot.Reader, plan *Plan, opts CommitOptions, res *CommitResult) (*CommitResult, error) {
	res.AlreadyCommitted = true
	if opts.Verify {
		if err := Verify(ctx, reg, r, plan); err != nil {
			return nil, err
		}
		res.Verified = true
	}
	return res, nil
}

// removeStaging removes a committed plan's staging area: plan.json first
// (no shard or commit starts on it), COMMITTED last.
func removeStaging(ctx context.Context, st storage.Storage, staging string) error {
	entries, err := st.List(ctx, staging)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := st.Remove(ctx, path.Join(staging, StagingPlan)); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	for _, e := range entries {
		if e.Name != StagingCommitted && e.Name != StagingPlan {
			if err := st.RemoveAll(ctx, e.Path); err != nil {
				return err
			}
		}
	}
	if err := st.Remove(ctx, path.Join(staging, StagingCommitted)); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return st.RemoveAll(ctx, staging)
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

// publishJournaled publishes (see publish) under a journal of its own,
// once what a killed writer of dst left is cleared: a commit killed while
// it moved the old snapshot aside leaves that move to be undone or
// finished first.
func publishJournaled(ctx context.Context, reg *snapshot.Registry, st storage.Storage, dst, data string, sp *ShardPlan) error {
	dead, err := readJournal(ctx, st, dst)
	if err != nil {
		return err
	}
	if dead != nil {
		if err := dead.settle(ctx, reg); err != nil {
			return err
		}
	}
	j, err := startJournal(ctx, st, dst)
	if err != nil {
		return err
	}
	if err := publish(ctx, reg, st, j, dst, data, sp); err != nil {
		return err
	}
	return j.leftovers().drop(ctx)
}

// commitPoint is the file whose presence makes the snapshot at p one: a
// directory's _metadata, else the file itself. A move writes it last and,
// on an object store, removes it from the old place first.
func commitPoint(ctx context.Context, st storage.Storage, p string) (string, error) {
	info, err := st.Stat(ctx, p)
	if err != nil {
		return "", err
	}
	if info.IsDir {
		return path.Join(p, "_metadata"), nil
	}
	return p, nil
}

// publish moves the committed snapshot at data to dst, replacing what is
// there as the plan allows, or finishes the move of a commit killed half
// way: on an object store a move copies file by file, so dst may hold
// part of the snapshot, which publish recognises (every file there is one
// of data's, or of the old snapshot moved aside) and moves again.
func publish(ctx context.Context, reg *snapshot.Registry, st storage.Storage, j *journal, dst, data string, sp *ShardPlan) error {
	point, err := commitPoint(ctx, st, data)
	if errors.Is(err, storage.ErrNotFound) {
		err = storage.ErrNotFound
	} else if err == nil {
		_, err = st.Stat(ctx, point)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// The move got its commit point across: the snapshot is in place.
		if _, _, _, err := reg.Detect(ctx, sp.Destination); err != nil {
			return fmt.Errorf("plan %s was committed, but %s holds no snapshot: %w", sp.ID, sp.Destination, err)
		}
		return nil
	case err != nil:
		return err
	}
	info, err := st.Stat(ctx, dst)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return err
	default:
		there, err := commitPoint(ctx, st, dst)
		if err != nil {
			return err
		}
		if same, err := sameFile(ctx, st, point, there); err != nil {
			return err
		} else if same {
			// Moved, but for the staged copy's removal.
			return nil
		}
		_, _, _, detectErr := reg.Detect(ctx, sp.Destination)
		switch {
		case detectErr == nil && !sp.Force:
			return fmt.Errorf("%w: %q already holds a snapshot (plan with --force to replace it)", storage.ErrExist, sp.Destination)
		case detectErr == nil:
			return swap(ctx, st, j, dst, data)
		case !info.IsDir:
			return fmt.Errorf("%w: %q already exists and is not a snapshot (%v); a commit replaces only a snapshot, with --force", ErrBadDestination, sp.Destination, detectErr)
		}
		if err := removePartial(ctx, st, dst, data); err != nil {
			return err
		}
	}
	if dir := path.Dir(dst); dir != dst {
		if err := st.MkdirAll(ctx, dir); err != nil {
			return err
		}
	}
	return st.Rename(ctx, data, dst)
}

// removePartial removes the directory dst, which holds no snapshot, if
// every file in it is, by its path relative to it, one of a directory of
// from (the snapshot being moved in, or the old one moved aside: what a
// move to dst or away from it leaves when an object store's copy file by
// file is cut short), and refuses otherwise: dst then holds another's
// files.
func removePartial(ctx context.Context, st storage.Storage, dst string, from ...string) error {
	ours := map[string]bool{}
	for _, dir := range from {
		files, err := relFiles(ctx, st, dir)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		maps.Copy(ours, files)
	}
	there, err := relFiles(ctx, st, dst)
	if err != nil {
		return err
	}
	for rel := range there {
		if !ours[rel] {
			return fmt.Errorf("%w: %q holds no snapshot but %q, which is not of the snapshot a cut-short move was moving there; move it away and write again", ErrBadDestination, st.URI(dst), rel)
		}
	}
	return st.RemoveAll(ctx, dst)
}

// relFiles lists the files below dir by their paths relative to it.
func relFiles(ctx context.Context, st storage.Storage, dir string) (map[string]bool, error) {
	out := map[string]bool{}
	var walk func(string) error
	walk = func(d string) error {
		entries, err := st.List(ctx, d)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir {
				if err := walk(e.Path); err != nil {
					return err
				}
				continue
			}
			out[strings.TrimPrefix(e.Path, dir+"/")] = true
		}
		return nil
	}
	return out, walk(dir)
}

// sameFile reports whether the files at a and b have the same size and
// CRC32C; b may be missing.
func sameFile(ctx context.Context, st storage.Storage, a, b string) (bool, error) {
	sa, ca, err := fileSum(ctx, st, a)
	if err != nil {
		return false, err
	}
	sb, cb, err := fileSum(ctx, st, b)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil && sa == sb && ca == cb, err
}
