package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// The staging area of a plan (ShardPlan.Staging) holds:
//
//	data/<base>             the snapshot being written: every shard's subtask
//	                        files; the commit adds the metadata and moves it to
//	                        the destination
//	shards/shard-NNNN.json  what shard NNNN wrote (ShardRecord), written last
//	                        and atomically by the shard; a retry replaces it
//	logs/                   the shards' logs
//	plan.json               the plan, written when it was planned
//	                        (OpenStaging): while it is there the plan is
//	                        open, and shards and the commit may run
//	COMMITTED               written by the commit before it moves the
//	                        snapshot to the destination
const (
	stagingData   = "data"
	stagingShards = "shards"
	stagingLogs   = "logs"
	// StagingPlan is the plan file's name inside the staging area.
	StagingPlan = "plan.json"
	// StagingCommitted, in a staging area, marks its plan committed: the
	// snapshot is, or is being, moved to the destination. It holds the
	// plan's id, and the commit's cleanup removes it last.
	StagingCommitted = "COMMITTED"
)

// OpenStaging seals sp and opens its staging area: it creates it and
// writes the plan there (StagingPlan), exclusively. Shards and the commit
// run only while that file is there; abort removes it first.
func OpenStaging(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan) error {
	if err := sp.Seal(); err != nil {
		return err
	}
	st, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return err
	}
	if err := st.MkdirAll(ctx, staging); err != nil {
		return err
	}
	return writeNew(ctx, st, path.Join(staging, StagingPlan), append(data, '\n'), nil)
}

// CheckPlanOpen refuses a plan whose staging area holds no plan, or the
// mark of its commit (ErrPlanClosed: committed or aborted), or holds
// another plan than sp (ErrPlanMismatch): shards run only while it does
// not.
func CheckPlanOpen(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan) error {
	st, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return err
	}
	switch _, err := st.Stat(ctx, path.Join(staging, StagingCommitted)); {
	case err == nil:
		return fmt.Errorf("%w: plan %s is committed; a shard has nothing left to write", ErrPlanClosed, sp.ID)
	case !errors.Is(err, storage.ErrNotFound):
		return err
	}
	p := path.Join(staging, StagingPlan)
	data, err := storage.ReadAll(ctx, st, p, maxPlanFile)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: plan %s: its staging area %s holds no plan (committed or aborted); plan again", ErrPlanClosed, sp.ID, st.URI(staging))
	}
	if err != nil {
		return err
	}
	staged, err := parseShardPlan(st.URI(p), data)
	if err != nil {
		return err
	}
	if staged.ID != sp.ID || staged.Digest != sp.Digest {
		return fmt.Errorf("%w: %s is plan %s (%s), not the plan given (%s %s)", ErrPlanMismatch, st.URI(p), staged.ID, staged.Digest, sp.ID, sp.Digest)
	}
	return nil
}

// ShardRecord is what one shard wrote, as it records it in the staging
// area once every file it wrote is in place.
type ShardRecord struct {
	SchemaVersion int    `json:"schema_version"`
	Plan          string `json:"plan"`
	Shard         int    `json:"shard"`
	Of            int    `json:"of"`
	// Attempt tells apart two runs of one shard (a retry, a duplicate):
	// each writes files of its own; the last to record wins.
	Attempt  string         `json:"attempt"`
	Host     string         `json:"host"`
	Subtasks []StagedRecord `json:"subtasks"`
}

// StagedRecord is one subtask a shard wrote: the format's
// snapshot.StagedSubtask, its file paths relative to the staging area,
// and the plan operator it belongs to.
type StagedRecord struct {
	PlanOperator int `json:"plan_operator"`
	snapshot.StagedSubtask
}

// ShardOptions tune RunShard.
type ShardOptions struct {
	// TempDir and MemoryLimit: see ExecuteOptions.
	TempDir     string
	MemoryLimit int64
	// Progress: see ExecuteOptions.
	Progress func(bytes int64)
}

// RunShard writes shard's part (1..len(sp.Shards)) of sp into the
// staging area and records it there. It refuses a plan that is not open
// (OpenStaging) or is committed (ErrPlanClosed), a source whose metadata
// changed since the plan, and a plan its source does not give (see
// rebuild). On
// failure it removes what it wrote; a shard killed half way leaves files
// no record lists, which the commit removes. Running a shard again, or
// twice at once, is safe: each run writes files of its own, and the
// record of the last one to finish is the shard's.
func RunShard(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, shard int, opts ShardOptions) (*ShardRecord, error) {
	if shard < 1 || shard > len(sp.Shards) {
		return nil, fmt.Errorf("%w: shard %d of a plan of %d shards", ErrPlanMismatch, shard, len(sp.Shards))
	}
	if err := CheckPlanOpen(ctx, reg, sp); err != nil {
		return nil, err
	}
	r, plan, f, err := openPlanned(ctx, reg, sp, opts.TempDir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	st, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return nil, err
	}
	_, dst, err := reg.Storage.Resolve(ctx, sp.Destination)
	if err != nil {
		return nil, err
	}
	data := path.Join(staging, stagingData, path.Base(dst))
	if err := st.MkdirAll(ctx, path.Dir(data)); err != nil {
		return nil, err
	}
	w, err := f.Create(ctx, st, data, snapshot.WriteOptions{Staging: true, ReaderVersion: sp.ReaderVersion})
	if err != nil {
		return nil, err
	}
	stager, ok := w.(snapshot.Stager)
	if !ok {
		return nil, errors.Join(fmt.Errorf("%w: format %q cannot be written in shards", snapshot.ErrUnsupportedVersion, f.Name), w.Abort(context.WithoutCancel(ctx)))
	}
	subs := make([][]int, len(plan.Operators))
	for i := range subs {
		subs[i] = []int{}
	}
	for _, ref := range sp.Shards[shard-1].Subtasks {
		subs[ref.Operator] = append(subs[ref.Operator], ref.Subtask)
	}
	for i := range subs {
		slices.Sort(subs[i])
	}
	eo := ExecuteOptions{TempDir: opts.TempDir, MemoryLimit: opts.MemoryLimit, Progress: opts.Progress,
		EntryByEntry: sp.EntryByEntry, Codecs: reg.Codecs, Subtasks: subs}
	if err := Execute(ctx, r, w, plan, eo); err != nil {
		return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
	}
	staged, err := stager.Staged(ctx)
	if err != nil {
		return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
	}
	host, _ := os.Hostname()
	rec := &ShardRecord{SchemaVersion: ShardPlanVersion, Plan: sp.ID, Shard: shard, Of: len(sp.Shards), Attempt: attemptOf(staged), Host: host}
	byKey := map[string]int{}
	for i := range plan.Operators {
		if op := plan.output(i); op != nil {
			byKey[opKey(op.ID, op.Label())] = i
		}
	}
	for _, s := range staged {
		i, ok := byKey[opKey(s.OperatorID, s.Operator)]
		if !ok {
			return nil, fmt.Errorf("shard %d: the writer staged operator %q, which the plan does not write", shard, s.Operator)
		}
		for k := range s.Files {
			rel, ok := strings.CutPrefix(s.Files[k].Path, staging+"/")
			if !ok {
				return nil, fmt.Errorf("shard %d: the writer staged %s, outside the staging area %s", shard, st.URI(s.Files[k].Path), st.URI(staging))
			}
			s.Files[k].Path = rel
		}
		rec.Subtasks = append(rec.Subtasks, StagedRecord{PlanOperator: i, StagedSubtask: s})
	}
	if err := checkCoverage(sp.Shards[shard-1], rec); err != nil {
		return nil, err
	}
	// Committed or aborted while this shard ran: its record would make a
	// staging area again.
	if err := CheckPlanOpen(ctx, reg, sp); err != nil {
		return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
	}
	body, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := st.MkdirAll(ctx, path.Join(staging, stagingShards)); err != nil {
		return nil, err
	}
	if err := storage.WriteFile(ctx, st, RecordPath(staging, shard), body); err != nil {
		return nil, err
	}
	return rec, nil
}

// attemptOf names a shard's run by its writer's files (their tokens
// differ from run to run); only for people reading records.
func attemptOf(staged []snapshot.StagedSubtask) string {
	for _, s := range staged {
		for _, f := range s.Files {
			return path.Base(f.Path)
		}
	}
	return ""
}

func opKey(id, label string) string {
	if id != "" {
		return "id:" + id
	}
	return "label:" + label
}

// RecordPath is where shard records what it wrote in the staging area.
func RecordPath(staging string, shard int) string {
	return path.Join(staging, stagingShards, fmt.Sprintf("shard-%04d.json", shard))
}

// LogPath is where the log of one run of a shard goes in the staging
// area: one file per run (attempt names the run).
func LogPath(staging string, shard int, attempt string) string {
	return strings.TrimRight(staging, "/") + "/" + stagingLogs + "/" + fmt.Sprintf("shard-%04d.%s.log", shard, attempt)
}

// checkCoverage refuses a record that does not hold exactly the subtasks
// its shard was assigned.
func checkCoverage(a ShardAssignment, rec *ShardRecord) error {
	want := map[[2]int]bool{}
	for _, ref := range a.Subtasks {
		want[[2]int{ref.Operator, ref.Subtask}] = true
	}
	got := map[[2]int]bool{}
	for _, s := range rec.Subtasks {
		k := [2]int{s.PlanOperator, s.Index}
		if !want[k] || got[k] {
			return fmt.Errorf("%w: shard %d recorded operator %q subtask %d, which the plan does not give it (or twice)", ErrPlanMismatch, a.Shard, s.Operator, s.Index)
		}
		got[k] = true
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: shard %d recorded %d of its %d subtasks", ErrPlanMismatch, a.Shard, len(got), len(want))
	}
	return nil
}

// openPlanned opens sp's source, checks it is the one planned, and
// rebuilds the copy's plan from it.
func openPlanned(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, tempDir string) (snapshot.Reader, *Plan, *snapshot.Format, error) {
	opts := snapshot.OpenOptions{PathMap: sp.PathMap, TempDir: tempDir}
	if sp.KeySerializersFrom != "" {
		opts.Schemas = &snapshot.Schemas{KeySerializersFrom: sp.KeySerializersFrom}
	}
	r, err := reg.Open(ctx, sp.Source, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, f, err := rebuild(ctx, reg, sp, &r)
	if err != nil {
		return nil, nil, nil, errors.Join(err, r.Close())
	}
	return r, plan, f, nil
}
