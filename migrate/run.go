package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/surgery"
)

// Request is one copy of a snapshot.
type Request struct {
	Source, Destination string
	// Format is the format to write; "" writes the source's.
	Format string
	// Change is the new parallelism and max parallelism; zero keeps them.
	Change redistribute.Request
	// Edits remove or rename operators; StateEdits drop or rename states
	// and delete keys (surgery.Apply), before anything else reads the
	// source.
	Edits      []Edit
	StateEdits []surgery.Edit
	// Force replaces an existing snapshot at Destination.
	Force bool
	// ReaderVersion is the version of the readers to write for (the flink
	// format: the Flink version X.Y that restores the result); "" writes
	// for the source's.
	ReaderVersion string
	// DryRun plans and writes nothing.
	DryRun bool
	// Verify re-reads the destination and compares it with the source,
	// entry by entry, as the plan says it should differ.
	Verify bool
	// EntryByEntry and TempDir: see ExecuteOptions.
	EntryByEntry bool
	TempDir      string
	// PathMap rewrites absolute paths a source records (Flink checkpoints).
	PathMap map[string]string
	// StateSizeCap replaces the state per subtask a capped format (memory)
	// accepts; 0 keeps the format's default.
	StateSizeCap int64
	// SkipUnreadable drops state the source has but stateutil cannot read
	// (listed in Result.Dropped); without it such a source is refused.
	SkipUnreadable bool
	// Upgrade carries the source to the major version of its format's
	// readers that ReaderVersion names (snapshot.Format.Upgrade), rewriting
	// what those readers read otherwise; Result.Upgrade says what it did.
	Upgrade bool
	// DropExpired, if set, leaves out the TTL'd entries expired at its
	// time (snapshot.WithoutExpired).
	DropExpired *snapshot.Expiry
	// Start, if set, is called once with the bytes of state to write,
	// before writing; Progress as they are written.
	Start    func(total int64)
	Progress func(bytes int64)
}

// Result is what a copy did.
type Result struct {
	Plan     *Plan  `json:"plan"`
	From     string `json:"from"`
	Totals   Totals `json:"totals"`
	Verified bool   `json:"verified"`
	// Dropped is the unreadable state left out (Request.SkipUnreadable).
	Dropped []snapshot.UnreadablePart `json:"dropped"`
	// Surgery is what Request.StateEdits did (of a dry run: would do).
	Surgery *surgery.Report `json:"surgery,omitempty"`
	// Upgrade is what Request.Upgrade did to each state.
	Upgrade *snapshot.UpgradeReport `json:"upgrade,omitempty"`
}

// ErrVerifyFailed reports a destination that does not read back as the
// plan says it should. It wraps snapshot.ErrCorrupt.
var ErrVerifyFailed = fmt.Errorf("%w: the written snapshot differs from its source", snapshot.ErrCorrupt)

// Run copies req.Source to req.Destination as planned: open, plan, check
// capacity, claim and create, stream, commit (or abort: nothing is left
// that a reader accepts), verify. The source is never written to.
func Run(ctx context.Context, reg *snapshot.Registry, req Request) (*Result, error) {
	if !req.DryRun || req.Destination != "" {
		if err := CheckLocations(req.Source, req.Destination); err != nil {
			return nil, err
		}
	}
	r, err := reg.Open(ctx, req.Source, snapshot.OpenOptions{PathMap: req.PathMap, TempDir: req.TempDir})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	from := r.Snapshot().Format
	var edited *surgery.Reader
	if len(req.StateEdits) > 0 {
		if edited, err = surgery.Apply(r, reg.Codecs, req.StateEdits); err != nil {
			return nil, fmt.Errorf("%s: %w", req.Source, err)
		}
		r = edited
	}
	var dropped []snapshot.UnreadablePart
	if req.SkipUnreadable {
		r, dropped = snapshot.WithoutUnreadable(r)
	} else if err := snapshot.CheckReadable(r.Snapshot()); err != nil {
		return nil, fmt.Errorf("%s: %w", req.Source, err)
	}
	// An upgrade names data in flight among what blocks it (exit 8).
	var upgraded *snapshot.UpgradeReport
	if req.Upgrade {
		if r, upgraded, err = upgradeReader(ctx, reg, r, req.Source, req.ReaderVersion); err != nil {
			return nil, err
		}
		if err := snapshot.CheckNoInFlight(r.Snapshot(), "an upgrade's copy cannot carry"); err != nil {
			// Nothing in it needs rewriting, and the new readers restore it
			// as it is: a copy is what cannot be made.
			return nil, fmt.Errorf("%s: %w: nothing in it needs rewriting for %s, which restores the checkpoint as it is, data in flight too: "+
				"restore the checkpoint itself (an upgrade writes a copy for the other Flink major, which cannot carry data in flight)", req.Source, snapshot.ErrUpgradeBlocked, upgraded.To)
		}
	}
	f, err := reg.Writable(cmpOr(req.Format, from))
	if err != nil {
		return nil, err
	}
	if req.DropExpired != nil {
		if r, err = snapshot.WithoutExpired(r, *req.DropExpired); err != nil {
			return nil, fmt.Errorf("%s: %w", req.Source, err)
		}
	}
	if req.StateSizeCap > 0 && f.StateSizeCap > 0 {
		capped := *f
		capped.StateSizeCap = req.StateSizeCap
		f = &capped
	}
	wopts := snapshot.WriteOptions{Force: req.Force, StateSizeCap: f.StateSizeCap, ReaderVersion: req.ReaderVersion}
	inFlight := inFlightCopy{format: f, from: from, opts: wopts, change: req.Change, edits: req.Edits, dropped: dropped}
	if edited != nil {
		inFlight.edited = edited.Edited()
	}
	carried, err := inFlight.carry(r.Snapshot())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.Source, err)
	}
	req.Change.Codecs = reg.Codecs
	// A writer of the source's format may re-hash the stored pairs itself
	// and count them as it goes (executeRehashed): then no scan plans it.
	req.Change.EstimateStored = !req.DryRun && !req.EntryByEntry && f.Name == from
	plan, err := NewPlan(ctx, r, f, req.Change, req.Edits)
	if err != nil {
		return nil, err
	}
	plan.Source, plan.Destination, plan.DryRun, plan.InFlight = req.Source, req.Destination, req.DryRun, carried
	if err := plan.checkWrite(f, wopts); err != nil {
		return nil, err
	}
	res := &Result{Plan: plan, From: from, Totals: plan.Totals(), Dropped: dropped, Upgrade: upgraded}
	if res.Dropped == nil {
		res.Dropped = []snapshot.UnreadablePart{}
	}
	if req.DryRun {
		if edited != nil {
			if err := edited.Scan(ctx); err != nil {
				return nil, err
			}
			res.Surgery = edited.Report()
			if err := edited.Check(); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	w, err := Create(ctx, reg, f, req.Destination, wopts)
	if err != nil {
		return nil, err
	}
	if req.Start != nil {
		req.Start(res.Totals.Bytes)
	}
	opts := ExecuteOptions{TempDir: req.TempDir, Progress: req.Progress, EntryByEntry: req.EntryByEntry, Codecs: reg.Codecs}
	if err := Execute(ctx, r, w, plan, opts); err != nil {
		return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
	}
	if edited != nil {
		if err := edited.Scan(ctx); err != nil {
			return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
		}
		res.Surgery = edited.Report()
		if err := edited.Check(); err != nil {
			return nil, errors.Join(err, w.Abort(context.WithoutCancel(ctx)))
		}
	}
	if err := Commit(ctx, w, plan); err != nil {
		return nil, err
	}
	if req.Verify {
		if err := Verify(ctx, reg, r, plan); err != nil {
			return nil, err
		}
		res.Verified = true
	}
	return res, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Verify re-reads plan's destination and compares it with r entry by
// entry and element by element: it must hold what r holds, but for what
// the plan changes (parallelism, removed and renamed operators), and the
// data in flight of every channel where the plan carries it. A
// difference is ErrVerifyFailed naming the first ones.
func Verify(ctx context.Context, reg *snapshot.Registry, r snapshot.Reader, plan *Plan) error {
	d, err := reg.Open(ctx, plan.Destination, snapshot.OpenOptions{})
	if err != nil {
		return fmt.Errorf("re-reading %q: %w", plan.Destination, err)
	}
	defer d.Close()
	res, err := diff.Compare(ctx, plan.Source, r, plan.Destination, d,
		diff.Options{Entries: true, MaxKeys: 10, Codecs: reg.Codecs, Renamed: plan.Renamed})
	if err != nil {
		return fmt.Errorf("re-reading %q: %w", plan.Destination, err)
	}
	errs := unexpected(res, plan)
	if plan.InFlight != nil {
		errs = append(errs, inFlightDiffers(r.Snapshot(), d.Snapshot())...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrVerifyFailed, errors.Join(errs...))
	}
	return nil
}

// unexpected lists the differences the plan does not account for.
func unexpected(res *diff.Result, plan *Plan) []error {
	var errs []error
	for _, c := range res.Changes {
		if c.Field == "kind" && c.B == string(snapshot.Savepoint) {
			continue // a copy may be a savepoint of a checkpoint (the flink writer's are)
		}
		errs = append(errs, fmt.Errorf("%s %q vs %q", c.Field, c.A, c.B))
	}
	removed := map[string]bool{}
	for _, l := range plan.Removed {
		removed[l] = true
	}
	for _, o := range res.OperatorsRemoved {
		if !removed[o.Label()] {
			errs = append(errs, fmt.Errorf("operator %q missing", o.Label()))
		}
	}
	for _, o := range res.OperatorsAdded {
		errs = append(errs, fmt.Errorf("operator %q added", o.Label()))
	}
	targets := map[string]redistribute.Target{}
	copies := map[string]map[string]bool{} // broadcast states: one copy per subtask
	for _, op := range plan.Operators {
		targets[op.ID+"\x00"+op.UID] = op.New
		for _, sp := range op.OperatorStates {
			if sp.Mode == snapshot.Broadcast && op.New.Parallelism != op.Old.Parallelism {
				if copies[op.ID+"\x00"+op.UID] == nil {
					copies[op.ID+"\x00"+op.UID] = map[string]bool{}
				}
				copies[op.ID+"\x00"+op.UID][sp.Name] = true
			}
		}
	}
	for _, o := range res.Operators {
		t := targets[o.ID+"\x00"+o.UID]
		var changes []diff.Change
		for _, c := range o.Changes {
			expected := (c.Field == "parallelism" && c.B == strconv.Itoa(t.Parallelism)) ||
				(c.Field == "max_parallelism" && c.B == strconv.Itoa(t.MaxParallelism))
			if !expected {
				changes = append(changes, c)
			}
		}
		if !o.Equal && (len(changes) > 0 || len(o.Keys) > 0 || o.KeysOmitted > 0 || len(o.ElementsDiffer) > 0 ||
			len(o.StatesAdded)+len(o.StatesRemoved)+len(o.StatesChanged) > 0 || countsDiffer(o, copies[o.ID+"\x00"+o.UID])) {
			n := len(o.Keys) + int(o.KeysOmitted)
			errs = append(errs, fmt.Errorf("operator %q: %d keys differ, operator states %v differ, %d descriptor changes",
				o.Label(), n, o.ElementsDiffer, len(changes)+len(o.StatesChanged)+len(o.StatesAdded)+len(o.StatesRemoved)))
		}
	}
	return errs
}

// countsDiffer reports a state whose entries or elements differ in
// number, but for broadcast states, of which there is a copy per subtask.
func countsDiffer(o diff.OperatorDiff, copies map[string]bool) bool {
	for _, c := range o.Counts {
		if c.A != c.B && !(c.Scope == diff.OperatorScope && copies[c.Name]) {
			return true
		}
	}
	return false
}
