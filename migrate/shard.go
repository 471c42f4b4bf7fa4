package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
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
//	plan.json               the plan, when stateutil put it there (--yarn)
const (
	stagingData   = "data"
	stagingShards = "shards"
	stagingLogs   = "logs"
	// StagingPlan is the plan file's name inside the staging area.
	StagingPlan = "plan.json"
)

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
// staging area and records it there. It refuses a source whose metadata
// changed since the plan, and a plan its source no longer gives. On
// failure it removes what it wrote; a shard killed half way leaves files
// no record lists, which the commit removes. Running a shard again, or
// twice at once, is safe: each run writes files of its own, and the
// record of the last one to finish is the shard's.
func RunShard(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, shard int, opts ShardOptions) (*ShardRecord, error) {
	if shard < 1 || shard > len(sp.Shards) {
		return nil, fmt.Errorf("%w: shard %d of a plan of %d shards", ErrPlanMismatch, shard, len(sp.Shards))
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
// rebuilds the copy's plan from the file.
func openPlanned(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, tempDir string) (snapshot.Reader, *Plan, *snapshot.Format, error) {
	r, err := reg.Open(ctx, sp.Source, snapshot.OpenOptions{PathMap: sp.PathMap, TempDir: tempDir})
	if err != nil {
		return nil, nil, nil, err
	}
	plan, f, err := rebuild(ctx, reg, sp, &r)
	if err != nil {
		return nil, nil, nil, errors.Join(err, r.Close())
	}
	return r, plan, f, nil
}

// rebuild checks the source *r against sp and returns sp's plan for it;
// *r is replaced by its readable part when the plan skips unreadable state.
func rebuild(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, r *snapshot.Reader) (*Plan, *snapshot.Format, error) {
	fp, err := Fingerprint((*r).Snapshot())
	if err != nil {
		return nil, nil, err
	}
	if fp != sp.SourceFingerprint {
		return nil, nil, fmt.Errorf("%w: the source %s changed since it was planned (metadata %s, the plan has %s); plan again", ErrPlanMismatch, sp.Source, fp, sp.SourceFingerprint)
	}
	if sp.SkipUnreadable {
		*r, _ = snapshot.WithoutUnreadable(*r)
	} else if err := snapshot.CheckReadable((*r).Snapshot()); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sp.Source, err)
	}
	if x := sp.DropExpired; x != nil {
		if *r, err = snapshot.WithoutExpired(*r, snapshot.Expiry{At: x.At, TTL: x.TTL}); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sp.Source, err)
		}
	}
	f, err := reg.Writable(sp.Format)
	if err != nil {
		return nil, nil, err
	}
	s := (*r).Snapshot()
	rp := sp.Plan.Plan
	targets, err := redistribute.Targets(s, sp.change(reg))
	if err != nil {
		return nil, nil, err
	}
	if len(rp.Operators) != len(s.Operators) {
		return nil, nil, fmt.Errorf("%w: the plan has %d operators, the source %d", ErrPlanMismatch, len(rp.Operators), len(s.Operators))
	}
	for i, op := range s.Operators {
		p := &rp.Operators[i]
		old := redistribute.Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
		if p.ID != op.ID || p.UID != op.UID || p.Old != old || p.New != targets[i] || len(p.Subtasks) != p.New.Parallelism ||
			len(p.OperatorStates) != len(op.OperatorStates) {
			return nil, nil, fmt.Errorf("%w: plan operator %d (%q) does not fit the source's %q", ErrPlanMismatch, i, p.Label(), op.Label())
		}
		for j, sub := range p.Subtasks {
			if sub.Index != j || sub.KeyGroups != keygroup.RangeOf(p.New.MaxParallelism, p.New.Parallelism, j) {
				return nil, nil, fmt.Errorf("%w: plan operator %q subtask %d has key groups %v", ErrPlanMismatch, p.Label(), j, sub.KeyGroups)
			}
		}
		for k, osp := range p.OperatorStates {
			if osp.Name != op.OperatorStates[k].Name || len(osp.Assignment) != p.New.Parallelism {
				return nil, nil, fmt.Errorf("%w: plan operator %q: operator state %q does not fit the source", ErrPlanMismatch, p.Label(), osp.Name)
			}
		}
	}
	plan, err := planFrom(s, rp, f, sp.edits())
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(plan.Removed, sp.Plan.Removed) || !maps.Equal(plan.Renamed, sp.Plan.Renamed) {
		return nil, nil, fmt.Errorf("%w: the plan's edits give other operators than the file lists", ErrPlanMismatch)
	}
	plan.Source, plan.Destination = sp.Source, sp.Destination
	return plan, f, nil
}
