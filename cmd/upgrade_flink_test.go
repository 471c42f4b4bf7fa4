package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// The upgrade's restore matrix: Flink 1.x snapshots of the harness's
// upgrade jobs (POJOs with List, Collection, Set and Map fields and nested
// collections, JDK classes under Kryo, in value, list and map states, with
// TTL; with and without classes registered with Kryo), of every kind and
// backend, upgraded for each Flink 2.x release and restored there; the
// state the restored job holds must be what the 1.x job held.
var (
	upgradeFrom  = []string{"1.18.1", "1.19.3", "1.20.5"}
	upgradeTo    = []string{"2.0.2", "2.1.3", "2.2.1", "2.3.0"}
	upgradeJobs  = []string{"upgrade", "upgradereg"}
	upgradeKinds = []flinkharness.SnapshotOptions{
		{Backend: "hashmap", Kind: "canonical"}, {Backend: "hashmap", Kind: "native"}, {Backend: "hashmap", Kind: "checkpoint"},
		{Backend: "rocksdb", Kind: "canonical"}, {Backend: "rocksdb", Kind: "native"}, {Backend: "rocksdb", Kind: "checkpoint", Incremental: true},
		// A savepoint of the changelog backend (its checkpoints of these jobs,
		// never materialized and without timers, do not record the key
		// serializer, and stateutil refuses to read them).
		{Backend: "hashmap", Kind: "native", Changelog: true},
	}
)

type upgradeCell struct {
	from, to, job string
	kind          flinkharness.SnapshotOptions
}

func (c upgradeCell) source() string {
	name := fmt.Sprintf("%s-%s-%s-%s", c.from, c.job, c.kind.Backend, c.kind.Kind)
	if c.kind.Incremental {
		name += "-incremental"
	}
	if c.kind.Changelog {
		name += "-changelog"
	}
	return name
}

// upgradeCells is the whole matrix with STATEUTIL_UPGRADE_MATRIX=full
// (make test-upgrade-matrix; STATEUTIL_UPGRADE_FROM and
// STATEUTIL_UPGRADE_TO narrow its versions), else the day's cell: one of
// 1.20.5's kinds and jobs into 2.3.0, a day each.
func upgradeCells() []upgradeCell {
	narrowed := func(env string, all []string) []string {
		if v := strings.Fields(os.Getenv(env)); len(v) > 0 {
			return v
		}
		return all
	}
	var all []upgradeCell
	for _, from := range narrowed("STATEUTIL_UPGRADE_FROM", upgradeFrom) {
		for _, job := range upgradeJobs {
			for _, k := range upgradeKinds {
				for _, to := range narrowed("STATEUTIL_UPGRADE_TO", upgradeTo) {
					all = append(all, upgradeCell{from: from, to: to, job: job, kind: k})
				}
			}
		}
	}
	if os.Getenv("STATEUTIL_UPGRADE_MATRIX") == "full" {
		return all
	}
	var daily []upgradeCell
	for _, c := range all {
		if c.from == "1.20.5" && c.to == "2.3.0" {
			daily = append(daily, c)
		}
	}
	day := int(time.Now().Unix() / 86400)
	return daily[day%len(daily) : day%len(daily)+1]
}

func TestUpgradeRestoresInFlink(t *testing.T) {
	// Its JVMs run beside the package's other parallel tests.
	t.Parallel()
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink upgrade matrix runs with STATEUTIL_REQUIRE_FLINK=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	dir := t.TempDir()
	const records = 200
	sources := map[string]string{} // snapshot by source name
	dumps := map[string]string{}
	skipped, restored, equal := 0, 0, 0
	cells := upgradeCells()
	for _, c := range cells {
		t.Run(c.source()+"-to-"+c.to, func(t *testing.T) {
			name := c.source()
			if (strings.HasPrefix(c.from, "1.18.") || strings.HasPrefix(c.from, "1.19.")) && c.kind.Changelog && c.kind.Kind == "native" && c.kind.Backend == "hashmap" {
				skipped++
				t.Skipf("Flink %s writes no native savepoint of the changelog backend over hashmap: no such source exists (testenv/flink/README.md)", c.from)
			}
			if _, ok := sources[name]; !ok {
				o := c.kind
				o.Job, o.Records, o.Dir = c.job, records, filepath.Join(dir, name)
				snap, dump, err := flinkharness.Snapshot(ctx, c.from, o)
				if err != nil {
					t.Fatalf("Flink %s: %v", c.from, err)
				}
				sources[name], dumps[name] = snap, dump
			}
			snap := sources[name]
			if snap == "" {
				t.Skip("its source snapshot failed")
			}
			line := c.to[:strings.LastIndex(c.to, ".")]
			dst := filepath.Join(dir, name+"-up-"+c.to)
			if code, out, errOut := run(t, "upgrade", snap, "--flink-version", line, "--output", dst, "-q"); code != ExitOK {
				t.Fatalf("stateutil upgrade: exit %d: %s %s", code, strings.ReplaceAll(errOut, "\n", " "), out)
			}
			restore := filepath.Join(dir, name+"-up-"+c.to+".restore.jsonl")
			if _, err := flinkharness.RestoreDump(ctx, c.to, flinkharness.RestoreOptions{Job: c.job, Snapshot: dst, Backend: c.kind.Backend,
				Records: records, Dump: restore}); err != nil {
				t.Fatalf("Flink %s did not restore the upgraded savepoint: %v", c.to, err)
			}
			restored++
			if d := flinkharness.EqualUpgradedDumps(dumpOf(t, dumps[name]), dumpOf(t, restore)); d != "" {
				t.Fatalf("Flink %s restored other state than the Flink %s job held:\n%s", c.to, c.from, d)
			}
			equal++
		})
	}
	t.Logf("upgrade matrix: %d cells, %d without a source Flink writes, %d restored, %d equal to the 1.x job's dump", len(cells), skipped, restored, equal)
}

// TestUpgradeCheckMatchesFlink compares upgrade --check's verdicts on every
// Flink 1.20.5 entry of the corpus (testdata/flink and testdata/flink-upgrade)
// with what Flink 2.3.0 does with each state when it restores the entry as it
// is: a state that "restores as is" must be restored, its values those of the
// 1.x job's dump; one "rewritten by upgrade" or "blocked" must be refused, or
// restored with other values. Flink restores the entry into its own state
// backend, each state dumped on its own (--per-state: a state it fails to
// register or read is an error line, not a failed job); a canonical heap
// savepoint that fails there is restored into RocksDB too, which reads a
// state's values only when the job reads them. Where the job fails all the
// same (a backend fails whole at its first bad state), the states Flink
// refuses are those whose serializer snapshots it cannot restore, and the
// others are settled by restoring a copy without the refused ones. The
// Scala job has no Flink 2 build: Flink 2.3.0 is asked without a job
// whether it restores each of its states' serializers, and the rest
// restores into the job ported to the Java API (the types job, with the
// same operators and key). What is left is undetermined: never counted as
// agreeing. With
// STATEUTIL_UPGRADE_MATRIX=full every entry, else one a day.
func TestUpgradeCheckMatchesFlink(t *testing.T) {
	// Its JVMs run beside the package's other parallel tests.
	t.Parallel()
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink upgrade checks run with STATEUTIL_REQUIRE_FLINK=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	entries := upgradeCheckEntries(t)
	if os.Getenv("STATEUTIL_UPGRADE_MATRIX") != "full" {
		day := int(time.Now().Unix() / 86400)
		entries = entries[day%len(entries) : day%len(entries)+1]
	}
	rows := make([]checkTally, len(entries))
	for i, e := range entries {
		rows[i].entry = e.Name
		t.Run(e.Name, func(t *testing.T) {
			compareCheckWithFlink(ctx, t, e, &rows[i])
		})
	}
	var sb strings.Builder
	var total checkTally
	fmt.Fprintf(&sb, "upgrade --check against Flink 2.3.0, per state:\n%-40s %6s %6s %9s %13s\n", "entry", "states", "agree", "disagree", "undetermined")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-40s %6d %6d %9d %13d\n", r.entry, r.states(), r.agree, r.disagree, r.undetermined)
		total.agree, total.disagree, total.undetermined = total.agree+r.agree, total.disagree+r.disagree, total.undetermined+r.undetermined
	}
	fmt.Fprintf(&sb, "%-40s %6d %6d %9d %13d", fmt.Sprintf("total (%d entries)", len(rows)), total.states(), total.agree, total.disagree, total.undetermined)
	t.Log(sb.String())
}

// upgradeCheckEntries are the corpus's Flink 1.20.5 entries, by name.
func upgradeCheckEntries(t *testing.T) []flinkharness.Entry {
	var out []flinkharness.Entry
	for _, root := range []string{"flink", "flink-upgrade"} {
		es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", root))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Manifest.FlinkVersion == "1.20.5" {
				out = append(out, e)
			}
		}
	}
	// The unaligned checkpoint has no manifest: it was made with
	// scripts/flink-harness.sh 1.20.5 snapshot --job cep --backend hashmap
	// --kind checkpoint --unaligned --records 100 --dir /tmp/ua
	// (testenv/flink/README.md), at the harness's parallelism 2.
	out = append(out, flinkharness.Entry{Dir: filepath.Join("..", "testdata", "flink-upgrade", "1.20.5", "cep-hashmap-checkpoint-unaligned"),
		Name: "cep-hashmap-checkpoint-unaligned", Manifest: flinkharness.Manifest{FlinkVersion: "1.20.5", Job: "cep", Backend: "hashmap",
			Kind: "checkpoint", Parallelism: 2, Records: 100, OriginalDir: "/tmp/ua/snapshot", SnapshotSubpath: "05524cb4fa71957fa97b36edda5b4db2/chk-1"}})
	if _, err := os.Stat(out[len(out)-1].SnapshotDir()); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b flinkharness.Entry) int { return strings.Compare(a.Name, b.Name) })
	if len(out) != 28 {
		t.Fatalf("the corpus has %d Flink 1.20.5 entries, want 28 (25 in testdata/flink, 3 in testdata/flink-upgrade)", len(out))
	}
	return out
}

// checkTally counts an entry's verdicts by how they compare with Flink's.
type checkTally struct {
	entry                         string
	agree, disagree, undetermined int
}

func (c checkTally) states() int { return c.agree + c.disagree + c.undetermined }

// stateID is a state of an operator (by its id, hex) as --check names it,
// State "" for the operator as a whole.
type stateID struct{ op, state string }

// flinkOutcome is what Flink did with a state.
type flinkOutcome int

const (
	undetermined flinkOutcome = iota
	restoredEqual
	restoredOther
	refused
)

// flinkRestore is one restore of an entry in Flink 2.3.0 (--per-state).
type flinkRestore struct {
	how    string
	err    error
	lines  []flinkharness.Line // the values it dumped
	errors map[stateID]string  // Flink's root cause, by state
	dumped map[stateID]bool    // states whose values it listed
}

// restoreForCheck restores the entry from snap in Flink 2.3.0 into backend,
// with rename ("OLD=NEW": operator OLD runs under uid NEW, its state left
// out) when not "".
func restoreForCheck(ctx context.Context, t *testing.T, e flinkharness.Entry, snap, backend string, rename ...string) flinkRestore {
	t.Helper()
	dump := filepath.Join(t.TempDir(), backend+".jsonl")
	o := flinkharness.RestoreOptions{Job: e.Manifest.Job, Snapshot: snap, Backend: backend,
		Parallelism: e.Manifest.Parallelism, Records: e.Manifest.Records, Changelog: e.Manifest.Changelog && backend == e.Manifest.Backend,
		Dump: dump, PerState: true}
	if len(rename) > 0 {
		o.RenameUID, o.AllowNonRestored = rename[0], true
	}
	_, err := flinkharness.RestoreDump(ctx, "2.3.0", o)
	r := flinkRestore{how: backend, err: err, errors: map[stateID]string{}, dumped: map[stateID]bool{}}
	if e.Manifest.Changelog {
		r.how += " (changelog)"
	}
	var fe *flinkharness.Error
	if err != nil && (!errors.As(err, &fe) || fe.ExitCode != 1) {
		t.Fatalf("the harness did not run: %v", err)
	}
	if _, serr := os.Stat(dump); err != nil && serr != nil {
		return r // the job failed and no state's serializers fail on their own
	}
	for _, l := range dumpOf(t, dump) {
		id := stateID{operatorIDOf(l.Operator), l.State}
		switch l.Kind {
		case "error":
			var msg string
			if jerr := json.Unmarshal(l.Value, &msg); jerr != nil {
				t.Fatal(jerr)
			}
			r.errors[id] = msg
		case "dumped":
			r.dumped[id] = true
		default:
			r.lines = append(r.lines, l)
		}
	}
	return r
}

// operatorIDOf is the operator id of a dump line's operator: its uid's
// hash, as Flink takes it, or the id itself.
func operatorIDOf(uidOrID string) string {
	if len(uidOrID) == 32 && strings.Trim(uidOrID, "0123456789abcdef") == "" {
		return uidOrID
	}
	return keygroup.OperatorIDOfUID(uidOrID)
}

// linesOf are the lines of the state id of a dump: a timer line ("event-time",
// "processing-time") belongs to the operator's timer states of its domain.
func linesOf(ls []flinkharness.Line, id stateID) []flinkharness.Line {
	var out []flinkharness.Line
	for _, l := range ls {
		if operatorIDOf(l.Operator) == id.op && stateOfLine(l) == timerDomain(id.state) {
			out = append(out, l)
		}
	}
	return out
}

func stateOfLine(l flinkharness.Line) string {
	if l.Kind == "timer" {
		return "_timer_state/" + strings.TrimSuffix(l.State, "-time") + "_"
	}
	return l.State
}

// timerDomain is "_timer_state/event_" for the event-time timer states
// ("_timer_state/event_user-timers"), likewise processing time; else state.
func timerDomain(state string) string {
	for _, d := range []string{"_timer_state/event_", "_timer_state/processing_"} {
		if strings.HasPrefix(state, d) {
			return d
		}
	}
	return state
}

// compareCheckWithFlink runs upgrade --check on the entry and restores it in
// Flink 2.3.0, and tallies each finding against what Flink did.
func compareCheckWithFlink(ctx context.Context, t *testing.T, e flinkharness.Entry, tally *checkTally) {
	snap := e.SnapshotDir()
	args := []string{"upgrade", "--check", snap, "--flink-version", "2.3", "-o", "json"}
	// from is what Flink restores; stateutil reads snap, with pathMap.
	from := snap
	var pathMap []string
	if e.Manifest.Kind == "checkpoint" {
		// A checkpoint names its files where Flink wrote them.
		old, now := e.PathMap()
		now, err := filepath.Abs(now)
		if err != nil {
			t.Fatal(err)
		}
		pathMap = []string{"--path-map", old + "=" + now}
		args = append(args, pathMap...)
		if from, err = flinkharness.RelocateCheckpoint(snap, filepath.Join(t.TempDir(), "chk"), old, now); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, args...)
	if code != ExitOK && code != ExitBlocked {
		t.Fatalf("upgrade --check: exit %d\n%s", code, errOut)
	}
	var rep snapshot.UpgradeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("upgrade --check -o json: %v\n%s", err, out)
	}
	old := dumpOf(t, e.File("dump.jsonl"))

	var restores []flinkRestore
	var alone map[stateID]string
	job := e
	switch {
	case e.Manifest.Job == "scala":
		alone = unrestorableAlone(ctx, t, snap, from, pathMap, rep.Findings)
		// What is left restores into the job ported to the Java API: the
		// types job has the Scala job's operators (uids) and key.
		job.Manifest.Job = "types"
	default:
		restores = append(restores, restoreForCheck(ctx, t, e, from, e.Manifest.Backend))
		if restores[0].err != nil && e.Manifest.Kind == "canonical" && e.Manifest.Backend != "rocksdb" {
			restores = append(restores, restoreForCheck(ctx, t, e, from, "rocksdb"))
		}
	}
	var ok *flinkRestore
	for i := range restores {
		r := &restores[i]
		if r.err == nil {
			ok = r
			t.Logf("Flink 2.3.0 (%s) restored it, each state on its own", r.how)
			break
		}
		t.Logf("Flink 2.3.0 (%s) did not restore it: %v; refused on their own: %v", r.how, r.err, r.errors)
	}
	// Where the job failed at the states Flink refuses, the other states
	// are settled by a copy without those (stateutil state drop, which
	// carries the rest byte for byte), which Flink restores.
	var without *flinkRestore
	if ok == nil {
		var refusedIDs []stateID
		for id := range alone {
			refusedIDs = append(refusedIDs, id)
		}
		for _, r := range restores {
			for id := range r.errors {
				if id.state != "*" && !slices.Contains(refusedIDs, id) {
					refusedIDs = append(refusedIDs, id)
				}
			}
		}
		if len(refusedIDs) > 0 || len(restores) == 0 {
			r := restoreForCheck(ctx, t, job, dropStates(t, snap, from, pathMap, refusedIDs), e.Manifest.Backend)
			if r.err == nil {
				without = &r
				t.Logf("Flink 2.3.0 (%s, job %s) restored a copy without the %d states it refused, each state on its own", r.how, job.Manifest.Job, len(refusedIDs))
			} else {
				t.Logf("Flink 2.3.0 (%s, job %s) did not restore a copy without the %d states it refused either: %v", r.how, job.Manifest.Job, len(refusedIDs), r.err)
			}
		}
	}

	// judge is what a restore that ran did with a state.
	judge := func(r *flinkRestore, id stateID) (flinkOutcome, string) {
		if id.state == "" {
			return restoredEqual, "restored with the job (" + r.how + ")"
		}
		if msg, bad := r.errors[id]; bad {
			return refused, r.how + ": " + msg
		}
		was, is := linesOf(old, id), linesOf(r.lines, id)
		if !r.dumped[id] && len(was) == 0 && len(is) == 0 {
			return undetermined, "restored with the job (" + r.how + "), whose dump does not show its values"
		}
		if d := flinkharness.EqualDumps(was, is); d != "" {
			return restoredOther, r.how + " restored other values: " + d
		}
		return restoredEqual, fmt.Sprintf("%s restored its %d lines", r.how, len(was))
	}
	// What Flink did with a state, and how it tells.
	outcome := func(id stateID) (flinkOutcome, string) {
		if ok != nil {
			return judge(ok, id)
		}
		if msg, bad := alone[id]; bad {
			return refused, "cannot restore its serializers (in a copy that holds only it of its operator's states): " + msg
		}
		for _, r := range restores {
			if msg, bad := r.errors[id]; bad {
				return refused, fmt.Sprintf("%s cannot restore its serializers: %s", r.how, msg)
			}
		}
		if without != nil {
			got, how := judge(without, id)
			return got, fmt.Sprintf("%s, in a copy without the states it refused (job %s)", how, job.Manifest.Job)
		}
		return undetermined, "Flink's verdict not per state: it did not restore the states it does not refuse"
	}

	seen := map[stateID]bool{}
	for _, f := range rep.Findings {
		id := stateID{operatorIDOf(f.Operator), f.State}
		seen[stateID{id.op, timerDomain(id.state)}] = true
		got, how := outcome(id)
		asIs := f.Verdict == snapshot.RestoresAsIs
		what := fmt.Sprintf("operator %s %s state %q: --check %q", f.Operator, f.Scope, f.State, f.Verdict)
		if f.State == "" {
			what = fmt.Sprintf("operator %s as a whole: --check %q (%s)", f.Operator, f.Verdict, f.Reason)
		}
		switch {
		case got == undetermined:
			tally.undetermined++
			t.Logf("undetermined: %s; Flink: %s", what, how)
		case asIs == (got == restoredEqual):
			tally.agree++
		default:
			tally.disagree++
			t.Errorf("%s; Flink 2.3.0: %s (%s)", what, map[flinkOutcome]string{restoredEqual: "restores it as is", restoredOther: "restores other values",
				refused: "refuses it"}[got], how)
		}
	}
	for _, l := range old {
		if id := (stateID{operatorIDOf(l.Operator), stateOfLine(l)}); !seen[id] {
			seen[id] = true
			tally.disagree++
			t.Errorf("--check gives no verdict on operator %s (%s) state %q, which the Flink 1.20.5 job holds", id.op, l.Operator, l.State)
		}
	}
	t.Logf("%s: %d states, %d agree, %d disagree, %d undetermined", e.Name, tally.states(), tally.agree, tally.disagree, tally.undetermined)
}

// dropStates is a copy of the snapshot without the states ids (stateutil
// state drop), or from as it is when ids is empty; stateutil reads the
// snapshot at snap with pathMap, Flink at from. A state of a heap
// snapshot drops only once the states before it that stateutil cannot
// read are gone, so a drop refused as unreadable is tried again after
// the others.
func dropStates(t *testing.T, snap, from string, pathMap []string, ids []stateID) string {
	t.Helper()
	pending := slices.Clone(ids)
	slices.SortFunc(pending, func(a, b stateID) int { return strings.Compare(a.op+"\n"+a.state, b.op+"\n"+b.state) })
	copied, flags := from, pathMap
	for len(pending) > 0 {
		var left []stateID
		var why string
		for _, id := range pending {
			in := copied
			if in == from {
				in = snap
			}
			out := filepath.Join(t.TempDir(), "without")
			code, _, errOut := run(t, append([]string{"state", "drop", in, "--operator", id.op, "--state", id.state, "--output", out, "-q"}, flags...)...)
			switch {
			case code == ExitUnsupported:
				left, why = append(left, id), errOut
			case code != ExitOK:
				t.Fatalf("state drop %s %s: exit %d\n%s", id.op, id.state, code, errOut)
			default:
				copied, flags = out, nil
			}
		}
		if len(left) == len(pending) {
			t.Fatalf("state drop refuses every one of %v:\n%s", left, why)
		}
		pending = left
	}
	return copied
}

// unrestorableAlone is, for a snapshot that no job of Flink 2.3.0 restores
// (stateutil reads it at snap with pathMap, Flink at from),
// Flink 2.3.0's root cause for each state whose serializer snapshots it
// cannot restore. Flink reads an operator's state meta data whole and
// fails at the first state it cannot, so each state is tried in a copy
// that holds only it of its operator's states.
func unrestorableAlone(ctx context.Context, t *testing.T, snap, from string, pathMap []string, findings []snapshot.UpgradeFinding) map[stateID]string {
	t.Helper()
	states := map[string][]string{}
	for _, f := range findings {
		if f.State != "" {
			op := operatorIDOf(f.Operator)
			states[op] = append(states[op], f.State)
		}
	}
	out := map[stateID]string{}
	for op, names := range states {
		for _, keep := range names {
			var others []stateID
			for _, name := range names {
				if name != keep {
					others = append(others, stateID{op, name})
				}
			}
			only := dropStates(t, snap, from, pathMap, others)
			dump := filepath.Join(t.TempDir(), "unrestorable.jsonl")
			if _, err := flinkharness.Run(ctx, "2.3.0", "unrestorable", "--snapshot", only, "--dump", dump); err != nil {
				t.Fatalf("the harness did not run: %v", err)
			}
			for _, l := range dumpOf(t, dump) {
				var msg string
				if err := json.Unmarshal(l.Value, &msg); err != nil {
					t.Fatal(err)
				}
				if operatorIDOf(l.Operator) == op && (l.State == keep || l.State == "*") {
					out[stateID{op, keep}] = msg
				}
			}
		}
	}
	return out
}
