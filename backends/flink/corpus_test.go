package flink

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// The corpus tests read real Flink snapshots made by testenv/flink and
// compare every entry stateutil reads with the dump the job itself wrote
// while Flink took the snapshot (dump.jsonl, see testenv/flink/README.md).

// recordLine maps what `stateutil dump` prints for one key (a
// lookup.Record) onto a line of the harness's dump format: the one place
// the two vocabularies meet. Timers are named by their domain there.
func recordLine(rec *lookup.Record) (flinkharness.Line, error) {
	m := map[string]any{"operator": rec.Operator, "state": rec.State, "kind": string(rec.Kind), "key": rec.Key, "value": rec.Value}
	if rec.Namespace != nil {
		m["namespace"] = rec.Namespace
	}
	if rec.Kind == snapshot.Timer {
		switch {
		case strings.HasPrefix(rec.State, "_timer_state/event_"):
			m["state"] = "event-time"
		case strings.HasPrefix(rec.State, "_timer_state/processing_"):
			m["state"] = "processing-time"
		}
	}
	if rec.TTL != nil {
		m["ttl"] = true
	}
	return lineOf(m)
}

// elementLine maps one decoded operator-state element onto a dump line.
func elementLine(op *snapshot.Operator, st *snapshot.OperatorState, subtask int, value any) (flinkharness.Line, error) {
	return lineOf(map[string]any{"operator": op.Label(), "state": st.Name, "kind": string(st.Mode), "subtask": subtask, "value": value})
}

func lineOf(m map[string]any) (flinkharness.Line, error) {
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

// readAsDump reads a whole snapshot the way `stateutil dump` and
// `inspect --operator-state --values` do and returns it as dump lines,
// and the unreadable parts the reader marked.
func readAsDump(ctx context.Context, t testing.TB, location string, opts snapshot.OpenOptions) ([]flinkharness.Line, []snapshot.UnreadablePart, error) {
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	r, err := testReg.Open(ctx, location, opts)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	parts := snapshot.UnreadableParts(r.Snapshot())
	var lines []flinkharness.Line
	err = lookup.Dump(ctx, r, testReg.Codecs, lookup.Filter{Subtask: -1}, func(rec *lookup.Record) error {
		l, err := recordLine(rec)
		lines = append(lines, l)
		return err
	})
	if err != nil {
		return lines, parts, err
	}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return lines, parts, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
				}
				st, ok := op.OperatorStateByName(el.State)
				if !ok {
					return lines, parts, fmt.Errorf("operator %q: element of undeclared state %q", op.Label(), el.State)
				}
				l, err := elementLine(op, st, sub.Index, testReg.Codecs.Decode(st.ElementType, el.Value))
				if err != nil {
					return lines, parts, err
				}
				lines = append(lines, l)
			}
		}
	}
	return lines, parts, nil
}

// corpusResult is how one corpus entry read.
type corpusResult struct {
	entry flinkharness.Entry
	fully bool   // every entry read and equals the job's dump
	err   string // what differs or failed ("" when what was read is right)
	parts []snapshot.UnreadablePart
	// gaps are the entry's states left out of the comparison because the
	// witness jobs' known gaps list them as dumped otherwise than the job
	// holds them ("OPERATOR STATE").
	gaps []string
}

// knownDumpGaps are the states of an entry ("VERSION/NAME") that the
// witness jobs' known gaps list as "dump-differs OPERATOR STATE".
func knownDumpGaps(t testing.TB, entry string) map[[2]string]bool {
	known, err := flinkharness.KnownGaps()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]bool{}
	for gap := range known {
		f := strings.Fields(gap)
		if len(f) == 4 && f[0] == entry && f[1] == "dump-differs" {
			out[[2]string{f[2], f[3]}] = true
		}
	}
	return out
}

// timerDomain names a timer state as the dump does.
func timerDomain(state string) string {
	switch {
	case strings.HasPrefix(state, "_timer_state/event_"):
		return "event-time"
	case strings.HasPrefix(state, "_timer_state/processing_"):
		return "processing-time"
	}
	return state
}

// checkEntry reads one corpus entry and compares it with its dump. State
// the reader marked unreadable is left out of the comparison (and the
// entry is not read fully); everything else must be equal.
func checkEntry(ctx context.Context, t testing.TB, e flinkharness.Entry, corpus []flinkharness.Entry) corpusResult {
	res := corpusResult{entry: e}
	old, nw := e.PathMap()
	opts := snapshot.OpenOptions{PathMap: map[string]string{old: nw}}
	// A checkpoint that records no key serializer is read as its user
	// would: with a savepoint of the same job that records them.
	from, err := e.KeySerializersFrom(corpus)
	if err != nil {
		res.err = err.Error()
		return res
	}
	if from != "" {
		opts.Schemas = &snapshot.Schemas{KeySerializersFrom: from}
	}
	lines, parts, err := readAsDump(ctx, t, e.SnapshotDir(), opts)
	res.parts = parts
	if err != nil {
		res.err = "read: " + err.Error()
		return res
	}
	want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
	if err != nil {
		res.err = "dump.jsonl: " + err.Error()
		return res
	}
	uids := map[string]string{}
	for _, l := range want {
		uids[uidHash(l.Operator)] = l.Operator
	}
	unread := func(l flinkharness.Line) bool {
		for _, p := range parts {
			op := p.Operator
			if u, ok := uids[op]; ok {
				op = u
			}
			scope := snapshot.ScopeOperator
			if l.Keyed() {
				scope = snapshot.ScopeKeyed
			}
			if op == l.Operator && p.Scope == scope && (p.State == "" || timerDomain(p.State) == l.State) {
				return true
			}
		}
		return false
	}
	gaps := knownDumpGaps(t, e.Manifest.FlinkVersion+"/"+e.Name)
	for g := range gaps {
		res.gaps = append(res.gaps, g[0]+" "+g[1])
	}
	slices.Sort(res.gaps)
	outsideGaps := func(ls []flinkharness.Line) []flinkharness.Line {
		var kept []flinkharness.Line
		for _, l := range ls {
			if !gaps[[2]string{l.Operator, l.State}] {
				kept = append(kept, l)
			}
		}
		return kept
	}
	var kept []flinkharness.Line
	for _, l := range want {
		if !unread(l) {
			kept = append(kept, l)
		}
	}
	res.err = flinkharness.EqualDumps(withoutKryoText(outsideGaps(kept)), withoutKryoText(outsideGaps(byUID(lines, want))))
	if res.err == "" {
		res.err = verifyFindings(ctx, t, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
	}
	res.fully = res.err == "" && len(gaps) == 0 && (len(parts) == 0 || onlyUnwalkable(e.Manifest, parts))
	return res
}

// unwalkable are the states of corpus jobs, by job, whose values no reader
// can take apart in heap key groups: a list of a user class that Kryo
// writes with its FieldSerializer, which records no length and a layout
// only the class knows. Such a state is marked unreadable, never read as
// empty; every other state is read.
var unwalkable = map[string][]string{"heapkryo": {"events"}}

// onlyUnwalkable reports whether the unreadable parts of an entry are
// exactly its job's unwalkable states, each for the serializer that
// cannot be walked.
func onlyUnwalkable(m flinkharness.Manifest, parts []snapshot.UnreadablePart) bool {
	states := unwalkable[m.Job]
	marked := map[string]bool{}
	for _, p := range parts {
		if p.Scope != snapshot.ScopeKeyed || !slices.Contains(states, p.State) || p.Damaged ||
			!strings.Contains(p.Reason, "KryoSerializerSnapshot writes no length") {
			return false
		}
		marked[p.State] = true
	}
	return len(marked) == len(states)
}

// verifyFindings checks a snapshot as `verify` does and lists its findings
// but those on state the reader marked unreadable.
func verifyFindings(ctx context.Context, t testing.TB, location string, opts snapshot.OpenOptions) string {
	r, err := testReg.Open(ctx, location, opts)
	if err != nil {
		return "verify: " + err.Error()
	}
	defer r.Close()
	res, err := verify.Check(ctx, location, r, testReg.Codecs)
	if err != nil {
		return "verify: " + err.Error()
	}
	var out []string
	for _, f := range res.Findings {
		if f.Check != verify.CheckUnreadable {
			out = append(out, f.String())
		}
	}
	return strings.Join(out, "\n")
}

// corpusTable renders read-fully counts by Flink version, backend and kind.
func corpusTable(results []corpusResult) string {
	type cell struct{ ok, total int }
	cells := map[string]*cell{}
	var keys []string
	for _, r := range results {
		m := r.entry.Manifest
		kind := m.Kind
		for _, f := range []struct {
			on   bool
			name string
		}{{m.Incremental, "incremental"}, {m.Compression, "compressed"}, {m.Changelog, "changelog"}} {
			if f.on {
				kind += "+" + f.name
			}
		}
		k := fmt.Sprintf("%-7s %-8s %-9s %s", m.FlinkVersion, m.Job, m.Backend, kind)
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
			keys = append(keys, k)
		}
		c.total++
		if r.fully {
			c.ok++
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	ok, total := 0, 0
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s: %d/%d\n", k, cells[k].ok, cells[k].total)
		ok += cells[k].ok
		total += cells[k].total
	}
	fmt.Fprintf(&sb, "read fully: %d of %d entries\n", ok, total)
	return sb.String()
}

func checkCorpus(t *testing.T, root string) {
	entries, err := flinkharness.ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("no corpus entries under %s", root)
	}
	var results []corpusResult
	for _, e := range entries {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			res := checkEntry(context.Background(), t, e, entries)
			results = append(results, res)
			switch {
			case res.err != "":
				t.Error(res.err)
			case !res.fully && len(res.gaps) > 0 && (len(res.parts) == 0 || onlyUnwalkable(e.Manifest, res.parts)):
				t.Logf("not compared, the witness jobs' known gaps: %s", strings.Join(res.gaps, ", "))
			case !res.fully:
				t.Errorf("not read fully: %v", res.parts)
			}
		})
	}
	t.Logf("corpus %s:\n%s", root, corpusTable(results))
}

// TestCheckedInCorpusReads reads every entry of testdata/flink down to
// every value.
func TestCheckedInCorpusReads(t *testing.T) {
	checkCorpus(t, filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
}

// TestGeneratedCorpusReads reads a corpus made by scripts/flink-corpus.sh:
// $STATEUTIL_FLINK_CORPUS, else <cache>/flink-corpus when it exists.
func TestGeneratedCorpusReads(t *testing.T) {
	checkCorpus(t, generatedCorpus(t))
}

// generatedCorpus is $STATEUTIL_FLINK_CORPUS, else <cache>/flink-corpus;
// the test skips when there is none.
func generatedCorpus(t *testing.T) string {
	root := os.Getenv("STATEUTIL_FLINK_CORPUS")
	if root == "" {
		cache := os.Getenv("STATEUTIL_CACHE_DIR")
		if cache == "" {
			cache = filepath.Join(flinkharness.RepoRoot(), ".cache")
		}
		root = filepath.Join(cache, "flink-corpus")
	}
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no generated corpus at %s (scripts/flink-corpus.sh makes one)", root)
	}
	return root
}

// uidHash is the OperatorID Flink gives an operator with a uid (Guava's
// murmur3_128 with seed 0 over the uid's UTF-8 bytes, FLINK-FORMATS.md
// §8), as the hex of its 16 bytes: how a uid is found in a `_metadata`
// older than version 5, which records no uids.
func uidHash(uid string) string {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	data := []byte(uid)
	var h1, h2 uint64
	fmix := func(k uint64) uint64 {
		k ^= k >> 33
		k *= 0xff51afd7ed558ccd
		k ^= k >> 33
		k *= 0xc4ceb9fe1a85ec53
		return k ^ k>>33
	}
	mixK1 := func(k uint64) uint64 { k *= c1; k = bits.RotateLeft64(k, 31); return k * c2 }
	mixK2 := func(k uint64) uint64 { k *= c2; k = bits.RotateLeft64(k, 33); return k * c1 }
	n := len(data)
	for len(data) >= 16 {
		k1, k2 := binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
		h1 ^= mixK1(k1)
		h1 = bits.RotateLeft64(h1, 27) + h2
		h1 = h1*5 + 0x52dce729
		h2 ^= mixK2(k2)
		h2 = bits.RotateLeft64(h2, 31) + h1
		h2 = h2*5 + 0x38495ab5
		data = data[16:]
	}
	var tail [16]byte
	copy(tail[:], data)
	if len(data) > 8 {
		h2 ^= mixK2(binary.LittleEndian.Uint64(tail[8:]))
	}
	if len(data) > 0 {
		h1 ^= mixK1(binary.LittleEndian.Uint64(tail[:]))
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix(h1), fmix(h2)
	h1 += h2
	h2 += h1
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:], h1)
	binary.LittleEndian.PutUint64(out[8:], h2)
	return hex.EncodeToString(out[:])
}

// byUID renames operators of lines to the uid the dump knows them by,
// where the snapshot records only the uid's hash.
func byUID(lines []flinkharness.Line, want []flinkharness.Line) []flinkharness.Line {
	ids := map[string]string{}
	for _, l := range want {
		ids[uidHash(l.Operator)] = l.Operator
	}
	out := make([]flinkharness.Line, 0, len(lines))
	for _, l := range lines {
		if uid, ok := ids[l.Operator]; ok {
			var m map[string]json.RawMessage
			_ = json.Unmarshal([]byte(l.Raw), &m)
			m["operator"], _ = json.Marshal(uid)
			raw, _ := json.Marshal(m)
			if ls, err := flinkharness.ParseDump(raw); err == nil && len(ls) == 1 {
				l = ls[0]
			}
		}
		out = append(out, l)
	}
	return out
}

func TestUIDHash(t *testing.T) {
	// The operator ids Flink 1.20.5 wrote for these uids (testdata/flink).
	for uid, id := range map[string]string{"keyed": "e7beec23fd9f6ed5e1b8395129d43728"} {
		if got := uidHash(uid); got != id {
			t.Errorf("uidHash(%q) = %s, want %s", uid, got, id)
		}
	}
}

// javaCollectionText turns the job's dump of a Kryo ArrayList, HashSet or
// HashMap, its Java toString ("[192, 576]", "{a=3, n=null}"), back into
// JSON: an array (in the iteration order Kryo writes too), or an object; an item that reads as an integer is a number,
// "null" is null, anything else a string. The corpus's collections hold
// single words and integers, so the text is not ambiguous there.
func javaCollectionText(x map[string]any) (any, bool) {
	text, _ := x["toString"].(string)
	if len(x) != 2 || len(text) < 2 {
		return nil, false
	}
	var items []string
	if inner := text[1 : len(text)-1]; inner != "" {
		items = strings.Split(inner, ", ")
	}
	item := func(w string) any {
		if _, err := strconv.ParseInt(w, 10, 64); err == nil {
			return json.Number(w)
		}
		if w == "null" {
			return nil
		}
		return w
	}
	switch {
	case (x["class"] == "java.util.ArrayList" || x["class"] == "java.util.HashSet") && text[0] == '[' && text[len(text)-1] == ']':
		out := []any{}
		for _, w := range items {
			out = append(out, item(w))
		}
		return out, true
	case x["class"] == "java.util.HashMap" && text[0] == '{' && text[len(text)-1] == '}':
		out := map[string]any{}
		for _, kv := range items {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, false
			}
			out[k] = item(v)
		}
		return out, true
	}
	return nil, false
}

// withoutKryoText keeps only the class of values that are not decoded: the
// job dumps a Kryo value's toString, which its bytes cannot give (Kryo
// writes fields by the class's own layout, which no snapshot records);
// stateutil shows the class and the bytes, tagged.
func withoutKryoText(lines []flinkharness.Line) []flinkharness.Line {
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if v, ok := javaCollectionText(x); ok {
				return v
			}
			// A Kryo value decoded and tagged with its class: the job's
			// text (javaCollectionText) carries no class.
			if _, ok := x["@class"]; ok && len(x) == 2 {
				if v, ok := x["@value"]; ok {
					return strip(v)
				}
			}
			if _, ok := x["class"]; ok && len(x) == 2 && x["toString"] != nil {
				return map[string]any{"class": x["class"]}
			}
			if _, ok := x["@class"]; ok && len(x) == 2 && x["@bytes"] != nil {
				return map[string]any{"class": x["@class"]}
			}
			for k, e := range x {
				x[k] = strip(e)
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return v
	}
	out := make([]flinkharness.Line, 0, len(lines))
	for _, l := range lines {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(l.Raw))
		dec.UseNumber()
		if dec.Decode(&m) == nil {
			m["value"] = strip(m["value"])
			if nl, err := lineOf(m); err == nil {
				l = nl
			}
		}
		out = append(out, l)
	}
	return out
}

// TestUnwalkableHeapStateNotDecoded: verify calls a snapshot with an
// unwalkable heap state healthy, and counts that state as not decoded, by
// its serializer, with as many values as the job holds entries of it (the
// corpus tests leave unreadable state aside, as they compare what is
// read).
func TestUnwalkableHeapStateNotDecoded(t *testing.T) {
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		states := unwalkable[e.Manifest.Job]
		if states == nil {
			continue
		}
		n++
		dump, err := flinkharness.ReadDump(e.File("dump.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{}
		for _, l := range dump {
			if slices.Contains(states, l.State) {
				want[l.State]++
			}
		}
		old, nw := e.PathMap()
		r, err := testReg.Open(context.Background(), e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Check(context.Background(), e.SnapshotDir(), r, testReg.Codecs)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, d := range res.NotDecoded {
			if d.Part == verify.PartState && !d.Uncounted && d.Serializer == "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot" {
				got[d.State] += d.Count
			}
		}
		if !res.OK || !maps.Equal(got, want) {
			t.Errorf("%s/%s: verify OK=%v, findings %v, not decoded %+v; want OK and, not decoded by state, %v",
				e.Manifest.FlinkVersion, e.Name, res.OK, res.Findings, res.NotDecoded, want)
		}
	}
	if n == 0 {
		t.Fatal("no corpus entry of a job with unwalkable states")
	}
}
