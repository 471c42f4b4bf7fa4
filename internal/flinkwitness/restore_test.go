package flinkwitness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// refusal is a copy of a witness snapshot that stateutil rightly refuses
// to make: its exit code and what its message says.
type refusal struct {
	code int
	says string
}

// inFlight: records in flight, which Flink redistributes at restore when
// the parallelism changes, by the job's partitioning: no rescaled copy
// can hold them, and one without them would lose them. (A copy that keeps
// the parallelism carries them as they are.)
var inFlight = refusal{cmd.ExitUnsupported, "an unaligned checkpoint with data in flight"}

// holdsRecordsInFlight says whether e is an unaligned checkpoint whose
// channels hold records, as Flink's own channel state reader finds them:
// its rescaled copy must be refused (inFlight), and its converted copy
// must go on as it does. Whether they do depends on the run that took it
// (one of sqlevents may hold only empty buffers), so it is asked of each
// snapshot, not listed by name: the restore check fails on a refusal not
// expected, and on an expected one that does not happen, on any set of
// witness snapshots.
func holdsRecordsInFlight(ctx context.Context, t *testing.T, e flinkharness.Entry) bool {
	if !e.Manifest.Unaligned {
		return false
	}
	n, err := flinkharness.InFlightBytes(ctx, e.Manifest.FlinkVersion, e.SnapshotDir())
	if err != nil {
		t.Fatalf("Flink did not read the checkpoint's channel state: %v", err)
	}
	return n > 0
}

// pinningJobs are the witness jobs whose SQL plans have operators of max
// parallelism 1 (the planner's global operators: sqlops's join without
// an equality and its CROSS JOIN, sqlevents's).
var pinningJobs = []string{"sqlops", "sqlevents"}

func entryID(e flinkharness.Entry) string { return e.Manifest.FlinkVersion + "/" + e.Name }

// restoreEntries are the witness snapshots the restore check runs on, of
// all those under root. STATEUTIL_WITNESS_RESTORE=full: all of them; a
// list of VERSION/NAME (spaces or commas between): those; else one a day
// of the Flink versions flinkharness.Versions names (make test alternates
// them by day, scripts/test.sh, so the day's index among the days of its
// version is day/2).
func restoreEntries(t *testing.T) (root string, chosen, all []flinkharness.Entry) {
	root, _, all = witnessSet(t)
	which := strings.TrimSpace(os.Getenv("STATEUTIL_WITNESS_RESTORE"))
	switch which {
	case "full":
		return root, all, all
	case "":
		versions := flinkharness.Versions()
		var of []flinkharness.Entry
		for _, e := range all {
			if slices.Contains(versions, e.Manifest.FlinkVersion) {
				of = append(of, e)
			}
		}
		if len(of) == 0 {
			t.Fatalf("no witness snapshots of Flink %v under %s", versions, root)
		}
		day := int(time.Now().Unix() / 86400)
		return root, of[day/2%len(of) : day/2%len(of)+1], all
	}
	for _, id := range strings.FieldsFunc(which, func(r rune) bool { return r == ' ' || r == ',' }) {
		i := slices.IndexFunc(all, func(e flinkharness.Entry) bool { return entryID(e) == id })
		if i < 0 {
			t.Fatalf("STATEUTIL_WITNESS_RESTORE names %s, which %s does not hold", id, root)
		}
		chosen = append(chosen, all[i])
	}
	return root, chosen, all
}

// TestWitnessRestoresInFlink is the restore check: Flink goes on from each
// witness snapshot (the harness's continue, to twice the snapshot's
// records), from stateutil's `rescale --parallelism 3` of it (at
// parallelism 3, through the snapshot's backend) and from its `convert
// --to flink` (a canonical savepoint, through hashmap), and the three
// outputs must be the same; but stateutil refuses the rescale of an
// unaligned checkpoint whose channels hold records (inFlight), whose
// conversion carries them, and Flink itself must then go on from the
// checkpoint at parallelism 3 with the same output, as the refusal
// advises. A changelog checkpoint that records no key
// serializer is copied with --key-serializers-from its job's savepoint,
// as its user would. A rescale keeps each operator of max parallelism 1
// at parallelism 1 and says so, as Flink plans it. One snapshot a day
// under STATEUTIL_REQUIRE_FLINK=1 (make test); make
// test-witness-restore runs them all.
func TestWitnessRestoresInFlink(t *testing.T) {
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink restore check runs with STATEUTIL_REQUIRE_FLINK=1")
	}
	root, entries, all := restoreEntries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	var table []string
	for _, e := range entries {
		t.Run(entryID(e), func(t *testing.T) {
			row := restoreCheck(ctx, t, e, all)
			table = append(table, fmt.Sprintf("%-46s %-12s %-70s %s", entryID(e), row[0], row[1], row[2]))
		})
	}
	t.Logf("restore check of %d witness snapshots (%s):\n%-46s %-12s %-70s %s\n%s", len(entries), root,
		"snapshot", "original", "rescale --parallelism 3", "convert --to flink", strings.Join(table, "\n"))
}

// restoreCheck checks one snapshot of corpus and returns what each run
// gave: the original's number of outputs, then the rescaled and the
// converted copies' outcome.
func restoreCheck(ctx context.Context, t *testing.T, e flinkharness.Entry, corpus []flinkharness.Entry) [3]string {
	row := [3]string{"-", "-", "-"}
	m := e.Manifest
	release, err := e.AtOriginalDir()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	dir := t.TempDir()
	goOn := func(name, snap, backend string, parallelism int) (string, error) {
		o := flinkharness.ContinueOptions{Job: m.Job, Snapshot: snap, Backend: backend, Parallelism: parallelism,
			Records: m.Records, ContinueTo: 2 * m.Records, Out: filepath.Join(dir, name+".jsonl"), Changelog: m.Changelog}
		if !strings.HasPrefix(name, "original") && backend == "forst" {
			// The one setting with which Flink 2.x's ForSt restores a
			// canonical savepoint: timers on the heap.
			o.Conf = "state.backend.forst.timer-service.factory=HEAP"
		}
		return flinkharness.Continue(ctx, m.FlinkVersion, o)
	}
	original, err := goOn("original", e.SnapshotDir(), m.Backend, m.Parallelism)
	if err != nil {
		t.Fatalf("Flink did not go on from the snapshot: %v", err)
	}
	want, err := os.ReadFile(original)
	if err != nil {
		t.Fatal(err)
	}
	row[0] = fmt.Sprintf("%d outputs", strings.Count(string(want), "\n"))
	old, now := e.PathMap()
	flags := []string{"--path-map", old + "=" + now, "-q"}
	from, err := e.KeySerializersFrom(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if from != "" {
		flags = append(flags, "--key-serializers-from", from)
	}
	held := holdsRecordsInFlight(ctx, t, e)
	copies := []struct {
		name, backend string
		parallelism   int
		args          []string
		// refusesInFlight: the copy cannot carry records in flight.
		refusesInFlight bool
	}{
		{"rescaled", m.Backend, 3, []string{"rescale", e.SnapshotDir(), "--parallelism", "3", "-o", "json"}, true},
		{"converted", "hashmap", m.Parallelism, []string{"convert", e.SnapshotDir(), "--to", "flink"}, false},
	}
	for i, c := range copies {
		out := filepath.Join(dir, c.name)
		code, stdout, errOut := stateutil(append(append(c.args, flags...), "--output", out)...)
		msg := strings.TrimSpace(errOut)
		refused, expected := inFlight, held && c.refusesInFlight
		switch {
		case code != cmd.ExitOK && expected && code == refused.code && strings.Contains(msg, refused.says):
			row[i+1] = "refused, as expected (exit " + fmt.Sprint(code) + ")" + flinkRescales(t, goOn, want, e.SnapshotDir(), m.Backend, c.parallelism)
			continue
		case code != cmd.ExitOK:
			row[i+1] = fmt.Sprintf("refused (exit %d)", code)
			t.Errorf("stateutil %s refused (exit %d): %s", c.args[0], code, msg)
			continue
		case expected:
			row[i+1] = "made, though it should be refused"
			t.Errorf("stateutil %s made a copy, and should refuse it (exit %d, %q)", c.args[0], refused.code, refused.says)
		}
		if c.name == "rescaled" {
			checkPinned(t, e, stdout)
		}
		if _, err := goOn(c.name, out, c.backend, c.parallelism); err != nil {
			row[i+1] = "Flink did not go on"
			t.Errorf("Flink did not go on from stateutil's %s copy: %v", c.args[0], err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, c.name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if d := outputDiff(want, got); d != "" {
			row[i+1] = "differs"
			t.Errorf("Flink went on from stateutil's %s copy with other output than from the snapshot:\n%s", c.args[0], d)
			continue
		}
		if !expected {
			row[i+1] = "same"
		}
	}
	return row
}

// flinkRescales holds up the refusal's advice: Flink itself restores the
// snapshot at the parallelism the refused copy asked for, with the same
// output as at the snapshot's own, redistributing the records in flight
// with the job's key selectors. It says so for the table.
func flinkRescales(t *testing.T, goOn func(name, snap, backend string, parallelism int) (string, error), want []byte, snap, backend string, parallelism int) string {
	t.Helper()
	said := fmt.Sprintf("; Flink at parallelism %d: ", parallelism)
	out, err := goOn(fmt.Sprintf("original-p%d", parallelism), snap, backend, parallelism)
	if err != nil {
		t.Errorf("Flink did not go on from the snapshot at parallelism %d: %v", parallelism, err)
		return said + "failed"
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := outputDiff(want, got); d != "" {
		t.Errorf("Flink went on from the snapshot at parallelism %d with other output than at its own:\n%s", parallelism, d)
		return said + "differs"
	}
	return said + "same"
}

// checkPinned holds a rescale's plan (-o json) to Flink's: an operator of
// max parallelism 1 stays at parallelism 1, with a note that says why;
// the jobs that have such operators have them in the plan.
func checkPinned(t *testing.T, e flinkharness.Entry, plan string) {
	var p struct {
		Operators []struct {
			ID  string `json:"id"`
			Old struct {
				MaxParallelism int `json:"max_parallelism"`
			} `json:"old"`
			New struct {
				Parallelism    int `json:"parallelism"`
				MaxParallelism int `json:"max_parallelism"`
			} `json:"new"`
			Note string `json:"note"`
		} `json:"operators"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		t.Fatalf("rescale -o json: %v\n%s", err, plan)
	}
	pinned := 0
	for _, op := range p.Operators {
		if op.Old.MaxParallelism != 1 {
			continue
		}
		pinned++
		if op.New.Parallelism != 1 || op.New.MaxParallelism != 1 || !strings.Contains(op.Note, "max parallelism 1") {
			t.Errorf("rescale --parallelism 3: operator %s of max parallelism 1 planned at parallelism %d, max parallelism %d, note %q; Flink keeps it at 1",
				op.ID, op.New.Parallelism, op.New.MaxParallelism, op.Note)
		}
	}
	if want := slices.Contains(pinningJobs, e.Manifest.Job); want != (pinned > 0) {
		t.Errorf("rescale's plan has %d operators of max parallelism 1; the %s job has them: %v", pinned, e.Manifest.Job, want)
	}
}

// outputDiff lists the output lines only one of two continue outputs has
// (both sorted, one line a distinct output), "" when they are the same.
func outputDiff(want, got []byte) string {
	if string(want) == string(got) {
		return ""
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var sb strings.Builder
	n := 0
	for _, l := range w {
		if !slices.Contains(g, l) && n < 20 {
			fmt.Fprintf(&sb, "- %s\n", l)
			n++
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) && n < 40 {
			fmt.Fprintf(&sb, "+ %s\n", l)
			n++
		}
	}
	return fmt.Sprintf("(- only from the snapshot, + only from the copy; %d and %d lines)\n%s", len(w)-1, len(g)-1, sb.String())
}
