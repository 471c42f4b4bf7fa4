// Package flinkwitness checks stateutil against the witness jobs' snapshots
// in testdata/flink-witness (testenv/flink/README.md): for each, verify
// must exit 0 with every value decoded, and dump and inspect's operator
// state must equal what the job itself dumped after Flink restored the
// snapshot. What stateutil cannot do yet is listed in known_gaps.txt; the
// test fails on a gap not listed, and on a listed gap that is gone, so the
// list stays the honest to-do list of the decoders.
package flinkwitness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
)

// report, when set, is where the test writes the gap report in Markdown:
// per snapshot, verify's exit code and findings, the values not decoded and
// their serializers, the dump's differences with examples, and what
// rescale --parallelism 3 answers (rescale runs only for the report).
var report = flag.String("witness-report", "", "write the gap report (Markdown) to this file")

// stateutil runs one command in-process and returns its exit code, stdout
// and stderr.
func stateutil(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cmd.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// outcome is what stateutil made of one witness snapshot.
type outcome struct {
	entry       flinkharness.Entry
	verifyCode  int
	findings    []finding
	notDecoded  []notDecoded
	dumpCode    int
	dumpErr     string
	mismatches  map[string]string // "operator state" -> EqualDumps's difference
	rescaleCode int
	rescaleErr  string
}

type finding struct {
	Check    string `json:"check"`
	Operator string `json:"operator"`
	Message  string `json:"message"`
}

type notDecoded struct {
	Operator   string `json:"operator"`
	State      string `json:"state"`
	Part       string `json:"part"`
	Serializer string `json:"serializer"`
	ValueClass string `json:"value_class"`
	Count      int    `json:"count"`
}

// gaps are the outcome's failures, one line each, as known_gaps.txt lists them.
func (o *outcome) gaps() []string {
	id := o.entry.Manifest.FlinkVersion + "/" + o.entry.Name
	var g []string
	if o.verifyCode != 0 {
		g = append(g, fmt.Sprintf("%s verify exit %d", id, o.verifyCode))
	}
	seen := map[string]bool{}
	for _, n := range o.notDecoded {
		l := fmt.Sprintf("%s not-decoded %s %s %s %s", id, n.Operator, n.State, n.Part, n.Serializer)
		if !seen[l] {
			seen[l] = true
			g = append(g, l)
		}
	}
	if o.dumpCode != 0 {
		g = append(g, fmt.Sprintf("%s dump exit %d", id, o.dumpCode))
	}
	for k := range o.mismatches {
		g = append(g, fmt.Sprintf("%s dump-differs %s", id, k))
	}
	sort.Strings(g)
	return g
}

// uidOf names operators by uid: the job's dump knows the uids, a 1.x
// _metadata only their hashes.
type uidOf map[string]string

func (u uidOf) name(op string) string {
	if n, ok := u[op]; ok {
		return n
	}
	return op
}

// check reads the entry e of the corpus.
func check(t *testing.T, e flinkharness.Entry, corpus []flinkharness.Entry) *outcome {
	o := &outcome{entry: e, mismatches: map[string]string{}}
	want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want = byWrites(t, e, want) // written_test.go
	uids := uidOf{}
	for _, l := range want {
		uids[keygroup.OperatorIDOfUID(l.Operator)] = l.Operator
		uids[l.Operator] = l.Operator
	}
	old, nw := e.PathMap()
	snap := e.SnapshotDir()
	// The schemas the job's user would give, where the entry has them: its
	// Protobuf descriptors and the classes Kryo writes field by field.
	flags := []string{"--path-map", old + "=" + nw}
	for flag, file := range map[string]string{"--proto-descriptors": "descriptors.pb", "--kryo-classes": "kryo-classes.txt"} {
		if _, err := os.Stat(e.File(file)); err == nil {
			flags = append(flags, flag, e.File(file))
		}
	}
	// And, where the checkpoint does not record its key serializers, a
	// savepoint of the same job that does.
	from, err := e.KeySerializersFrom(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if from != "" {
		flags = append(flags, "--key-serializers-from", from)
	}

	code, out, errOut := stateutil(append([]string{"verify", "-o", "json", snap}, flags...)...)
	o.verifyCode = code
	var v struct {
		Findings   []finding    `json:"findings"`
		NotDecoded []notDecoded `json:"not_decoded"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		o.findings = []finding{{Check: "output", Message: strings.TrimSpace(errOut)}}
	}
	for _, f := range v.Findings {
		f.Operator = uids.name(f.Operator)
		o.findings = append(o.findings, f)
	}
	for _, n := range v.NotDecoded {
		n.Operator = uids.name(n.Operator)
		o.notDecoded = append(o.notDecoded, n)
	}

	code, out, errOut = stateutil(append([]string{"dump", snap}, flags...)...)
	o.dumpCode = code
	if code != 0 {
		o.dumpErr = strings.TrimSpace(errOut)
		// What it can read is still compared.
		_, out, _ = stateutil(append([]string{"dump", snap, "--skip-unreadable"}, flags...)...)
	}
	got, err := dumpLines(out, uids)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	_, out, errOut = stateutil(append([]string{"inspect", snap, "--operator-state", "--values", "-o", "json"}, flags...)...)
	elements, err := elementLines(out, uids)
	if err != nil {
		t.Fatalf("inspect: %v (%s)", err, errOut)
	}
	got = append(got, elements...)
	compare(o, want, got)

	if *report != "" {
		code, _, errOut = stateutil(append([]string{"rescale", snap, "--parallelism", "3", "--output", filepath.Join(t.TempDir(), "rescaled")}, flags...)...)
		o.rescaleCode = code
		o.rescaleErr = strings.TrimSpace(errOut)
	}
	return o
}

// compare records, per operator and state, where stateutil's lines differ
// from the job's dump.
func compare(o *outcome, want, got []flinkharness.Line) {
	group := func(ls []flinkharness.Line) map[string][]flinkharness.Line {
		m := map[string][]flinkharness.Line{}
		for _, l := range ls {
			k := l.Operator + " " + l.State
			m[k] = append(m[k], l)
		}
		return m
	}
	w, g := group(want), group(got)
	for k := range g {
		if _, ok := w[k]; !ok {
			w[k] = nil
		}
	}
	for k, wl := range w {
		if d := flinkharness.EqualDumps(wl, g[k]); d != "" {
			o.mismatches[k] = d
		}
	}
}

// dumpLines maps `stateutil dump` output onto the harness's dump lines:
// timers by their domain, operators by uid, no key group or subtask, and
// no line whose value is null, as the harness's dump format has none (an
// empty Optional is null in both).
func dumpLines(out string, uids uidOf) ([]flinkharness.Line, error) {
	var lines []flinkharness.Line
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, err
		}
		if string(m["value"]) == "null" {
			continue
		}
		var op, state string
		_ = json.Unmarshal(m["operator"], &op)
		_ = json.Unmarshal(m["state"], &state)
		switch {
		case strings.HasPrefix(state, "_timer_state/event_"):
			state = "event-time"
		case strings.HasPrefix(state, "_timer_state/processing_"):
			state = "processing-time"
		}
		l := map[string]any{"operator": uids.name(op), "state": state, "kind": m["kind"], "key": m["key"], "value": m["value"]}
		if ns, ok := m["namespace"]; ok {
			l["namespace"] = ns
		}
		if _, ok := m["ttl"]; ok {
			l["ttl"] = true
		}
		pl, err := line(l)
		if err != nil {
			return nil, err
		}
		lines = append(lines, pl)
	}
	return lines, sc.Err()
}

// elementLines maps `stateutil inspect --operator-state --values -o json`
// onto the harness's operator-state lines.
func elementLines(out string, uids uidOf) ([]flinkharness.Line, error) {
	var in struct {
		Operators []struct {
			ID     string `json:"id"`
			UID    string `json:"uid"`
			States []struct {
				Name   string `json:"name"`
				Mode   string `json:"mode"`
				Values []struct {
					Subtask int             `json:"subtask"`
					Value   json.RawMessage `json:"value"`
				} `json:"values"`
			} `json:"states"`
		} `json:"operators"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		return nil, err
	}
	var lines []flinkharness.Line
	for _, op := range in.Operators {
		name := op.UID
		if name == "" {
			name = uids.name(op.ID)
		}
		for _, st := range op.States {
			for _, v := range st.Values {
				l, err := line(map[string]any{"operator": name, "state": st.Name, "kind": st.Mode, "subtask": v.Subtask, "value": v.Value})
				if err != nil {
					return nil, err
				}
				lines = append(lines, l)
			}
		}
	}
	return lines, nil
}

func line(m map[string]any) (flinkharness.Line, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return flinkharness.Line{}, err
	}
	ls, err := flinkharness.ParseDump(raw)
	if err != nil || len(ls) != 1 {
		return flinkharness.Line{}, fmt.Errorf("line %s: %v", raw, err)
	}
	return ls[0], nil
}

// readKnownGaps reads known_gaps.txt: one gap a line, # comments.
func readKnownGaps(t *testing.T) map[string]bool {
	known, err := flinkharness.KnownGaps()
	if err != nil {
		t.Fatal(err)
	}
	return known
}

// witnessSet reads the witness snapshots: the set $STATEUTIL_FLINK_WITNESS
// names (other), else testdata/flink-witness.
func witnessSet(t *testing.T) (root string, other bool, entries []flinkharness.Entry) {
	root = os.Getenv("STATEUTIL_FLINK_WITNESS")
	if other = root != ""; !other {
		root = filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-witness")
	}
	entries, err := flinkharness.ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("no witness snapshots under %s", root)
	}
	return root, other, entries
}

// TestWitnessSnapshots reads every checked-in witness snapshot with
// stateutil and holds what it gets against the job's own dump; the gaps
// must be exactly those known_gaps.txt lists. $STATEUTIL_FLINK_WITNESS
// names another set (scripts/flink-witness-testdata.sh makes the whole one
// in <cache>/flink-witness): there a gap known_gaps.txt does not list
// fails too, but a listed one may be absent, as the list is of the
// checked-in snapshots.
func TestWitnessSnapshots(t *testing.T) {
	root, other, entries := witnessSet(t)
	name := "testdata/flink-witness"
	if other {
		name = root
	}
	known := readKnownGaps(t)
	var outcomes []*outcome
	var all []string
	for _, e := range entries {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			o := check(t, e, entries)
			outcomes = append(outcomes, o)
			for _, g := range o.gaps() {
				all = append(all, g)
				if !known[g] {
					t.Errorf("new gap (not in known_gaps.txt): %s%s", g, detail(o, g))
				}
			}
			if other {
				return
			}
			prefix := e.Manifest.FlinkVersion + "/" + e.Name + " "
			for g := range known {
				if strings.HasPrefix(g, prefix) && !slices.Contains(o.gaps(), g) {
					t.Errorf("known gap no longer there: remove it from known_gaps.txt: %s", g)
				}
			}
		})
	}
	if !other {
		ids := map[string]bool{}
		for _, e := range entries {
			ids[e.Manifest.FlinkVersion+"/"+e.Name] = true
		}
		for g := range known {
			if id, _, _ := strings.Cut(g, " "); !ids[id] {
				t.Errorf("known_gaps.txt names a snapshot testdata/flink-witness does not hold: %s", g)
			}
		}
	}
	if t.Failed() {
		sort.Strings(all)
		t.Logf("today's gaps, as known_gaps.txt would list them:\n%s", strings.Join(all, "\n"))
	}
	if *report != "" {
		if err := os.WriteFile(*report, []byte(markdown(outcomes, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// detail is what a dump difference looks like, for a gap's message.
func detail(o *outcome, gap string) string {
	for k, d := range o.mismatches {
		if strings.HasSuffix(gap, " dump-differs "+k) {
			return "\n" + d
		}
	}
	return ""
}
