package migrate

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/snaptest"
)

func writeRandom(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	loc := filepath.Join(t.TempDir(), "src.dump")
	w, err := testReg.Create(context.Background(), memory.Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snaptest.Write(context.Background(), w, snaptest.Random(rng), 60, rng); err != nil {
		t.Fatal(err)
	}
	return loc
}

// newPlan plans a rescale into the memory format, as the tests write.
func newPlan(ctx context.Context, r snapshot.Reader, req redistribute.Request) (*Plan, error) {
	req.Codecs = testReg.Codecs
	return NewPlan(ctx, r, memory.Format, req, nil)
}

func openSnap(t *testing.T, loc string) snapshot.Reader {
	t.Helper()
	r, err := testReg.Open(context.Background(), loc, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func rescale(t *testing.T, src string, req redistribute.Request, opts ExecuteOptions) string {
	t.Helper()
	return rescaleInto(t, src, req, opts, func(w snapshot.Writer) snapshot.Writer { return w })
}

// rescaleInto rescales src into a new memory dump through the writer wrap
// makes of it, and returns the dump's path.
func rescaleInto(t *testing.T, src string, req redistribute.Request, opts ExecuteOptions, wrap func(snapshot.Writer) snapshot.Writer) string {
	t.Helper()
	ctx := context.Background()
	r := openSnap(t, src)
	plan, err := newPlan(ctx, r, req)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst.dump")
	w, err := testReg.Create(ctx, memory.Format, dst, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w = wrap(w)
	opts.Codecs = testReg.Codecs
	if err := Execute(ctx, r, w, plan, opts); err != nil {
		t.Fatal(err)
	}
	if err := Commit(ctx, w, plan); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkPlacement asserts every entry sits in the subtask Flink's formula
// names for its key group, and its key group is its key's hash.
func checkPlacement(t *testing.T, loc string) {
	t.Helper()
	r := openSnap(t, loc)
	for _, op := range r.Snapshot().Operators {
		types := map[string]snapshot.Type{}
		for _, st := range op.KeyedStates {
			types[st.Name] = st.KeyType
		}
		for _, sub := range op.Subtasks {
			if want := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub.Index); sub.KeyGroups != want {
				t.Fatalf("%s subtask %d range %v, want %v", op.Label(), sub.Index, sub.KeyGroups, want)
			}
			for e, err := range r.Entries(context.Background(), op, sub.Index, sub.KeyGroups) {
				if err != nil {
					t.Fatal(err)
				}
				kg, err := testReg.Codecs.KeyGroupOf(types[e.State], e.Key, op.MaxParallelism)
				if err != nil || kg != e.KeyGroup {
					t.Fatalf("%s: entry key group %d, key hashes to %d (%v)", op.Label(), e.KeyGroup, kg, err)
				}
				if s := keygroup.SubtaskOf(kg, op.MaxParallelism, op.Parallelism); s != sub.Index {
					t.Fatalf("%s: key group %d in subtask %d, Flink puts it in %d", op.Label(), kg, sub.Index, s)
				}
			}
		}
	}
}

func collect(t *testing.T, loc string) map[string][]snaptest.Subtask {
	t.Helper()
	c, err := snaptest.Collect(context.Background(), openSnap(t, loc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allEntries is every entry of an operator in canonical order.
func allEntries(subs []snaptest.Subtask) []snapshot.Entry {
	var out []snapshot.Entry
	for _, s := range subs {
		out = append(out, s.Entries...)
	}
	snaptest.Canonical(out)
	return out
}

func TestRescaleRoundTripIsEntryIdentical(t *testing.T) {
	for seed := range uint64(12) {
		src := writeRandom(t, seed)
		r := openSnap(t, src)
		rng := rand.New(rand.NewPCG(seed, 99))
		m := 1 + rng.IntN(7)
		mid := rescale(t, src, redistribute.Request{Parallelism: m}, ExecuteOptions{})
		checkPlacement(t, mid)
		back := map[string]int{}
		for _, op := range r.Snapshot().Operators {
			back[op.UID] = op.Parallelism
		}
		end := rescale(t, mid, redistribute.Request{Operators: back}, ExecuteOptions{})
		checkPlacement(t, end)
		a, b := collect(t, src), collect(t, end)
		for _, op := range r.Snapshot().Operators {
			for i := range a[op.UID] {
				if ok, why := snaptest.EqualEntries(a[op.UID][i].Entries, b[op.UID][i].Entries); !ok {
					t.Fatalf("seed %d %s subtask %d after %d->%d->%d: %s", seed, op.UID, i, op.Parallelism, m, op.Parallelism, why)
				}
			}
			checkOperatorState(t, op, a[op.UID], b[op.UID])
		}
	}
}

// checkOperatorState: split lists keep their concatenated order, union
// elements are stored once each, broadcast copies are old copies.
func checkOperatorState(t *testing.T, op *snapshot.Operator, before, after []snaptest.Subtask) {
	t.Helper()
	values := func(subs []snaptest.Subtask, state string, only int) []string {
		var out []string
		for i, s := range subs {
			for _, el := range s.Elements {
				if el.State == state && (only < 0 || only == i) {
					out = append(out, string(el.Value))
				}
			}
		}
		return out
	}
	for _, st := range op.OperatorStates {
		switch st.Mode {
		case snapshot.Union:
			a, b := values(before, st.Name, -1), values(after, st.Name, -1)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("%s union %s: %v became %v", op.UID, st.Name, a, b)
			}
		case snapshot.Split:
			if a, b := values(before, st.Name, -1), values(after, st.Name, -1); !slices.Equal(a, b) {
				t.Fatalf("%s split %s: %v became %v", op.UID, st.Name, a, b)
			}
		case snapshot.Broadcast:
			for i := range after {
				got := values(after, st.Name, i)
				found := false
				for j := range before {
					found = found || slices.Equal(values(before, st.Name, j), got)
				}
				if !found {
					t.Fatalf("%s broadcast %s subtask %d: %v is no old copy", op.UID, st.Name, i, got)
				}
			}
		}
	}
}

func TestMaxParallelismRoundTrip(t *testing.T) {
	for seed := range uint64(6) {
		src := writeRandom(t, 100+seed)
		for _, opts := range []ExecuteOptions{{}, {MemoryLimit: 2048}} { // in memory, and spilled
			r := openSnap(t, src)
			from := r.Snapshot().Operators[0].MaxParallelism
			to := 4096
			if from == 4096 {
				to = 128
			}
			mid := rescale(t, src, redistribute.Request{MaxParallelism: to}, opts)
			checkPlacement(t, mid)
			end := rescale(t, mid, redistribute.Request{MaxParallelism: from}, opts)
			checkPlacement(t, end)
			a, b := collect(t, src), collect(t, end)
			for uid := range a {
				if ok, why := snaptest.EqualEntries(allEntries(a[uid]), allEntries(b[uid])); !ok {
					t.Fatalf("seed %d %s %d->%d->%d: %s", seed, uid, from, to, from, why)
				}
			}
		}
	}
}

func TestSourceOneToTwoSplitsPartitions(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "g.dump")
	w, _ := testReg.Create(ctx, memory.Format, src, snapshot.WriteOptions{})
	if _, err := generate.Write(ctx, w, generate.Default()); err != nil {
		t.Fatal(err)
	}
	one := rescale(t, src, redistribute.Request{Operators: map[string]int{"kafka-source": 1}}, ExecuteOptions{})
	r := openSnap(t, one)
	op, _ := r.Snapshot().Operator("kafka-source")
	a, err := redistribute.Open(ctx, r, op, redistribute.Target{Parallelism: 2, MaxParallelism: op.MaxParallelism}, redistribute.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var got [2]int
	for i := range 2 {
		for el, err := range a.Elements(ctx, i) {
			if err != nil {
				t.Fatal(err)
			}
			if el.State == "partition-offsets" {
				got[i]++
			}
			if el.Subtask != i {
				t.Fatalf("element of new subtask %d says %d", i, el.Subtask)
			}
		}
	}
	if got != [2]int{3, 2} {
		t.Fatalf("5 partitions went %v, want [3 2]", got)
	}
}

func TestBadRequests(t *testing.T) {
	r := openSnap(t, writeRandom(t, 3))
	ctx := context.Background()
	maxP := r.Snapshot().Operators[0].MaxParallelism
	for _, c := range []struct {
		req  redistribute.Request
		want error
	}{
		{redistribute.Request{Parallelism: -1}, keygroup.ErrInvalidParallelism},
		{redistribute.Request{Parallelism: maxP + 1}, keygroup.ErrInvalidParallelism},
		{redistribute.Request{Parallelism: 2, MaxParallelism: 1}, keygroup.ErrInvalidParallelism},
		{redistribute.Request{Operators: map[string]int{"nope": 2}}, snapshot.ErrNotFound},
	} {
		if _, err := newPlan(ctx, r, c.req); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.req, err, c.want)
		}
	}
}

func TestRefusesUnhashableKeysOnMaxParallelismChange(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "x.dump")
	w, _ := testReg.Create(ctx, memory.Format, loc, snapshot.WriteOptions{})
	s := &snapshot.Snapshot{Operators: []*snapshot.Operator{{ID: "01", UID: "pojo", Parallelism: 1, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{{Name: "s", Kind: snapshot.Value, KeyType: snapshot.Type{Name: snapshot.TypeMsgpack}}}}}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	r := openSnap(t, loc)
	_, err := newPlan(ctx, r, redistribute.Request{MaxParallelism: 256})
	if !errors.Is(err, redistribute.ErrNotRedistributable) || !errors.Is(err, keygroup.ErrUnknownKeyType) {
		t.Fatalf("got %v", err)
	}
	if _, err := newPlan(ctx, r, redistribute.Request{Parallelism: 4}); err != nil {
		t.Fatalf("a parallelism change needs no hash: %v", err)
	}
}

func TestPlanFiguresMatchResult(t *testing.T) {
	ctx := context.Background()
	src := writeRandom(t, 7)
	for _, req := range []redistribute.Request{{Parallelism: 5}, {MaxParallelism: 256, Parallelism: 3}} {
		plan, err := newPlan(ctx, openSnap(t, src), req)
		if err != nil {
			t.Fatal(err)
		}
		dst := rescale(t, src, req, ExecuteOptions{})
		r := openSnap(t, dst)
		for i, op := range r.Snapshot().Operators {
			for j, sub := range op.Subtasks {
				sp := plan.Operators[i].Subtasks[j]
				if sub.Keyed.Entries != sp.KeyedEntries || sub.Keyed.Bytes != sp.KeyedBytes || sub.Operator.Entries != sp.OperatorElements {
					t.Fatalf("%s subtask %d: plan %+v, result %+v", op.UID, j, sp, sub)
				}
			}
		}
	}
}

// A snapshot read from a job directory names the directory's checkpoints;
// a snapshot written from it is not in that directory and must not.
func TestRewrittenDropsWhereTheSourceWasFound(t *testing.T) {
	s := &snapshot.Snapshot{Format: "filesystem", Properties: map[string]string{
		snapshot.PropJobCheckpoints: "chk-3 chk-4", "job": "wordcount"}}
	out := Rewritten(s)
	if _, ok := out.Properties[snapshot.PropJobCheckpoints]; ok || out.Properties["job"] != "wordcount" || out.Format != "" {
		t.Fatalf("rewritten: format %q, properties %v", out.Format, out.Properties)
	}
	if s.Properties[snapshot.PropJobCheckpoints] != "chk-3 chk-4" {
		t.Fatalf("the source's properties changed: %v", s.Properties)
	}
}
