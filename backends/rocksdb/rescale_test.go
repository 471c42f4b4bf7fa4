package rocksdb

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
)

// countingWriter counts the subtasks the fast path built (subtasks are
// written concurrently).
type countingWriter struct {
	snapshot.Writer
	fast atomic.Int64
}

func (c *countingWriter) SubtaskFrom(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, bool, error) {
	sw, ok, err := c.Writer.(snapshot.KeyedCopier).SubtaskFrom(ctx, r, op, newOp, index, kgs)
	if ok && err == nil {
		c.fast.Add(1)
	}
	return sw, ok, err
}

// rescaleTo rescales the rocksdb snapshot at src to parallelism p into a
// new location, entry by entry or not, and returns it with the number of
// subtasks the fast path built.
func rescaleTo(t testing.TB, src string, p int, entryByEntry bool) (string, int) {
	t.Helper()
	ctx := context.Background()
	r, err := testReg.Open(ctx, src, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan, err := migrate.NewPlan(ctx, r, Format, redistribute.Request{Parallelism: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	w, err := testReg.Create(ctx, Format, dst, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cw := &countingWriter{Writer: w}
	if err := migrate.Execute(ctx, r, cw, plan, migrate.ExecuteOptions{EntryByEntry: entryByEntry}); err != nil {
		t.Fatal(err)
	}
	if err := migrate.Commit(ctx, cw, plan); err != nil {
		t.Fatal(err)
	}
	return dst, int(cw.fast.Load())
}

func collectSnapshot(t testing.TB, loc string) (*snapshot.Snapshot, map[string][]snaptest.Subtask) {
	t.Helper()
	r, err := testReg.Open(context.Background(), loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all, err := snaptest.Collect(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return r.Snapshot(), all
}

// TestRescaleFastPathMatchesEntryByEntry rescales random rocksdb
// snapshots both ways and wants the same state, in the subtasks Flink's
// formula names, and the same figures.
func TestRescaleFastPathMatchesEntryByEntry(t *testing.T) {
	for _, maxP := range []int{128, 4096} {
		for _, c := range [][2]int{{2, 3}, {3, 2}, {1, 4}, {4, 1}} {
			t.Run(fmt.Sprintf("maxP=%d/%d-to-%d", maxP, c[0], c[1]), func(t *testing.T) {
				for seed := range uint64(2) {
					testRescale(t, seed, maxP, c[0], c[1])
				}
			})
		}
	}
}

func testRescale(t *testing.T, seed uint64, maxP, from, to int) {
	src, s := writeRandom(t, seed, maxP, from, to)
	checkRescale(t, src, s, seed, maxP, to)
}

// writeRandom writes a random rocksdb snapshot of parallelism from and
// returns where, with what it holds.
func writeRandom(t *testing.T, seed uint64, maxP, from, to int) (string, *snapshot.Snapshot) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, uint64(maxP*100+from*10+to)))
	s := snaptest.Random(rng)
	for _, op := range s.Operators {
		op.Parallelism, op.MaxParallelism = from, maxP
	}
	if len(s.Operators[0].KeyedStates) == 0 {
		s.Operators[0].KeyedStates = []snapshot.KeyedState{{Name: "forced", Kind: snapshot.List, KeyType: tString, NamespaceType: tVoid, ValueType: tBytes}}
	}
	src := filepath.Join(t.TempDir(), "src")
	w, err := testReg.Create(ctx, Format, src, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snaptest.Write(ctx, w, s, 400, rng); err != nil {
		t.Fatal(err)
	}
	return src, s
}

// checkRescale rescales src (holding s) to parallelism to both ways and
// wants the same state, in the subtasks Flink's formula names, and the same
// figures. It returns the fast path's result.
func checkRescale(t *testing.T, src string, s *snapshot.Snapshot, seed uint64, maxP, to int) string {
	fast, n := rescaleTo(t, src, to, false)
	if want := to * len(s.Operators); n != want {
		t.Fatalf("seed %d: fast path built %d subtasks, want %d", seed, n, want)
	}
	slow, n := rescaleTo(t, src, to, true)
	if n != 0 {
		t.Fatalf("seed %d: entry-by-entry rescale used the fast path %d times", seed, n)
	}
	_, orig := collectSnapshot(t, src)
	fs, got := collectSnapshot(t, fast)
	ss, want := collectSnapshot(t, slow)
	for _, op := range fs.Operators {
		label := op.Label()
		what := fmt.Sprintf("seed %d operator %s", seed, label)
		if len(got[label]) != to || len(want[label]) != to {
			t.Fatalf("%s: %d fast and %d slow subtasks, want %d", what, len(got[label]), len(want[label]), to)
		}
		var all []snapshot.Entry
		for i := range to {
			g, w := got[label][i], want[label][i]
			if ok, diff := snaptest.EqualEntries(w.Entries, g.Entries); !ok {
				t.Fatalf("%s subtask %d: fast differs from entry by entry: %s", what, i, diff)
			}
			if !slices.EqualFunc(w.Elements, g.Elements, func(a, b snapshot.Element) bool {
				return a.State == b.State && a.Subtask == b.Subtask && bytes.Equal(a.Value, b.Value)
			}) {
				t.Fatalf("%s subtask %d: elements %v, entry by entry %v", what, i, g.Elements, w.Elements)
			}
			for _, e := range g.Entries {
				if j := keygroup.SubtaskOf(e.KeyGroup, maxP, to); j != i {
					t.Fatalf("%s: key group %d in subtask %d, belongs in %d", what, e.KeyGroup, i, j)
				}
			}
			all = append(all, g.Entries...)
		}
		var before []snapshot.Entry
		for _, sub := range orig[label] {
			before = append(before, sub.Entries...)
		}
		snaptest.Canonical(before)
		snaptest.Canonical(all)
		if ok, diff := snaptest.EqualEntries(before, all); !ok {
			t.Fatalf("%s: rescaled entries differ from the original's: %s", what, diff)
		}
		sop, _ := ss.Operator(op.ID)
		for i, sub := range op.Subtasks {
			ref := sop.Subtasks[i]
			if sub.Keyed != ref.Keyed || !slices.Equal(sub.KeyGroupStats, ref.KeyGroupStats) || sub.Operator != ref.Operator || fmt.Sprint(sub.OperatorElements) != fmt.Sprint(ref.OperatorElements) {
				t.Fatalf("%s subtask %d: figures %+v %v, entry by entry %+v %v", what, i, sub.Keyed, sub.Operator, ref.Keyed, ref.Operator)
			}
		}
	}
	checkFiles(t, fast)
	return fast
}

// checkFiles has RocksDB's own ldb and sst_dump check every subtask of the
// rocksdb snapshot at loc, and reads every key stored in its SST files
// (live or not) to see that it lies in the subtask's key groups.
func checkFiles(t *testing.T, loc string) {
	t.Helper()
	ldb, err1 := exec.LookPath("ldb")
	sstDump, err2 := exec.LookPath("sst_dump")
	if err1 != nil || err2 != nil {
		t.Logf("ldb or sst_dump not found (install rocksdb-tools): files of %s not checked", loc)
		return
	}
	ctx := context.Background()
	d := chkdir.At(storage.Local(), loc)
	m, err := rocksdbformat.ReadMetadata(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range m.Handles {
		if !slices.ContainsFunc(h.Files, func(f rocksdbformat.File) bool { return strings.HasSuffix(f.Local, ".sst") }) {
			continue
		}
		dir := filepath.Join(t.TempDir(), rocksdbformat.SubtaskDirName(h.Operator, h.Subtask))
		if err := rocksdbformat.DownloadHandle(ctx, d, h, dir); err != nil {
			t.Fatal(err)
		}
		rockstest.Run(t, ldb, "--db="+dir, "checkconsistency")
		rockstest.Run(t, sstDump, "--file="+dir, "--command=verify")
		out := rockstest.Run(t, sstDump, "--file="+dir, "--command=scan", "--output_hex")
		keys := 0
		for _, line := range strings.Split(out, "\n") {
			k, _, ok := strings.Cut(line, " seq:")
			if !ok {
				continue
			}
			key, err := hex.DecodeString(strings.Trim(k, "'"))
			if err != nil || len(key) < h.PrefixBytes {
				t.Fatalf("sst_dump line %q: %v", line, err)
			}
			kg := int(key[0])
			if h.PrefixBytes == 2 {
				kg = kg<<8 | int(key[1])
			}
			if !h.KeyGroups.Contains(kg) {
				t.Fatalf("subtask %d (key groups %s) stores a key of key group %d", h.Subtask, h.KeyGroups, kg)
			}
			keys++
		}
		if keys == 0 {
			t.Fatalf("sst_dump shows no key of subtask %d's SST files:\n%s", h.Subtask, out)
		}
	}
}

// TestRescaleFastPathFromIncremental rescales an incremental checkpoint
// (the runtime's checkpointer's), whose subtasks have several overlapping
// SST files and no recorded per-key-group figures.
func TestRescaleFastPathFromIncremental(t *testing.T) {
	ctx := context.Background()
	op := rockstest.KVOperator(2, 4096)
	b, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: t.TempDir(), Retain: 2, Storage: testReg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put := func(sub int, e *snapshot.Entry) error {
		in, err := b.Open(op, sub, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub))
		if err != nil {
			return err
		}
		return in.Put(e)
	}
	r := rand.New(rand.NewPCG(3, 4))
	root := t.TempDir()
	rockstest.PutKV(t, op, 0, 1500, 40, r, put)
	if _, err := b.Checkpoint(ctx, root, "job", 1); err != nil {
		t.Fatal(err)
	}
	rockstest.PutKV(t, op, 1000, 2500, 40, r, put) // overwrites a third
	if _, err := b.Checkpoint(ctx, root, "job", 2); err != nil {
		t.Fatal(err)
	}
	var want []snapshot.Entry
	for _, in := range b.Instances() {
		want = append(want, rockstest.Collect(t, in.Entries(ctx, in.KeyGroups()))...)
	}
	src := filepath.Join(root, "job", chkdir.CheckpointDirName(2))
	fast, n := rescaleTo(t, src, 3, false)
	if n != 3 {
		t.Fatalf("fast path built %d subtasks, want 3", n)
	}
	fs, got := collectSnapshot(t, fast)
	var all []snapshot.Entry
	for i, sub := range got[fs.Operators[0].Label()] {
		if m := fs.Operators[0].Subtasks[i]; m.Keyed.Known || m.KeyGroupStats != nil {
			t.Errorf("subtask %d: figures %+v %v claimed, the source records none", i, m.Keyed, m.KeyGroupStats)
		}
		all = append(all, sub.Entries...)
	}
	rockstest.SameEntries(t, "rescaled incremental checkpoint", want, all)
	checkFiles(t, fast)
}

// writePlain writes op's entries, per subtask, and one operator-state
// element per subtask; no raw state, which would forbid rescaling.
func writePlain(tb testing.TB, loc string, op *snapshot.Operator, per [][]snapshot.Entry) {
	tb.Helper()
	ctx := context.Background()
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for i, es := range per {
		sw, err := w.Subtask(ctx, op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
		if err != nil {
			tb.Fatal(err)
		}
		for j := range es {
			if err := sw.Entry(&es[j]); err != nil {
				tb.Fatal(err)
			}
		}
		if len(op.OperatorStates) > 0 {
			if err := sw.Element(op.OperatorStates[0].Name, fmt.Appendf(nil, "partition-%d", i)); err != nil {
				tb.Fatal(err)
			}
		}
		if err := sw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Commit(ctx, &snapshot.Snapshot{JobID: "job", Kind: snapshot.Savepoint, Operators: []*snapshot.Operator{op}}); err != nil {
		tb.Fatal(err)
	}
}

// TestRescaleFastPathClipsPrimary rescales a snapshot whose two subtasks
// share one database holding every key group, each claiming half: the
// database the fast path links must be clipped (DeleteRange, then a
// compaction that leaves no other key in the files), as the entry-by-entry
// path reads only the claimed halves.
func TestRescaleFastPathClipsPrimary(t *testing.T) {
	ctx := context.Background()
	for _, maxP := range []int{128, 4096} {
		op := rockstest.Operator("0c1d", 1, maxP)
		src := filepath.Join(t.TempDir(), "src")
		writePlain(t, src, op, rockstest.Entries(t, op, 500, 5))

		d := chkdir.At(storage.Local(), src)
		m, err := rocksdbformat.ReadMetadata(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		sop := m.Snapshot.Operators[0]
		sop.Parallelism = 2
		h1, sub1 := *m.Handles[0], *sop.Subtasks[0]
		m.Handles = append(m.Handles, &h1)
		sop.Subtasks = append(sop.Subtasks, &sub1)
		for i, h := range m.Handles {
			kgs := keygroup.RangeOf(maxP, 2, i)
			h.Subtask, h.KeyGroups = i, kgs
			sub := sop.Subtasks[i]
			sub.Index, sub.KeyGroups = i, kgs
			sub.KeyGroupStats = slices.Clone(sub.KeyGroupStats[kgs.Start : kgs.End+1])
			sub.Keyed = snapshot.Stats{Known: true}
			for _, g := range sub.KeyGroupStats {
				sub.Keyed.Entries += g.Entries
				sub.Keyed.Bytes += g.Bytes
			}
		}
		if err := rocksdbformat.WriteMetadata(ctx, d, m); err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{2, 1, 3} {
			fast, n := rescaleTo(t, src, p, false)
			if n != p {
				t.Fatalf("maxP %d, 2 -> %d: fast path built %d subtasks", maxP, p, n)
			}
			slow, _ := rescaleTo(t, src, p, true)
			_, got := collectSnapshot(t, fast)
			_, want := collectSnapshot(t, slow)
			label := op.Label()
			for i := range p {
				if ok, diff := snaptest.EqualEntries(want[label][i].Entries, got[label][i].Entries); !ok {
					t.Fatalf("maxP %d, 2 -> %d, subtask %d: fast differs from entry by entry: %s", maxP, p, i, diff)
				}
			}
			checkFiles(t, fast)
		}
	}
}

// TestRescaleFastPathCanceled leaves nothing a reader accepts when the
// context ends during the rescale.
func TestRescaleFastPathCanceled(t *testing.T) {
	op := rockstest.Operator("0c2d", 2, 128)
	op.OperatorStates = nil
	src := filepath.Join(t.TempDir(), "src")
	writePlain(t, src, op, rockstest.Entries(t, op, 300, 6))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := testReg.Open(ctx, src, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan, err := migrate.NewPlan(ctx, r, Format, redistribute.Request{Parallelism: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	w, err := testReg.Create(ctx, Format, dst, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := migrate.Execute(ctx, r, w, plan, migrate.ExecuteOptions{}); err == nil {
		t.Fatal("Execute succeeded with a canceled context")
	}
	w.Abort(context.Background())
	if _, err := testReg.Open(context.Background(), dst, snapshot.OpenOptions{}); err == nil {
		t.Fatal("a canceled rescale left a readable snapshot")
	}
}

// TestRescaleLinksWholeFiles cuts the SST files at every key group, and
// then every few, so a rescale can take files as they are: it must link
// them (the new snapshot shares their inodes with the old one) — all of
// them when none straddles a new subtask's range — copy the rest, leave
// the old snapshot's bytes alone, and still match the entry-by-entry
// result.
func TestRescaleLinksWholeFiles(t *testing.T) {
	defer func(v int) { sstTarget = v }(sstTarget)
	for target, cases := range map[int][][2]int{1: {{2, 3}, {4, 1}}, 4 << 10: {{3, 2}, {1, 4}}} {
		sstTarget = target
		for _, c := range cases {
			src, s := writeRandom(t, 9, 128, c[0], c[1])
			before, err := snaptest.HashTree(src)
			if err != nil {
				t.Fatal(err)
			}
			fast := checkRescale(t, src, s, 9, 128, c[1])
			after, err := snaptest.HashTree(src)
			if err != nil {
				t.Fatal(err)
			}
			if d := snaptest.TreeDiff(before, after); d != "" {
				t.Fatalf("%d -> %d: the old snapshot changed: %s", c[0], c[1], d)
			}
			shared, all := sharedFiles(t, src, fast)
			t.Logf("files of %d bytes, %d -> %d: %d of %d SST files linked from the old snapshot", target, c[0], c[1], shared, all)
			if target == 1 && shared != all || shared == 0 {
				t.Errorf("files of %d bytes, %d -> %d: %d of %d SST files linked from the old snapshot", target, c[0], c[1], shared, all)
			}
			// The copies are cut like written files: rescaling the result
			// again, to new boundaries, links every file of it that lies
			// within one new subtask.
			next := c[1] + 1
			within := filesWithin(t, fast, next)
			again, _ := rescaleTo(t, fast, next, false)
			linked := 0
			for _, f := range within {
				if n, _ := sharedFiles(t, f, again); n == 1 {
					linked++
				}
			}
			t.Logf("files of %d bytes, %d -> %d: %d of the %d SST files within one new subtask linked", target, c[1], next, linked, len(within))
			if linked != len(within) || len(within) == 0 {
				t.Errorf("files of %d bytes, %d -> %d: %d of the %d SST files within one new subtask linked", target, c[1], next, linked, len(within))
			}
		}
	}
}

// filesWithin lists the SST files of the rocksdb snapshot at loc whose
// keys all lie in one subtask at parallelism p.
func filesWithin(t *testing.T, loc string, p int) []string {
	t.Helper()
	ctx := context.Background()
	d := chkdir.At(storage.Local(), loc)
	m, err := rocksdbformat.ReadMetadata(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range m.Handles {
		op, _ := m.Snapshot.Operator(h.Operator)
		dir := filepath.Join(t.TempDir(), "db")
		if err := rocksdbformat.LinkHandle(ctx, d, h, dir); err != nil {
			t.Fatal(err)
		}
		db, err := rocksdb.OpenReadOnly(dir, rocksdb.ReadOnlyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cs := rocksdbformat.Codecs(op)
		for _, cf := range db.ColumnFamilies() {
			c := cs[cf]
			files, _ := db.LiveFiles(cf)
			for _, f := range files {
				first, last := c.KeyGroupOf(f.Smallest), c.KeyGroupOf(f.Largest)
				if keygroup.SubtaskOf(first, op.MaxParallelism, p) == keygroup.SubtaskOf(last, op.MaxParallelism, p) {
					real, err := filepath.EvalSymlinks(filepath.Join(dir, f.Name))
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, real)
				}
			}
		}
		db.Close()
	}
	return out
}

// sharedFiles counts the SST files under dst that are files under src.
func sharedFiles(t *testing.T, src, dst string) (shared, all int) {
	t.Helper()
	var old []os.FileInfo
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".sst") {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			old = append(old, fi)
		}
		return err
	})
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".sst") {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			all++
			if slices.ContainsFunc(old, func(o os.FileInfo) bool { return os.SameFile(o, fi) }) {
				shared++
			}
		}
		return err
	})
	return shared, all
}

// TestRescaleFastPathNoNativeLeak rescales through the fast path (links,
// copies, C loop) many times; a leaked native object would grow the RSS.
func TestRescaleFastPathNoNativeLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("long loop")
	}
	op := rockstest.Operator("0c3d", 2, 128)
	src := filepath.Join(t.TempDir(), "src")
	writePlain(t, src, op, rockstest.Entries(t, op, 300, 8))
	cycle := func(i int) {
		dst, _ := rescaleTo(t, src, 1+2*(i%2), false) // 2 -> 1, 2 -> 3
		os.RemoveAll(dst)
	}
	const loops = 60
	before, after := rockstest.RSSAcross(t, 20, loops, cycle)
	t.Logf("VmRSS %d KiB after warm-up, %d KiB after %d more rescales (%+d KiB)", before, after, loops, after-before)
	// The entry-by-entry path settles at about +4 MiB here as well.
	if after-before > 8<<10 {
		t.Errorf("RSS grew by %d KiB over %d rescales; a native object leaks", after-before, loops)
	}
}

// TestPiecesEndWhereWriterFilesEnd checks where a rescale cuts the key
// ranges it copies: at key-group boundaries, by the writer's rule.
func TestPiecesEndWhereWriterFilesEnd(t *testing.T) {
	c := rocksdbformat.Codecs(rockstest.KVOperator(1, 128))["kv"] // 1-byte prefixes
	sizes := func(n int, each uint64) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = each
		}
		return out
	}
	cuts := func(ps [][2][]byte) []int {
		var out []int
		for _, p := range ps[1:] {
			out = append(out, c.KeyGroupOf(p[0]))
		}
		return out
	}
	every := func(from, to, step int) []int {
		var out []int
		for kg := from; kg <= to; kg += step {
			out = append(out, kg)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		lo, hi   []byte
		first    int
		sizes    []uint64
		wantCuts []int
	}{
		{"key groups past 4 MiB: each alone", c.KeyGroupPrefix(0), nil, 0, sizes(64, 10<<20), every(1, 63, 1)},
		{"key groups of 1 MiB: every fourth", c.KeyGroupPrefix(0), nil, 0, sizes(64, 1<<20), every(4, 60, 4)},
		{"key groups of 3 MiB: every second", c.KeyGroupPrefix(0), nil, 0, sizes(64, 3<<20), every(2, 62, 2)},
		{"a small state: one piece", c.KeyGroupPrefix(0), nil, 0, sizes(64, 10<<10), nil},
		{"bounded above", c.KeyGroupPrefix(10), c.KeyGroupPrefix(20), 10, sizes(118, 1<<20), []int{14, 18}},
		{"from inside a key group", append(c.KeyGroupPrefix(9), 7), nil, 9, sizes(12, 2<<20), every(11, 19, 2)},
	} {
		ps := pieces(c, tc.lo, tc.hi, tc.first, tc.sizes)
		if !bytes.Equal(ps[0][0], tc.lo) || !bytes.Equal(ps[len(ps)-1][1], tc.hi) {
			t.Errorf("%s: pieces run from %x to %x, want %x to %x", tc.name, ps[0][0], ps[len(ps)-1][1], tc.lo, tc.hi)
		}
		for i := 1; i < len(ps); i++ {
			if !bytes.Equal(ps[i-1][1], ps[i][0]) {
				t.Errorf("%s: piece %d ends at %x, the next starts at %x", tc.name, i-1, ps[i-1][1], ps[i][0])
			}
		}
		if got := cuts(ps); !slices.Equal(got, tc.wantCuts) {
			t.Errorf("%s: cut at key groups %v, want %v", tc.name, got, tc.wantCuts)
		}
	}
	if ps := pieces(c, c.KeyGroupPrefix(5), c.KeyGroupPrefix(5), 0, sizes(128, 0)); ps != nil {
		t.Errorf("an empty range gave pieces %v", ps)
	}
}
