// Package formattest is the conformance suite every writable snapshot
// format passes on every storage (ARCHITECTURE.md convention 10, after
// restic's internal/backend/test): adding a format or a storage means
// calling Run with a constructor of fresh locations.
//
// The suite writes random snapshots (snaptest.Random, several seeds, max
// parallelism 128 and 4096) through Format.Create, and checks that
// snapshot.Open reads back exactly what was written: every entry, element
// and raw blob, the figures inspect shows, single key-group reads; that
// Abort leaves nothing a reader accepts; and that an existing snapshot is
// refused unless Force is set.
package formattest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/azure"
	"github.com/stateutil/stateutil/storage/gcs"
	"github.com/stateutil/stateutil/storage/s3"
)

// Config tunes the suite; zero fields take the defaults.
type Config struct {
	// Seeds of the random snapshots; default 1, 2, 16 (two operators and
	// ten subtasks; one operator and one subtask; every state kind count).
	Seeds []uint64
	// MaxParallelisms every operator of a random snapshot is given;
	// default 128 and 4096 (one- and two-byte key-group prefixes).
	MaxParallelisms []int
	// Keys per keyed operator; default 150.
	Keys int
}

func (c Config) withDefaults() Config {
	if len(c.Seeds) == 0 {
		c.Seeds = []uint64{1, 2, 16}
	}
	if len(c.MaxParallelisms) == 0 {
		c.MaxParallelisms = []int{128, 4096}
	}
	if c.Keys == 0 {
		c.Keys = 150
	}
	return c
}

// Registry is a registry with local disk, HDFS, S3, GCS and Azure storage and what
// the given functions register (each backend's Register), for tests.
func Registry(register ...func(*snapshot.Registry)) *snapshot.Registry {
	st := storage.NewRegistry()
	st.Register("hdfs", storage.HDFSOpener(nil))
	s3.Register(st, nil)
	gcs.Register(st, nil)
	azure.Register(st, nil)
	reg := snapshot.NewRegistry(st)
	for _, r := range register {
		r(reg)
	}
	return reg
}

// Run runs the suite with the default Config. newLocation returns a
// location (plain path or URI) that does not exist yet and whose parent
// does; it is called once per snapshot and should register its own
// cleanup.
func Run(t *testing.T, newLocation func(t *testing.T) string, format *snapshot.Format) {
	RunWith(t, newLocation, format, Config{})
}

// RunWith runs the suite with c.
func RunWith(t *testing.T, newLocation func(t *testing.T) string, format *snapshot.Format, c Config) {
	t.Helper()
	if format.Create == nil {
		t.Fatalf("format %s is read-only", format.Name)
	}
	c = c.withDefaults()
	s := &suite{newLocation: newLocation, reg: Registry(func(r *snapshot.Registry) { r.Register(format) }), format: format, cfg: c}
	for _, seed := range c.Seeds {
		for _, maxP := range c.MaxParallelisms {
			t.Run(fmt.Sprintf("seed=%d/maxP=%d", seed, maxP), func(t *testing.T) { s.roundTrip(t, seed, maxP) })
		}
	}
	t.Run("OpenMissing", s.openMissing)
	t.Run("AbortLeavesNothing", s.abort)
	t.Run("ExistingRefusedWithoutForce", s.existing)
	t.Run("UnwrittenSubtasksAreEmpty", s.unwritten)
}

type suite struct {
	newLocation func(t *testing.T) string
	reg         *snapshot.Registry
	format      *snapshot.Format
	cfg         Config
}

var ctx = context.Background()

func probe(reg *snapshot.Registry, f *snapshot.Format, loc string) (bool, error) {
	st, p, err := reg.Storage.Resolve(ctx, loc)
	if err != nil {
		return false, err
	}
	return f.Probe(ctx, st, p)
}

// Expected is what a test wrote: the topology as given to Commit (before
// the writer filled in anything) and every subtask's state, by operator
// label, entries in canonical order.
type Expected struct {
	Snapshot *snapshot.Snapshot
	State    map[string][]snaptest.Subtask
}

// randomSnapshot is snaptest.Random with every operator at maxP.
func randomSnapshot(seed uint64, maxP int) (*snapshot.Snapshot, *rand.Rand) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	s := snaptest.Random(rng)
	for _, op := range s.Operators {
		op.MaxParallelism = maxP
	}
	return s, rng
}

// clone copies a topology deeply enough that a writer's Commit, which
// may fill in Format and Subtasks, leaves the copy alone.
func clone(s *snapshot.Snapshot) *snapshot.Snapshot {
	c := *s
	c.Operators = nil
	for _, op := range s.Operators {
		o := *op
		o.KeyedStates = slices.Clone(op.KeyedStates)
		o.OperatorStates = slices.Clone(op.OperatorStates)
		o.Subtasks = nil
		c.Operators = append(c.Operators, &o)
	}
	return &c
}

// Write writes the random snapshot of seed and maxP to loc through
// format.Create and returns what it wrote. Odd subtasks also get raw
// state.
func Write(t testing.TB, reg *snapshot.Registry, format *snapshot.Format, loc string, seed uint64, maxP, keys int, opts snapshot.WriteOptions) *Expected {
	t.Helper()
	s, rng := randomSnapshot(seed, maxP)
	exp := &Expected{Snapshot: clone(s), State: map[string][]snaptest.Subtask{}}
	for _, op := range s.Operators {
		exp.State[op.Label()] = make([]snaptest.Subtask, op.Parallelism)
	}
	w, err := reg.Create(ctx, format, loc, opts)
	if err != nil {
		t.Fatalf("%s Create(%s): %v", format.Name, loc, err)
	}
	if err := snaptest.Write(ctx, &tee{w: w, exp: exp}, s, keys, rng); err != nil {
		w.Abort(ctx)
		t.Fatalf("%s write to %s: %v", format.Name, loc, err)
	}
	for label, subs := range exp.State {
		op, _ := exp.Snapshot.Operator(label)
		for i := range subs {
			snaptest.Canonical(subs[i].Entries)
			slices.SortStableFunc(subs[i].Elements, func(a, b snapshot.Element) int {
				return descriptorIndex(op, a.State) - descriptorIndex(op, b.State)
			})
		}
	}
	return exp
}

func descriptorIndex(op *snapshot.Operator, state string) int {
	for i := range op.OperatorStates {
		if op.OperatorStates[i].Name == state {
			return i
		}
	}
	return len(op.OperatorStates)
}

// tee passes a write through to w and records it in exp.
type tee struct {
	w   snapshot.Writer
	exp *Expected
}

func (t *tee) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	sw, err := t.w.Subtask(ctx, op, index, kgs)
	if err != nil {
		return nil, err
	}
	return &teeSubtask{sw: sw, rec: &t.exp.State[op.Label()][index], index: index, label: op.Label()}, nil
}

func (t *tee) Commit(ctx context.Context, s *snapshot.Snapshot) error { return t.w.Commit(ctx, s) }
func (t *tee) Abort(ctx context.Context) error                        { return t.w.Abort(ctx) }

type teeSubtask struct {
	sw    snapshot.SubtaskWriter
	rec   *snaptest.Subtask
	index int
	label string
}

func (t *teeSubtask) Entry(e *snapshot.Entry) error {
	t.rec.Entries = append(t.rec.Entries, e.Clone())
	return t.sw.Entry(e)
}

func (t *teeSubtask) Element(state string, value []byte) error {
	t.rec.Elements = append(t.rec.Elements, snapshot.Element{State: state, Subtask: t.index, Value: bytes.Clone(value)})
	return t.sw.Element(state, value)
}

func (t *teeSubtask) Raw(raw snapshot.RawState) error {
	t.rec.Raw = snapshot.RawState{Keyed: bytes.Clone(raw.Keyed), Operator: bytes.Clone(raw.Operator)}
	return t.sw.Raw(raw)
}

func (t *teeSubtask) Close() error {
	if t.index%2 == 1 {
		raw := snapshot.RawState{Keyed: fmt.Appendf(nil, "raw-keyed/%s/%d", t.label, t.index)}
		if t.index%4 == 1 {
			raw.Operator = fmt.Appendf(nil, "raw-operator/%s/%d", t.label, t.index)
		}
		if err := t.Raw(raw); err != nil {
			return err
		}
	}
	return t.sw.Close()
}

func (s *suite) roundTrip(t *testing.T, seed uint64, maxP int) {
	loc := s.newLocation(t)
	exp := Write(t, s.reg, s.format, loc, seed, maxP, s.cfg.Keys, snapshot.WriteOptions{})
	r := open(t, s.reg, loc)
	defer r.Close()
	if got := r.Snapshot().Format; got != s.format.Name {
		t.Errorf("snapshot.Open detected format %q, want %q", got, s.format.Name)
	}
	t.Run("Content", func(t *testing.T) { CheckContent(t, r, exp) })
	t.Run("Summary", func(t *testing.T) { checkSummary(t, loc, r, exp) })
	t.Run("SingleKeyGroup", func(t *testing.T) { checkSingleKeyGroups(t, r, exp) })
}

func open(t testing.TB, reg *snapshot.Registry, loc string) snapshot.Reader {
	t.Helper()
	r, err := reg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("snapshot.Open(%s): %v", loc, err)
	}
	return r
}

// CheckContent asserts that r holds exactly exp: topology, and every
// subtask's entries, elements and raw state.
func CheckContent(t testing.TB, r snapshot.Reader, exp *Expected) {
	t.Helper()
	got := r.Snapshot()
	want := exp.Snapshot
	if got.JobID != want.JobID || got.CheckpointID != want.CheckpointID || got.Kind != want.Kind || !got.Created.Equal(want.Created) {
		t.Errorf("snapshot header %s/%d/%s/%v, want %s/%d/%s/%v", got.JobID, got.CheckpointID, got.Kind, got.Created,
			want.JobID, want.CheckpointID, want.Kind, want.Created)
	}
	if len(got.Operators) != len(want.Operators) {
		t.Fatalf("%d operators, want %d", len(got.Operators), len(want.Operators))
	}
	for i, w := range want.Operators {
		g := got.Operators[i]
		if g.ID != w.ID || g.UID != w.UID || g.Name != w.Name || g.Parallelism != w.Parallelism || g.MaxParallelism != w.MaxParallelism {
			t.Errorf("operator %d is %s/%s/%q p=%d maxP=%d, want %s/%s/%q p=%d maxP=%d", i,
				g.ID, g.UID, g.Name, g.Parallelism, g.MaxParallelism, w.ID, w.UID, w.Name, w.Parallelism, w.MaxParallelism)
		}
		if !sameDescriptors(g.KeyedStates, w.KeyedStates) || !sameDescriptors(g.OperatorStates, w.OperatorStates) {
			t.Errorf("operator %s: state descriptors\n%+v %+v\nwant\n%+v %+v", w.Label(), g.KeyedStates, g.OperatorStates, w.KeyedStates, w.OperatorStates)
		}
		if len(g.Subtasks) != w.Parallelism {
			t.Errorf("operator %s: %d subtasks, want %d", w.Label(), len(g.Subtasks), w.Parallelism)
		}
		for j, sub := range g.Subtasks {
			if want := keygroup.RangeOf(w.MaxParallelism, w.Parallelism, j); sub.Index != j || sub.KeyGroups != want {
				t.Errorf("operator %s: subtask %d is index %d with key groups %v, want %v", w.Label(), j, sub.Index, sub.KeyGroups, want)
			}
		}
	}
	all, err := snaptest.Collect(ctx, r)
	if err != nil {
		t.Fatalf("reading everything: %v", err)
	}
	for label, want := range exp.State {
		got := all[label]
		if len(got) != len(want) {
			t.Errorf("operator %s: read %d subtasks, want %d", label, len(got), len(want))
			continue
		}
		for i := range want {
			if ok, diff := snaptest.EqualEntries(want[i].Entries, got[i].Entries); !ok {
				t.Errorf("operator %s subtask %d entries differ: %s", label, i, diff)
			}
			if ok, diff := equalElements(want[i].Elements, got[i].Elements); !ok {
				t.Errorf("operator %s subtask %d elements differ: %s", label, i, diff)
			}
			if !bytes.Equal(want[i].Raw.Keyed, got[i].Raw.Keyed) || !bytes.Equal(want[i].Raw.Operator, got[i].Raw.Operator) {
				t.Errorf("operator %s subtask %d raw state %q/%q, want %q/%q", label, i, got[i].Raw.Keyed, got[i].Raw.Operator, want[i].Raw.Keyed, want[i].Raw.Operator)
			}
		}
	}
}

func sameDescriptors[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalElements(a, b []snapshot.Element) (bool, string) {
	for i := range min(len(a), len(b)) {
		if a[i].State != b[i].State || a[i].Subtask != b[i].Subtask || !bytes.Equal(a[i].Value, b[i].Value) {
			return false, fmt.Sprintf("element %d: %s/%d/%q vs %s/%d/%q", i, a[i].State, a[i].Subtask, a[i].Value, b[i].State, b[i].Subtask, b[i].Value)
		}
	}
	if len(a) != len(b) {
		return false, fmt.Sprintf("%d elements vs %d", len(a), len(b))
	}
	return true, ""
}

// checkSummary compares what inspect shows (report.Summarize with
// subtasks, and the --key-groups distribution) with what was written.
func checkSummary(t *testing.T, loc string, r snapshot.Reader, exp *Expected) {
	sum, err := report.Summarize(ctx, loc, r, true)
	if err != nil {
		t.Fatalf("report.Summarize: %v", err)
	}
	var totals report.Totals
	for i, op := range exp.Snapshot.Operators {
		row := sum.Operators[i]
		var opTot report.OperatorSummary
		for j, sub := range exp.State[op.Label()] {
			var ke, kb, oe, ob int64
			for _, e := range sub.Entries {
				ke++
				kb += e.Size()
			}
			for _, el := range sub.Elements {
				oe++
				ob += int64(len(el.Value))
			}
			if j < len(row.Subtasks) {
				s := row.Subtasks[j]
				if s.Index != j || s.KeyGroups != keygroup.RangeOf(op.MaxParallelism, op.Parallelism, j) ||
					s.KeyedEntries != ke || s.KeyedBytes != kb || s.OperatorElements != oe || s.OperatorBytes != ob {
					t.Errorf("operator %s subtask %d: summary %+v, wrote %d entries / %d bytes, %d elements / %d bytes",
						op.Label(), j, s, ke, kb, oe, ob)
				}
			}
			opTot.KeyedEntries += ke
			opTot.KeyedBytes += kb
			opTot.OperatorElements += oe
			opTot.OperatorBytes += ob
		}
		if len(row.Subtasks) != op.Parallelism {
			t.Errorf("operator %s: %d subtask rows, want %d", op.Label(), len(row.Subtasks), op.Parallelism)
		}
		if row.UID != op.UID || row.Parallelism != op.Parallelism || row.MaxParallelism != op.MaxParallelism ||
			row.KeyedEntries != opTot.KeyedEntries || row.KeyedBytes != opTot.KeyedBytes ||
			row.OperatorElements != opTot.OperatorElements || row.OperatorBytes != opTot.OperatorBytes {
			t.Errorf("operator %s: summary %s p=%d maxP=%d %d/%d entries/bytes %d/%d elements/bytes; wrote %d/%d %d/%d",
				op.Label(), row.UID, row.Parallelism, row.MaxParallelism, row.KeyedEntries, row.KeyedBytes, row.OperatorElements, row.OperatorBytes,
				opTot.KeyedEntries, opTot.KeyedBytes, opTot.OperatorElements, opTot.OperatorBytes)
		}
		totals.Operators++
		totals.Subtasks += op.Parallelism
		totals.KeyedEntries += opTot.KeyedEntries
		totals.KeyedBytes += opTot.KeyedBytes
		totals.OperatorElements += opTot.OperatorElements
		totals.OperatorBytes += opTot.OperatorBytes
	}
	if sum.Totals != totals {
		t.Errorf("summary totals %+v, wrote %+v", sum.Totals, totals)
	}

	kgs, err := report.KeyGroupDistribution(ctx, loc, r, "")
	if err != nil {
		t.Fatalf("report.KeyGroupDistribution: %v", err)
	}
	// Only key groups that hold state are compared: formats that record
	// per-key-group figures in their metadata (filesystem, rocksdb) also
	// report the empty ones, the memory format does not.
	got := map[string][]report.KeyGroupRow{}
	for _, o := range kgs.Operators {
		got[o.UID] = []report.KeyGroupRow{}
		for _, row := range o.KeyGroups {
			if row.Entries != 0 || row.Bytes != 0 {
				got[o.UID] = append(got[o.UID], row)
			}
		}
	}
	for _, op := range exp.Snapshot.Operators {
		if len(op.KeyedStates) == 0 {
			continue
		}
		var want []report.KeyGroupRow
		for j, sub := range exp.State[op.Label()] {
			for _, e := range sub.Entries {
				if n := len(want); n == 0 || want[n-1].KeyGroup != e.KeyGroup {
					want = append(want, report.KeyGroupRow{KeyGroup: e.KeyGroup, Subtask: j})
				}
				want[len(want)-1].Entries++
				want[len(want)-1].Bytes += e.Size()
			}
		}
		if want == nil {
			want = []report.KeyGroupRow{}
		}
		if ok, diff := equalRows(got[op.UID], want); !ok {
			t.Errorf("operator %s: key-group rows differ: %s", op.Label(), diff)
		}
	}
}

func equalRows(a, b []report.KeyGroupRow) (bool, string) {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return false, fmt.Sprintf("row %d: %+v, want %+v", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return false, fmt.Sprintf("%d rows, want %d", len(a), len(b))
	}
	return true, ""
}

// checkSingleKeyGroups reads key groups one at a time: a sample of those
// holding state and of empty ones, and a range outside the subtask.
func checkSingleKeyGroups(t *testing.T, r snapshot.Reader, exp *Expected) {
	checked := 0
	for _, op := range r.Snapshot().Operators {
		if len(op.KeyedStates) == 0 {
			continue
		}
		for j, sub := range exp.State[op.Label()] {
			byKG := map[int][]snapshot.Entry{}
			var kgs []int
			for _, e := range sub.Entries {
				if byKG[e.KeyGroup] == nil {
					kgs = append(kgs, e.KeyGroup)
				}
				byKG[e.KeyGroup] = append(byKG[e.KeyGroup], e)
			}
			rng := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, j)
			sample := kgs
			if len(sample) > 12 {
				sample = []int{kgs[0], kgs[len(kgs)/3], kgs[len(kgs)/2], kgs[2*len(kgs)/3], kgs[len(kgs)-1]}
			}
			for _, kg := range []int{rng.Start, rng.End, (rng.Start + rng.End) / 2} {
				if byKG[kg] == nil {
					sample = append(sample, kg)
				}
			}
			for _, kg := range sample {
				var got []snapshot.Entry
				for e, err := range r.Entries(ctx, op, j, keygroup.Range{Start: kg, End: kg}) {
					if err != nil {
						t.Fatalf("operator %s subtask %d key group %d: %v", op.Label(), j, kg, err)
					}
					got = append(got, e.Clone())
				}
				snaptest.Canonical(got)
				if ok, diff := snaptest.EqualEntries(byKG[kg], got); !ok {
					t.Errorf("operator %s subtask %d key group %d: %s", op.Label(), j, kg, diff)
				}
				checked++
			}
			// Key groups of another subtask: nothing.
			if op.Parallelism > 1 {
				other := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, (j+1)%op.Parallelism)
				for e, err := range r.Entries(ctx, op, j, other) {
					t.Errorf("operator %s subtask %d: reading key groups %v of another subtask yields %+v, %v", op.Label(), j, other, e, err)
					break
				}
			}
		}
	}
	t.Logf("%d single key-group reads", checked)
}

func (s *suite) openMissing(t *testing.T) {
	loc := s.newLocation(t)
	if r, err := s.reg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()}); !errors.Is(err, snapshot.ErrNotFound) {
		if err == nil {
			r.Close()
		}
		t.Fatalf("snapshot.Open of a location never written = %v, want snapshot.ErrNotFound", err)
	}
}

// abort writes part of a snapshot, and then all of one, and aborts each:
// neither leaves anything snapshot.Open accepts, and the location can be
// written afresh without Force.
func (s *suite) abort(t *testing.T) {
	for _, partial := range []bool{true, false} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) {
			loc := s.newLocation(t)
			snap, rng := randomSnapshot(15, 128) // five subtasks
			w, err := s.reg.Create(ctx, s.format, loc, snapshot.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			written := 0
		ops:
			for _, op := range snap.Operators {
				for idx := range op.Parallelism {
					if partial && written == 2 {
						// Leave the third subtask open, half written.
						sw, err := w.Subtask(ctx, op, idx, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx))
						if err != nil {
							t.Fatal(err)
						}
						for _, st := range op.OperatorStates {
							sw.Element(st.Name, []byte("half"))
						}
						break ops
					}
					sw, err := w.Subtask(ctx, op, idx, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx))
					if err != nil {
						t.Fatal(err)
					}
					for _, st := range op.OperatorStates {
						if err := sw.Element(st.Name, fmt.Appendf(nil, "%d", rng.IntN(100))); err != nil {
							t.Fatal(err)
						}
					}
					if err := sw.Raw(snapshot.RawState{Keyed: []byte("raw")}); err != nil {
						t.Fatal(err)
					}
					if err := sw.Close(); err != nil {
						t.Fatal(err)
					}
					written++
				}
			}
			if err := w.Abort(ctx); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if r, err := s.reg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()}); err == nil {
				r.Close()
				t.Fatalf("snapshot.Open accepts %s after Abort", loc)
			}
			if f, _, _, err := s.reg.Detect(ctx, loc); err == nil {
				t.Fatalf("%s recognized at %s after Abort", f.Name, loc)
			}
			if ok, _ := probe(s.reg, s.format, loc); ok {
				t.Fatalf("%s probe recognizes %s after Abort", s.format.Name, loc)
			}
			// Nothing visible: a new snapshot needs no Force.
			exp := Write(t, s.reg, s.format, loc, 13, 128, 20, snapshot.WriteOptions{})
			r := open(t, s.reg, loc)
			defer r.Close()
			CheckContent(t, r, exp)
		})
	}
}

// existing writes a snapshot, is refused a second one at the location
// without Force (the first stays intact), and replaces it with Force.
func (s *suite) existing(t *testing.T) {
	loc := s.newLocation(t)
	first := Write(t, s.reg, s.format, loc, 10, 128, 40, snapshot.WriteOptions{})
	w, err := s.reg.Create(ctx, s.format, loc, snapshot.WriteOptions{})
	if err == nil {
		w.Abort(ctx)
		t.Fatalf("%s Create over an existing snapshot without Force succeeded", s.format.Name)
	}
	if !errors.Is(err, storage.ErrExist) {
		t.Errorf("Create over an existing snapshot: %v, want storage.ErrExist", err)
	}
	t.Logf("refused: %v", err)
	r := open(t, s.reg, loc)
	CheckContent(t, r, first)
	r.Close()

	second := Write(t, s.reg, s.format, loc, 18, 4096, 40, snapshot.WriteOptions{Force: true})
	r = open(t, s.reg, loc)
	defer r.Close()
	CheckContent(t, r, second)
}

// unwritten commits a snapshot in which no subtask of one operator, and
// one subtask of another, was written: they read back as empty subtasks
// of their key-group ranges, and the rest as written.
func (s *suite) unwritten(t *testing.T) {
	loc := s.newLocation(t)
	snap, _ := randomSnapshot(2, 128)
	quiet := &snapshot.Operator{ID: "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f", UID: "quiet", Parallelism: 3, MaxParallelism: 128,
		KeyedStates:    []snapshot.KeyedState{{Name: "v", Kind: snapshot.Value, KeyType: snapshot.Type{Name: snapshot.TypeString}, ValueType: snapshot.Type{Name: snapshot.TypeBytes}}},
		OperatorStates: []snapshot.OperatorState{{Name: "offsets", Mode: snapshot.Split, ElementType: snapshot.Type{Name: snapshot.TypeBytes}}}}
	w, err := s.reg.Create(ctx, s.format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	busy := snap.Operators[0]
	sw, err := w.Subtask(ctx, busy, 0, keygroup.RangeOf(busy.MaxParallelism, busy.Parallelism, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	snap.Operators = []*snapshot.Operator{busy, quiet}
	if err := w.Commit(ctx, clone(snap)); err != nil {
		t.Fatal(err)
	}
	r := open(t, s.reg, loc)
	defer r.Close()
	for _, op := range r.Snapshot().Operators {
		if len(op.Subtasks) != op.Parallelism {
			t.Fatalf("%s: %d subtasks for parallelism %d", op.Label(), len(op.Subtasks), op.Parallelism)
		}
		for i, sub := range op.Subtasks {
			if want := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i); sub.KeyGroups != want {
				t.Errorf("%s subtask %d: key groups %v, want %v", op.Label(), i, sub.KeyGroups, want)
			}
			for e, err := range r.Entries(ctx, op, i, sub.KeyGroups) {
				if err != nil {
					t.Fatalf("%s subtask %d: %v", op.Label(), i, err)
				}
				t.Fatalf("%s subtask %d: unexpected entry %+v", op.Label(), i, e)
			}
			for el, err := range r.Elements(ctx, op, i) {
				if err != nil {
					t.Fatalf("%s subtask %d: %v", op.Label(), i, err)
				}
				t.Fatalf("%s subtask %d: unexpected element %+v", op.Label(), i, el)
			}
			if raw, err := r.Raw(ctx, op, i); err != nil || len(raw.Keyed)+len(raw.Operator) > 0 {
				t.Fatalf("%s subtask %d: raw %v, %v", op.Label(), i, raw, err)
			}
		}
	}
}
