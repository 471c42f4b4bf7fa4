package migrate

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// ShardPlanVersion is the version of the plan file (ShardPlan).
const ShardPlanVersion = 1

// ShardPlanKind names what a plan file is, in the file itself.
const ShardPlanKind = "stateutil-shard-plan"

// ErrPlanMismatch reports a plan file that does not fit what it is used
// with: a source that changed since it was planned, another plan's
// staging, a shard count that is not the plan's.
var ErrPlanMismatch = errors.New("plan mismatch")

// ErrShardsIncomplete reports a commit while shards have not finished;
// the message names them.
var ErrShardsIncomplete = errors.New("shards incomplete")

// ShardPlan is a plan file: everything a shard needs to write its part
// of a copy, and the commit to finish it, as data. Shards re-read the
// source's metadata (never its state) and check it against
// SourceFingerprint; the redistribution itself (Plan) is taken from the
// file, not computed again, so a max-parallelism change is not re-hashed
// by every shard.
type ShardPlan struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
	// ID names this plan: its staging area, its shards' records.
	ID           string `json:"id"`
	Source       string `json:"source"`
	SourceFormat string `json:"source_format"`
	// SourceFingerprint is the SHA-256 of the source's metadata as read
	// (the snapshot model, msgpack-encoded with sorted keys).
	SourceFingerprint string `json:"source_fingerprint"`
	Format            string `json:"format"`
	Destination       string `json:"destination"`
	Force             bool   `json:"force"`
	// Staging is where shards write and record what they wrote: a
	// storage.TempPrefix neighbour of Destination on the same storage.
	Staging string `json:"staging"`
	// Change and Edits are what was asked for; Plan is what they came to.
	Change         PlannedChange     `json:"change"`
	Edits          []PlannedEdit     `json:"edits"`
	PathMap        map[string]string `json:"path_map,omitempty"`
	SkipUnreadable bool              `json:"skip_unreadable,omitempty"`
	EntryByEntry   bool              `json:"entry_by_entry,omitempty"`
	// ReaderVersion and DropExpired: see Request.
	ReaderVersion string         `json:"reader_version,omitempty"`
	DropExpired   *PlannedExpiry `json:"drop_expired,omitempty"`
	// Shards lists, per shard (1..N), the new subtasks it writes.
	Shards []ShardAssignment `json:"shards"`
	// Plan is the copy's plan: per operator its new subtasks, their key
	// groups, the old subtasks that feed each (sources) and where
	// operator-state elements go.
	Plan *Plan `json:"plan"`
}

// PlannedChange is redistribute.Request as data.
type PlannedChange struct {
	Parallelism    int            `json:"parallelism,omitempty"`
	Operators      map[string]int `json:"operators,omitempty"`
	MaxParallelism int            `json:"max_parallelism,omitempty"`
}

// PlannedExpiry is a snapshot.Expiry as data: the time, and the time to
// live of states whose snapshot records none, in nanoseconds.
type PlannedExpiry struct {
	At  time.Time                `json:"at"`
	TTL map[string]time.Duration `json:"ttl_ns,omitempty"`
}

// PlannedEdit is an Edit as data.
type PlannedEdit struct {
	Operator string `json:"operator"`
	Remove   bool   `json:"remove,omitempty"`
	UID      string `json:"uid,omitempty"`
	ID       string `json:"id,omitempty"`
}

// ShardAssignment is one shard's part of a plan.
type ShardAssignment struct {
	Shard    int          `json:"shard"`
	Bytes    int64        `json:"bytes"`
	Subtasks []SubtaskRef `json:"subtasks"`
}

// SubtaskRef names one new subtask of a plan.
type SubtaskRef struct {
	// Operator indexes Plan.Operators; Label is the operator's label.
	Operator int    `json:"operator"`
	Label    string `json:"label"`
	Subtask  int    `json:"subtask"`
	Bytes    int64  `json:"bytes"`
}

// ShardRequest is a copy to plan for shards.
type ShardRequest struct {
	Request
	// Shards is the number of shards, at least 1.
	Shards int
}

// PlanShards plans req for req.Shards shards: it opens the source (its
// metadata, and its state only where NewPlan must), plans as Run does,
// checks the destination could be written, and deals the new subtasks
// out to the shards, largest first, each to the shard with the fewest
// bytes so far. It writes nothing.
func PlanShards(ctx context.Context, reg *snapshot.Registry, req ShardRequest) (*ShardPlan, error) {
	if req.Shards < 1 {
		return nil, fmt.Errorf("%w: %d shards; at least 1", ErrPlanMismatch, req.Shards)
	}
	if err := CheckLocations(req.Source, req.Destination); err != nil {
		return nil, err
	}
	r, err := reg.Open(ctx, req.Source, snapshot.OpenOptions{PathMap: req.PathMap, TempDir: req.TempDir})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	from := r.Snapshot().Format
	fp, err := Fingerprint(r.Snapshot())
	if err != nil {
		return nil, err
	}
	if req.SkipUnreadable {
		r, _ = snapshot.WithoutUnreadable(r)
	} else if err := snapshot.CheckReadable(r.Snapshot()); err != nil {
		return nil, fmt.Errorf("%s: %w", req.Source, err)
	}
	if req.DropExpired != nil {
		if r, err = snapshot.WithoutExpired(r, *req.DropExpired); err != nil {
			return nil, fmt.Errorf("%s: %w", req.Source, err)
		}
	}
	f, err := reg.Writable(cmpOr(req.Format, from))
	if err != nil {
		return nil, err
	}
	change := req.Change
	change.Codecs = reg.Codecs
	// A max-parallelism change is planned from the key groups' figures:
	// hashing every key here would read the whole source on this machine
	// before any shard starts. The shards hash what they write.
	change.EstimateRehash = true
	plan, err := NewPlan(ctx, r, f, change, req.Edits)
	if err != nil {
		return nil, err
	}
	plan.Source, plan.Destination = req.Source, req.Destination
	if err := plan.checkWrite(f, snapshot.WriteOptions{Force: req.Force, ReaderVersion: req.ReaderVersion}); err != nil {
		return nil, err
	}
	if err := checkWritable(ctx, reg, req.Destination, req.Force); err != nil {
		return nil, err
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	sp := &ShardPlan{
		SchemaVersion: ShardPlanVersion, Kind: ShardPlanKind, ID: hex.EncodeToString(id[:]),
		Source: req.Source, SourceFormat: from, SourceFingerprint: fp, Format: f.Name,
		Destination: req.Destination, Force: req.Force,
		Change:  PlannedChange{Parallelism: req.Change.Parallelism, Operators: req.Change.Operators, MaxParallelism: req.Change.MaxParallelism},
		Edits:   []PlannedEdit{},
		PathMap: req.PathMap, SkipUnreadable: req.SkipUnreadable, EntryByEntry: req.EntryByEntry,
		ReaderVersion: req.ReaderVersion,
		Plan:          plan,
	}
	if x := req.DropExpired; x != nil {
		sp.DropExpired = &PlannedExpiry{At: x.At, TTL: x.TTL}
	}
	for _, e := range req.Edits {
		sp.Edits = append(sp.Edits, PlannedEdit(e))
	}
	sp.Staging = stagingFor(req.Destination, sp.ID)
	sp.Shards = assign(plan, req.Shards)
	return sp, nil
}

// checkWritable refuses, before any shard runs, a destination the commit
// would refuse: a snapshot there without force, a directory of other
// things.
func checkWritable(ctx context.Context, reg *snapshot.Registry, dst string, force bool) error {
	st, p, err := reg.Storage.Resolve(ctx, dst)
	if err != nil {
		return err
	}
	info, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return err
	case info.Special:
		return fmt.Errorf("%w: %q is %w", ErrBadDestination, dst, storage.ErrNotRegular)
	}
	old, _, _, detectErr := reg.Detect(ctx, dst)
	switch {
	case detectErr == nil && !force:
		return fmt.Errorf("%w: %q already holds a %s snapshot (--force replaces it)", storage.ErrExist, dst, old.Name)
	case detectErr == nil, force:
		return nil
	case info.IsDir:
		entries, err := st.List(ctx, p)
		if err != nil {
			return err
		}
		var names []storage.Info
		for _, e := range entries {
			if !strings.HasPrefix(e.Name, storage.TempPrefix) {
				names = append(names, e)
			}
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %q is a directory that holds no snapshot but %s; write to a new or empty directory", ErrBadDestination, dst, someNames(names))
		}
		return nil
	}
	return fmt.Errorf("%w: %q already holds a file that is not a readable snapshot (--force replaces it)", storage.ErrExist, dst)
}

// stagingFor is the staging area of plan id writing dst: a neighbour of
// dst named with storage.TempPrefix, so that it is never taken for a
// snapshot and is known for what it is.
func stagingFor(dst, id string) string {
	i := strings.LastIndex(strings.TrimRight(dst, "/"), "/")
	dir, base := "", strings.TrimRight(dst, "/")
	if i >= 0 {
		dir, base = base[:i+1], base[i+1:]
	}
	return dir + storage.TempPrefix + "shards-" + id + "-" + base
}

// assign deals plan's new subtasks out to n shards: largest first, each
// to the shard with the fewest bytes (then subtasks) so far; ties go to
// the lower index, so the same plan always gives the same shards.
func assign(plan *Plan, n int) []ShardAssignment {
	var all []SubtaskRef
	for i, op := range plan.Operators {
		if plan.output(i) == nil {
			continue
		}
		for _, sub := range op.Subtasks {
			all = append(all, SubtaskRef{Operator: i, Label: op.Label(), Subtask: sub.Index, Bytes: sub.Bytes()})
		}
	}
	slices.SortStableFunc(all, func(a, b SubtaskRef) int { return cmp.Compare(b.Bytes, a.Bytes) })
	out := make([]ShardAssignment, n)
	for i := range out {
		out[i] = ShardAssignment{Shard: i + 1, Subtasks: []SubtaskRef{}}
	}
	for _, ref := range all {
		best := 0
		for i := range out {
			if out[i].Bytes < out[best].Bytes || (out[i].Bytes == out[best].Bytes && len(out[i].Subtasks) < len(out[best].Subtasks)) {
				best = i
			}
		}
		out[best].Bytes += ref.Bytes
		out[best].Subtasks = append(out[best].Subtasks, ref)
	}
	for i := range out {
		slices.SortFunc(out[i].Subtasks, func(a, b SubtaskRef) int {
			return cmp.Or(cmp.Compare(a.Operator, b.Operator), cmp.Compare(a.Subtask, b.Subtask))
		})
	}
	return out
}

// Fingerprint is the SHA-256 of a snapshot's metadata as a reader built
// it: what a shard compares to refuse a source that changed since it was
// planned.
func Fingerprint(s *snapshot.Snapshot) (string, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(s); err != nil {
		return "", fmt.Errorf("fingerprinting the source's metadata: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// maxPlanFile bounds the plan file a shard reads.
const maxPlanFile = 1 << 30

// WriteShardPlan writes sp to location (a path or URI) atomically, as
// indented JSON.
func WriteShardPlan(ctx context.Context, reg *snapshot.Registry, location string, sp *ShardPlan) error {
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return err
	}
	st, p, err := reg.Storage.Resolve(ctx, location)
	if err != nil {
		return err
	}
	if dir := path.Dir(p); dir != p {
		if err := st.MkdirAll(ctx, dir); err != nil {
			return err
		}
	}
	return storage.WriteFile(ctx, st, p, append(data, '\n'))
}

// ReadShardPlan reads a plan file written by WriteShardPlan.
func ReadShardPlan(ctx context.Context, reg *snapshot.Registry, location string) (*ShardPlan, error) {
	st, p, err := reg.Storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	data, err := storage.ReadAll(ctx, st, p, maxPlanFile)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: plan file %q", snapshot.ErrNotFound, location)
		}
		return nil, err
	}
	var sp ShardPlan
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&sp); err != nil {
		return nil, snapshot.Corrupt(location, dec.InputOffset(), "not a plan file: %v", err)
	}
	switch {
	case sp.Kind != ShardPlanKind:
		return nil, snapshot.Corrupt(location, -1, "not a plan file (kind %q, want %q)", sp.Kind, ShardPlanKind)
	case sp.SchemaVersion != ShardPlanVersion:
		return nil, fmt.Errorf("%w: plan file %q has schema version %d; this stateutil reads %d", snapshot.ErrUnsupportedVersion, location, sp.SchemaVersion, ShardPlanVersion)
	case sp.Plan == nil || sp.Plan.Plan == nil || len(sp.Shards) == 0 || sp.ID == "" || sp.Staging == "" || sp.Destination == "":
		return nil, snapshot.Corrupt(location, -1, "plan file without a plan, shards, id, staging or destination")
	}
	if stagingFor(sp.Destination, sp.ID) != sp.Staging {
		return nil, snapshot.Corrupt(location, -1, "staging %q is not the staging of destination %q", sp.Staging, sp.Destination)
	}
	for i, a := range sp.Shards {
		if a.Shard != i+1 {
			return nil, snapshot.Corrupt(location, -1, "shard %d listed as shard %d", i+1, a.Shard)
		}
		for _, ref := range a.Subtasks {
			if ref.Operator < 0 || ref.Operator >= len(sp.Plan.Operators) || ref.Subtask < 0 || ref.Subtask >= sp.Plan.Operators[ref.Operator].New.Parallelism {
				return nil, snapshot.Corrupt(location, -1, "shard %d: no new subtask %d of operator %d", a.Shard, ref.Subtask, ref.Operator)
			}
		}
	}
	return &sp, nil
}

// edits is the plan's edits as Edits.
func (sp *ShardPlan) edits() []Edit {
	out := make([]Edit, len(sp.Edits))
	for i, e := range sp.Edits {
		out[i] = Edit(e)
	}
	return out
}

// change is the plan's requested change.
func (sp *ShardPlan) change(reg *snapshot.Registry) redistribute.Request {
	return redistribute.Request{Parallelism: sp.Change.Parallelism, Operators: sp.Change.Operators, MaxParallelism: sp.Change.MaxParallelism, Codecs: reg.Codecs}
}
