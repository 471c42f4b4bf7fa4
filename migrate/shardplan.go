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
	"github.com/stateutil/stateutil/surgery"
)

// ShardPlanVersion is the version of the plan file (ShardPlan).
const ShardPlanVersion = 1

// ShardPlanKind names what a plan file is, in the file itself.
const ShardPlanKind = "stateutil-shard-plan"

// ErrPlanMismatch reports a plan file that does not fit what it is used
// with: a source that changed since it was planned, another plan's
// staging, a shard count that is not the plan's.
var ErrPlanMismatch = errors.New("plan mismatch")

// ErrPlanClosed reports a plan whose staging area was committed or aborted.
var ErrPlanClosed = errors.New("plan closed")

// ErrShardCount reports a number of shards a plan cannot have: fewer than
// one, or more than the new subtasks it writes.
var ErrShardCount = errors.New("number of shards")

// ErrShardsIncomplete reports a commit while shards have not finished;
// the message names them.
var ErrShardsIncomplete = errors.New("shards incomplete")

// ShardPlan is a plan file: everything a shard needs to write its part
// of a copy, and the commit to finish it, as data: what was asked for
// (source, destination, change, edits, options) and what it came to
// (formats, Plan, Staging, Shards). Shards and the commit re-read the
// source's metadata (never its keyed state), check it against
// SourceFingerprint, and plan the request again from it to refuse a plan
// that differs (see rebuild); a max-parallelism change is estimated, not
// re-hashed, as PlanShards estimated it.
type ShardPlan struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
	// ID names this plan: its staging area, its shards' records.
	ID string `json:"id"`
	// Digest is "sha256:" and the hex SHA-256 of the plan's JSON encoding
	// with Digest empty (Seal): a plan edited since it was planned is
	// refused.
	Digest       string `json:"digest"`
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
	StateEdits     []surgery.Edit    `json:"state_edits,omitempty"`
	PathMap        map[string]string `json:"path_map,omitempty"`
	SkipUnreadable bool              `json:"skip_unreadable,omitempty"`
	EntryByEntry   bool              `json:"entry_by_entry,omitempty"`
	// ReaderVersion and DropExpired: see Request.
	ReaderVersion string         `json:"reader_version,omitempty"`
	DropExpired   *PlannedExpiry `json:"drop_expired,omitempty"`
	// KeySerializersFrom is the snapshot whose key serializers the
	// source's keys were read by where it records none
	// (snapshot.Schemas.KeySerializersFrom): every shard and the commit
	// read them so too.
	KeySerializersFrom string `json:"key_serializers_from,omitempty"`
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
	// Shards is the number of shards: at least 1, at most the new
	// subtasks the copy writes.
	Shards int
	// PlanFile, when set, is where the plan will be written: it must not
	// be the source, the destination or the staging area, or lie inside
	// one of them (and WriteShardPlan replaces no file but a plan).
	PlanFile string
}

// PlanShards plans req for req.Shards shards: it opens the source (its
// metadata, and its state only where NewPlan must), plans as Run does,
// checks the destination could be written, and deals the new subtasks
// out to the shards, largest first, each to the shard with the fewest
// bytes so far. It writes nothing; the plan it returns is sealed.
func PlanShards(ctx context.Context, reg *snapshot.Registry, req ShardRequest) (*ShardPlan, error) {
	if req.Shards < 1 {
		return nil, fmt.Errorf("%w: %d; at least 1", ErrShardCount, req.Shards)
	}
	for _, e := range req.StateEdits {
		if e.RequirePresent {
			// Each shard reads a part of the source: none sees every key.
			return nil, fmt.Errorf("%w: %s: requiring the keys present needs the copy in one process, not in shards", surgery.ErrBadEdit, e)
		}
	}
	if err := CheckLocations(req.Source, req.Destination); err != nil {
		return nil, err
	}
	r, err := reg.Open(ctx, req.Source, snapshot.OpenOptions{PathMap: req.PathMap, TempDir: req.TempDir})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var id [6]byte
	_, _ = rand.Read(id[:])
	sp := &ShardPlan{
		SchemaVersion: ShardPlanVersion, Kind: ShardPlanKind, ID: hex.EncodeToString(id[:]),
		Source: req.Source, Destination: req.Destination, Force: req.Force,
		Change:     PlannedChange{Parallelism: req.Change.Parallelism, Operators: req.Change.Operators, MaxParallelism: req.Change.MaxParallelism},
		Edits:      []PlannedEdit{},
		StateEdits: req.StateEdits,
		PathMap:    req.PathMap, SkipUnreadable: req.SkipUnreadable, EntryByEntry: req.EntryByEntry,
		ReaderVersion: req.ReaderVersion,
	}
	if s := reg.Codecs.Schemas(); s != nil {
		sp.KeySerializersFrom = s.KeySerializersFrom
	}
	if x := req.DropExpired; x != nil {
		sp.DropExpired = &PlannedExpiry{At: x.At, TTL: x.TTL}
	}
	for _, e := range req.Edits {
		sp.Edits = append(sp.Edits, PlannedEdit(e))
	}
	if sp.SourceFingerprint, err = Fingerprint(r.Snapshot()); err != nil {
		return nil, err
	}
	if req.PlanFile != "" {
		if err := checkPlanFile(req.PlanFile, sp); err != nil {
			return nil, err
		}
	}
	sp.Format = cmpOr(req.Format, r.Snapshot().Format)
	plan, err := sp.derive(ctx, reg, r, req.Shards)
	if err != nil {
		return nil, err
	}
	if n := plan.Totals().Subtasks; req.Shards > n {
		return nil, fmt.Errorf("%w: %d for %d new subtasks to write; at most %d", ErrShardCount, req.Shards, n, n)
	}
	if err := checkWritable(ctx, reg, req.Destination, req.Force); err != nil {
		return nil, err
	}
	return sp, sp.Seal()
}

// derive plans the copy sp asks for (its source, change, edits, format)
// from the source r, into n shards: it fills in the source's format, the
// copy's plan, the staging area and the shards, and returns the plan.
// PlanShards and a shard (rebuild) derive a plan the same way, so that a
// shard takes from a plan file nothing its source does not give.
func (sp *ShardPlan) derive(ctx context.Context, reg *snapshot.Registry, r snapshot.Reader, n int) (*Plan, error) {
	sp.SourceFormat = r.Snapshot().Format
	r, inFlight, err := sp.readable(reg, r)
	if err != nil {
		return nil, err
	}
	f, err := reg.Writable(sp.Format)
	if err != nil {
		return nil, err
	}
	sp.Format = f.Name
	wopts := snapshot.WriteOptions{Force: sp.Force, ReaderVersion: sp.ReaderVersion}
	inFlight.format, inFlight.from, inFlight.opts, inFlight.change, inFlight.edits = f, sp.SourceFormat, wopts, sp.change(reg), sp.edits()
	carried, err := inFlight.carry(r.Snapshot())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp.Source, err)
	}
	change := sp.change(reg)
	// A max-parallelism change is planned from the key groups' figures:
	// hashing every key here would read the whole source on this machine
	// before any shard starts. The shards hash what they write.
	change.EstimateRehash = true
	plan, err := NewPlan(ctx, r, f, change, sp.edits())
	if err != nil {
		return nil, err
	}
	plan.Source, plan.Destination, plan.InFlight = sp.Source, sp.Destination, carried
	if err := plan.checkWrite(f, wopts); err != nil {
		return nil, err
	}
	sp.Plan = plan
	sp.Staging = stagingFor(sp.Destination, sp.ID)
	sp.Shards = assign(plan, n)
	return plan, nil
}

// readable is the source r as sp copies it: edited as sp edits it,
// without its unreadable state if sp skips it (refused otherwise), without
// expired entries if sp drops them; and what the edits and the state left
// out mean for its data in flight. reg's codecs encode the keys of edits.
func (sp *ShardPlan) readable(reg *snapshot.Registry, r snapshot.Reader) (snapshot.Reader, inFlightCopy, error) {
	var inFlight inFlightCopy
	if len(sp.StateEdits) > 0 {
		edited, err := surgery.Apply(r, reg.Codecs, sp.StateEdits)
		if err != nil {
			return nil, inFlight, fmt.Errorf("%s: %w", sp.Source, err)
		}
		r, inFlight.edited = edited, edited.Edited()
	}
	if sp.SkipUnreadable {
		r, inFlight.dropped = snapshot.WithoutUnreadable(r)
	} else if err := snapshot.CheckReadable(r.Snapshot()); err != nil {
		return nil, inFlight, fmt.Errorf("%s: %w", sp.Source, err)
	}
	if x := sp.DropExpired; x != nil {
		fresh, err := snapshot.WithoutExpired(r, snapshot.Expiry{At: x.At, TTL: x.TTL})
		if err != nil {
			return nil, inFlight, fmt.Errorf("%s: %w", sp.Source, err)
		}
		r = fresh
	}
	return r, inFlight, nil
}

// checkPlanFile refuses to write the plan over the source, the
// destination or the staging area, or inside one of them. Locations are
// compared normalized, as CheckLocations compares them. (A file the
// source reads elsewhere exists, and is no plan file: WriteShardPlan
// never replaces it.)
func checkPlanFile(planFile string, sp *ShardPlan) error {
	p := NormalizeLocation(planFile)
	for _, loc := range []struct{ role, at string }{{"the source", sp.Source}, {"the destination", sp.Destination}, {"the staging area", stagingFor(sp.Destination, sp.ID)}} {
		at := NormalizeLocation(loc.at)
		if p == at || strings.HasPrefix(p, strings.TrimSuffix(at, "/")+"/") {
			return fmt.Errorf("%w: plan file %q is %s %q or lies inside it; write the plan somewhere else", ErrBadDestination, planFile, loc.role, loc.at)
		}
	}
	return nil
}

// checkWritable refuses, before any shard runs, a destination the commit
// would refuse: a snapshot there without force, a directory of other
// things.
func checkWritable(ctx context.Context, reg *snapshot.Registry, dst string, force bool) error {
	st, p, err := reg.Storage.Resolve(ctx, dst)
	if err != nil {
		return err
	}
	if p, err = storage.Canonical(st, p); err != nil {
		return err
	}
	_, _, err = lookAt(ctx, reg, st, p, dst, force)
	return err
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

// Seal sets sp's Digest to the digest of its content.
func (sp *ShardPlan) Seal() error {
	d, err := sp.digest()
	sp.Digest = d
	return err
}

// digest is the digest of sp's JSON encoding with Digest empty.
func (sp *ShardPlan) digest() (string, error) {
	c := *sp
	c.Digest = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("encoding plan %s: %w", sp.ID, err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WriteShardPlan writes sp to location (a path or URI) as indented JSON,
// atomically and exclusively as every output is: a file there is refused
// unless force, which replaces an earlier plan file only, never another
// file (one a snapshot reads), a directory, FIFO or device.
func WriteShardPlan(ctx context.Context, reg *snapshot.Registry, location string, sp *ShardPlan, force bool) error {
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
	replace := func(ctx context.Context) error {
		if !force {
			return fmt.Errorf("%w: %s (--force replaces an earlier plan file)", storage.ErrExist, st.URI(p))
		}
		old, err := storage.ReadAll(ctx, st, p, maxPlanFile)
		var plan struct{ Kind string }
		if err != nil || json.Unmarshal(old, &plan) != nil || plan.Kind != ShardPlanKind {
			return fmt.Errorf("%w: %s is not a plan file; --force replaces an earlier plan file only", storage.ErrExist, st.URI(p))
		}
		return nil
	}
	return writeNew(ctx, st, p, append(data, '\n'), replace)
}

// writeNew writes data to p atomically, claiming p while it looks and
// writes: what is at p is refused, unless it is a regular file and
// replace, if given, allows it.
func writeNew(ctx context.Context, st storage.Storage, p string, data []byte, replace func(context.Context) error) error {
	claim, err := st.Claim(ctx, p)
	if err != nil {
		return err
	}
	defer claim.Release()
	info, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return err
	case info.Special:
		return fmt.Errorf("%w: %s is %w", ErrBadDestination, st.URI(p), storage.ErrNotRegular)
	case info.IsDir:
		return fmt.Errorf("%w: %s is a directory", ErrBadDestination, st.URI(p))
	case replace == nil:
		return fmt.Errorf("%w: %s", storage.ErrExist, st.URI(p))
	default:
		if err := replace(ctx); err != nil {
			return err
		}
	}
	return storage.WriteFile(ctx, st, p, data)
}

// ReadShardPlan reads a plan file written by WriteShardPlan, refusing one
// whose digest is not its content's: edited since it was planned.
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
	return parseShardPlan(location, data)
}

// parseShardPlan decodes and checks a plan file's content.
func parseShardPlan(location string, data []byte) (*ShardPlan, error) {
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
	}
	if d, err := sp.digest(); err != nil || d != sp.Digest {
		return nil, snapshot.Corrupt(location, -1, "plan file was edited since it was planned (digest %q, its content's %s); plan again", sp.Digest, d)
	}
	switch {
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
