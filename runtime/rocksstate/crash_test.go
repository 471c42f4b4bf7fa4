package rocksstate_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/snapshot/verify"
	"github.com/stateutil/stateutil/storage"
)

// The writer child: it runs checkpoints 1..3 of the workload into the
// root STATEUTIL_ROCKS_CRASH_ROOT, then checkpoint 4, killing itself
// with SIGKILL at the STATEUTIL_ROCKS_CRASH_OPS-th storage operation of
// checkpoint 4 (0: never; it then prints how many there were).
const (
	crashRootEnv = "STATEUTIL_ROCKS_CRASH_ROOT"
	crashOpsEnv  = "STATEUTIL_ROCKS_CRASH_OPS"
	crashScheme  = "crashtest"
	crashJob     = "job"
	crashRetain  = 2
	crashLastGen = 4
)

func TestMain(m *testing.M) {
	if root := os.Getenv(crashRootEnv); root != "" {
		os.Exit(crashChild(root))
	}
	os.Exit(m.Run())
}

// The workload: one keyed operator, two subtasks, int64 keys whose value
// changes in generation 1 (all) and in about a tenth of the keys in each
// later generation.
const crashKeys = 6000

var (
	tInt64 = snapshot.Type{Name: snapshot.TypeInt64}
	tVoid  = snapshot.Type{Name: snapshot.TypeVoid}
	tBytes = snapshot.Type{Name: snapshot.TypeBytes}
)

func crashOperator() *snapshot.Operator {
	return &snapshot.Operator{ID: "00000000000000000000000000c0ffee", UID: "kv", Name: "kv", Parallelism: 2, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{{Name: "kv", Kind: snapshot.Value, KeyType: tInt64, NamespaceType: tVoid, ValueType: tBytes}}}
}

func changed(k, gen int) bool { return gen == 1 || (k*7919+gen*104729)%10 == 0 }

func crashEntry(op *snapshot.Operator, k, gen int) snapshot.Entry {
	key := snapshot.EncodeInt64(int64(k))
	kg, _ := testReg.Codecs.KeyGroupOf(tInt64, key, op.MaxParallelism)
	v := fmt.Appendf(nil, "value-%d-%d-", k, gen)
	return snapshot.Entry{KeyGroup: kg, State: "kv", Key: key, Namespace: []byte{}, Value: append(v, bytes.Repeat([]byte{byte(k)}, 100)...)}
}

// stateAt is every entry after generation gen, by subtask, canonical.
func stateAt(op *snapshot.Operator, gen int) [][]snapshot.Entry {
	out := make([][]snapshot.Entry, op.Parallelism)
	for k := range crashKeys {
		last := 1
		for g := 2; g <= gen; g++ {
			if changed(k, g) {
				last = g
			}
		}
		e := crashEntry(op, k, last)
		sub := keygroup.SubtaskOf(e.KeyGroup, op.MaxParallelism, op.Parallelism)
		out[sub] = append(out[sub], e)
	}
	for _, es := range out {
		snaptest.Canonical(es)
	}
	return out
}

func putGeneration(b *rocksstate.Incremental, op *snapshot.Operator, gen int) error {
	for k := range crashKeys {
		if !changed(k, gen) {
			continue
		}
		e := crashEntry(op, k, gen)
		sub := keygroup.SubtaskOf(e.KeyGroup, op.MaxParallelism, op.Parallelism)
		in, err := b.Open(op, sub, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub))
		if err != nil {
			return err
		}
		if err := in.Put(&e); err != nil {
			return err
		}
	}
	return nil
}

// killStorage counts mutating storage operations (each pending write and
// commit too) and SIGKILLs the process at the armed count.
type killStorage struct {
	storage.Storage
	mu    sync.Mutex
	armed bool
	left  int
	count int
}

func (k *killStorage) op() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.armed {
		return
	}
	k.count++
	if k.left > 0 {
		if k.left--; k.left == 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Hour)
		}
	}
}

func (k *killStorage) Create(ctx context.Context, p string) (storage.Pending, error) {
	k.op()
	pd, err := k.Storage.Create(ctx, p)
	if err != nil {
		return nil, err
	}
	return &killPending{Pending: pd, k: k}, nil
}

func (k *killStorage) MkdirAll(ctx context.Context, p string) error {
	k.op()
	return k.Storage.MkdirAll(ctx, p)
}

func (k *killStorage) Remove(ctx context.Context, p string) error {
	k.op()
	return k.Storage.Remove(ctx, p)
}

func (k *killStorage) RemoveAll(ctx context.Context, p string) error {
	k.op()
	return k.Storage.RemoveAll(ctx, p)
}

func (k *killStorage) Rename(ctx context.Context, a, b string) error {
	k.op()
	return k.Storage.Rename(ctx, a, b)
}

type killPending struct {
	storage.Pending
	k *killStorage
}

func (p *killPending) Write(b []byte) (int, error) {
	p.k.op()
	return p.Pending.Write(b)
}

func (p *killPending) Commit() error {
	p.k.op()
	return p.Pending.Commit()
}

// crashRoot turns a root (plain path or hdfs:// URI) into the child's
// crashtest:// form, whose storage is the same one wrapped.
func crashRoot(root string) string {
	if rest, ok := strings.CutPrefix(root, "hdfs://"); ok {
		return crashScheme + "://" + rest
	}
	return crashScheme + "://" + root
}

func crashChild(root string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	n, _ := strconv.Atoi(os.Getenv(crashOpsEnv))
	ks := &killStorage{left: n}
	var once sync.Once
	var initErr error
	storages := formattest.Registry().Storage
	storages.Register(crashScheme, func(ctx context.Context, u *url.URL) (storage.Storage, error) {
		once.Do(func() {
			inner := storage.Local()
			if u.Host != "" {
				inner, _, initErr = storages.Resolve(ctx, "hdfs://"+u.Host+"/")
			}
			ks.Storage = inner
		})
		return ks, initErr
	})
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "stateutil-crash-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	b, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: tmp, Retain: crashRetain, Storage: storages})
	if err != nil {
		return fail(err)
	}
	defer b.Close()
	op := crashOperator()
	fmt.Println("ready")
	for gen := 1; gen <= crashLastGen; gen++ {
		if err := putGeneration(b, op, gen); err != nil {
			return fail(err)
		}
		if gen == crashLastGen {
			ks.mu.Lock()
			ks.armed = true
			ks.mu.Unlock()
		}
		if _, err := b.Checkpoint(ctx, crashRoot(root), crashJob, int64(gen)); err != nil {
			return fail(err)
		}
	}
	fmt.Printf("done ops=%d\n", ks.count)
	return 0
}

// runCrashChild runs the child with the kill armed at ops (0: never) and
// returns its last stdout line.
func runCrashChild(t *testing.T, root string, ops int) string {
	t.Helper()
	c, lines, stderr := formattest.StartChild(t, crashRootEnv+"="+root, crashOpsEnv+"="+strconv.Itoa(ops))
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	formattest.WaitChild(t, c, stderr)
	return last
}

// readSubtasks reads every subtask of the snapshot at loc.
func readSubtasks(t *testing.T, loc string) (*snapshot.Snapshot, [][]snapshot.Entry, bool) {
	t.Helper()
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		return nil, nil, false
	}
	defer r.Close()
	res, err := verify.Check(ctx, loc, r, testReg.Codecs)
	if err != nil || !res.OK {
		t.Errorf("%s: opens but does not verify: %v %+v", loc, err, res)
	}
	all, err := snaptest.Collect(ctx, r)
	if err != nil {
		t.Errorf("%s: %v", loc, err)
		return r.Snapshot(), nil, true
	}
	var out [][]snapshot.Entry
	for _, s := range all["kv"] {
		out = append(out, s.Entries)
	}
	return r.Snapshot(), out, true
}

func sameSubtasks(want, got [][]snapshot.Entry) (bool, string) {
	if len(want) != len(got) {
		return false, fmt.Sprintf("%d subtasks, want %d", len(got), len(want))
	}
	for i := range want {
		if ok, diff := snaptest.EqualEntries(want[i], got[i]); !ok {
			return false, fmt.Sprintf("subtask %d: %s", i, diff)
		}
	}
	return true, ""
}

// jobListing is the job directory's checkpoint ids (with and without
// _metadata) and the files of its shared/ directory.
func jobListing(t *testing.T, st storage.Storage, jobDir string) (complete, incomplete []int64, shared []string) {
	t.Helper()
	infos, err := st.List(ctx, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		id, ok := chkdir.ParseCheckpointDirName(in.Name)
		if !ok {
			continue
		}
		if _, err := st.Stat(ctx, path.Join(jobDir, in.Name, chkdir.MetadataFile)); err == nil {
			complete = append(complete, id)
		} else {
			incomplete = append(incomplete, id)
		}
	}
	files, err := st.List(ctx, path.Join(jobDir, chkdir.SharedDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		shared = append(shared, f.Path)
	}
	return complete, incomplete, shared
}

// rocksCrashTrials kills the incremental checkpointer at random storage
// operations of a checkpoint, n times, and asserts: every checkpoint with
// a _metadata is complete and intact, none without is accepted, and after
// recovery (restore the job directory, take the next checkpoint) shared/
// holds exactly the files the retained checkpoints reference.
func rocksCrashTrials(t *testing.T, root string, n int) {
	op := crashOperator()
	want := map[int64][][]snapshot.Entry{}
	for gen := 1; gen <= crashLastGen; gen++ {
		want[int64(gen)] = stateAt(op, gen)
	}
	st, rootPath, err := testReg.Storage.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}

	calib := root + "/calibrate"
	line := runCrashChild(t, calib, 0)
	total, err := strconv.Atoi(strings.TrimPrefix(line, "done ops="))
	if err != nil || total < 5 {
		t.Fatalf("uninterrupted child said %q", line)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var killed, committed, leaked, leakedFiles int
	var points []int
	for i := range n {
		trialRoot := fmt.Sprintf("%s/trial-%02d", root, i)
		jobDir := path.Join(rootPath, fmt.Sprintf("trial-%02d", i), crashJob)
		at := 1 + rng.IntN(total)
		points = append(points, at)
		runCrashChild(t, trialRoot, at)
		complete, incomplete, shared := jobListing(t, st, jobDir)
		if slices.Contains(complete, crashLastGen) {
			committed++
		} else {
			killed++
		}
		// Every committed checkpoint is whole; no other is accepted.
		for _, id := range complete {
			loc := st.URI(path.Join(jobDir, chkdir.CheckpointDirName(id)))
			if _, got, ok := readSubtasks(t, loc); !ok {
				t.Errorf("trial %d (kill at op %d): %s has a _metadata but does not open", i, at, loc)
			} else if same, diff := sameSubtasks(want[id], got); !same {
				t.Errorf("trial %d (kill at op %d): %s: %s", i, at, loc, diff)
			}
		}
		for _, id := range incomplete {
			loc := st.URI(path.Join(jobDir, chkdir.CheckpointDirName(id)))
			if r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{}); err == nil {
				r.Close()
				t.Errorf("trial %d (kill at op %d): %s without _metadata is accepted", i, at, loc)
			}
		}
		latest := slices.Max(complete)
		s, got, ok := readSubtasks(t, st.URI(jobDir))
		if !ok || s.CheckpointID != latest {
			t.Fatalf("trial %d (kill at op %d): the job directory does not resolve to chk-%d", i, at, latest)
		}
		if same, diff := sameSubtasks(want[latest], got); !same {
			t.Errorf("trial %d: job directory: %s", i, diff)
		}

		reg, err := rocksstate.LoadRegistry(ctx, st, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if extra := minus(shared, reg.Files()); len(extra) > 0 {
			leaked++
			leakedFiles += len(extra)
		}

		// Recovery: restore, take the next checkpoint.
		b, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: t.TempDir(), Retain: crashRetain, Storage: testReg.Storage})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Restore(ctx, st.URI(jobDir)); err != nil {
			t.Fatalf("trial %d: restore: %v", i, err)
		}
		res, err := b.Checkpoint(ctx, trialRoot, crashJob, crashLastGen+1)
		b.Close()
		if err != nil {
			t.Fatalf("trial %d: checkpoint after recovery: %v", i, err)
		}
		reg, err = rocksstate.LoadRegistry(ctx, st, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		complete, incomplete, shared = jobListing(t, st, jobDir)
		if extra := minus(shared, reg.Files()); len(extra) > 0 {
			t.Errorf("trial %d (kill at op %d): after recovery shared/ holds %d files no retained checkpoint references: %v", i, at, len(extra), extra)
		}
		if missing := minus(reg.Files(), shared); len(missing) > 0 {
			t.Errorf("trial %d: referenced shared files missing: %v", i, missing)
		}
		if !slices.Equal(complete, reg.Checkpoints()) || len(incomplete) > 0 {
			t.Errorf("trial %d (kill at op %d): after recovery checkpoints %v (incomplete %v), retained %v", i, at, complete, incomplete, reg.Checkpoints())
		}
		if _, got, ok := readSubtasks(t, res.Location); !ok {
			t.Errorf("trial %d: %s does not open", i, res.Location)
		} else if same, diff := sameSubtasks(want[latest], got); !same {
			t.Errorf("trial %d: checkpoint after recovery: %s", i, diff)
		}
	}
	t.Logf("%d trials, killed at storage operations %v of %d: %d before chk-%d committed, %d after; %d left shared files unreferenced (%d files) until recovery",
		n, points, total, killed, crashLastGen, committed, leaked, leakedFiles)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestKilledCheckpointLeaksNothing(t *testing.T) {
	rocksCrashTrials(t, filepath.Join(t.TempDir(), "root"), 10)
}

func TestKilledCheckpointLeaksNothingHDFS(t *testing.T) {
	rocksCrashTrials(t, formattest.HDFSDir(t), 3)
}

var ctx = context.Background()
