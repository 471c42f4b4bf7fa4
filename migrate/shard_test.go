package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
)

// generated writes generate's example snapshot in the filesystem format.
func generated(t *testing.T, keys, parallelism int) string {
	t.Helper()
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "src")
	w, err := testReg.Create(ctx, filesystem.Format, loc, snapshot.WriteOptions{InlineThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := generate.Default()
	c.Keys, c.Parallelism = keys, parallelism
	if _, err := generate.Write(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	return loc
}

// planned plans req in n shards and opens the plan's staging area.
func planned(t *testing.T, req Request, n int) *ShardPlan {
	t.Helper()
	ctx := context.Background()
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: req, Shards: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := OpenStaging(ctx, testReg, sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

// sharded plans req in n shards, runs each, and commits.
func sharded(t *testing.T, req Request, n int) (*ShardPlan, *CommitResult) {
	t.Helper()
	ctx := context.Background()
	sp := planned(t, req, n)
	for i := 1; i <= n; i++ {
		if _, err := RunShard(ctx, testReg, sp, i, ShardOptions{}); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	res, err := CommitShards(ctx, testReg, sp, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sp, res
}

// sameEntries fails unless a and b hold the same snapshot, entry by entry.
func sameEntries(t *testing.T, a, b string) {
	t.Helper()
	ctx := context.Background()
	ra, rb := openSnap(t, a), openSnap(t, b)
	res, err := diff.Compare(ctx, a, ra, b, rb, diff.Options{Entries: true, Codecs: testReg.Codecs})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Equal {
		t.Fatalf("%s and %s differ: %+v", a, b, res)
	}
	if ra.Snapshot().Format != rb.Snapshot().Format {
		t.Fatalf("formats %s vs %s", ra.Snapshot().Format, rb.Snapshot().Format)
	}
}

func TestShardedEqualsSingleProcess(t *testing.T) {
	src := generated(t, 400, 3)
	for _, format := range []string{"filesystem", "rocksdb", "memory"} {
		for _, change := range []redistribute.Request{{Parallelism: 5}, {Parallelism: 4, MaxParallelism: 256}, {}} {
			name := fmt.Sprintf("%s/p%d-maxp%d", format, change.Parallelism, change.MaxParallelism)
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				req := Request{Source: src, Format: format, Change: change}
				req.Destination = filepath.Join(dir, "single")
				if _, err := Run(context.Background(), testReg, req); err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{1, 3} {
					req.Destination = filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
					sp, _ := sharded(t, req, n)
					sameEntries(t, filepath.Join(dir, "single"), req.Destination)
					if _, err := os.Stat(sp.Staging); !os.IsNotExist(err) {
						t.Fatalf("staging %s left behind: %v", sp.Staging, err)
					}
				}
			})
		}
	}
}

func TestCommitNamesMissingShards(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 100, 3)
	dst := filepath.Join(t.TempDir(), "dst")
	sp := planned(t, Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 4}}, 3)
	if _, err := RunShard(ctx, testReg, sp, 2, ShardOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := CommitShards(ctx, testReg, sp, CommitOptions{})
	if !errors.Is(err, ErrShardsIncomplete) || !strings.Contains(err.Error(), "shards 1, 3 of 3 have not finished") {
		t.Fatalf("commit with shards 1 and 3 missing: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("destination exists after a refused commit: %v", err)
	}
	// A shard run twice: the second run's record replaces the first's,
	// and the first run's files go at the commit.
	for _, i := range []int{1, 3, 3} {
		if _, err := RunShard(ctx, testReg, sp, i, ShardOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	r := openSnap(t, dst)
	listed := map[string]bool{"_metadata": true}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, f := range sub.Files {
				listed[f.Path] = true
			}
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("%s holds %s, which its metadata does not list", dst, e.Name())
		}
	}
}

func TestShardRefusesAChangedSource(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 50, 2)
	sp := planned(t, Request{Source: src, Destination: filepath.Join(t.TempDir(), "dst"), Change: redistribute.Request{Parallelism: 3}}, 2)
	// Rewrite the source with other keys: same shape, other figures.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	w, err := testReg.Create(ctx, filesystem.Format, src, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := generate.Default()
	c.Keys, c.Parallelism = 51, 2
	if _, err := generate.Write(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	if _, err := RunShard(ctx, testReg, sp, 1, ShardOptions{}); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("shard of a changed source: %v", err)
	}
}

// A plan for shards estimates a max-parallelism change from the key
// groups' figures: the totals come out as counted, up to rounding, and
// every old subtask that feeds a new one is listed.
func TestShardPlanEstimatesRehash(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 400, 3)
	change := redistribute.Request{Parallelism: 4, MaxParallelism: 256}
	sp := planned(t, Request{Source: src, Destination: filepath.Join(t.TempDir(), "d"), Change: change}, 2)
	r := openSnap(t, src)
	exact, err := newPlan(ctx, r, change)
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range sp.Plan.Operators {
		ex := exact.Operators[i]
		if ex.KeyedEntries == 0 {
			continue
		}
		if !op.Estimated {
			t.Errorf("operator %q: not marked estimated", op.Label())
		}
		if d := op.KeyedEntries - ex.KeyedEntries; d < -int64(len(op.Subtasks)) || d > int64(len(op.Subtasks)) {
			t.Errorf("operator %q: estimated %d entries, counted %d", op.Label(), op.KeyedEntries, ex.KeyedEntries)
		}
		for j, sub := range op.Subtasks {
			for _, s := range ex.Subtasks[j].Sources {
				if !slices.Contains(sub.Sources, s) {
					t.Errorf("operator %q subtask %d: old subtask %d feeds it, the estimate lists %v", op.Label(), j, s, sub.Sources)
				}
			}
			t.Logf("operator %q subtask %d: estimated %d entries, counted %d", op.Label(), j, sub.KeyedEntries, ex.Subtasks[j].KeyedEntries)
		}
	}
}

// A file a shard recorded that is gone (or not the size recorded) stops
// the commit, which names the shard to run again; after that run the
// commit goes through.
func TestCommitChecksRecordedFiles(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 300, 3)
	dst := filepath.Join(t.TempDir(), "dst")
	sp := planned(t, Request{Source: src, Destination: dst, Format: "rocksdb", Change: redistribute.Request{Parallelism: 4}}, 2)
	var rec *ShardRecord
	var err error
	for i := 1; i <= 2; i++ {
		if rec, err = RunShard(ctx, testReg, sp, i, ShardOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(sp.Staging, rec.Subtasks[0].Files[0].Path)
	if err := os.Truncate(victim, 1); err != nil {
		t.Fatal(err)
	}
	_, err = CommitShards(ctx, testReg, sp, CommitOptions{})
	if !errors.Is(err, ErrShardsIncomplete) || !strings.Contains(err.Error(), "run shard 2 again") {
		t.Fatalf("commit over a truncated file: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("destination after a refused commit: %v", err)
	}
	if _, err := RunShard(ctx, testReg, sp, 2, ShardOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(t.TempDir(), "single")
	if _, err := Run(ctx, testReg, Request{Source: src, Destination: single, Format: "rocksdb", Change: redistribute.Request{Parallelism: 4}}); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, single, dst)
}

// A Flink savepoint is written in shards as in one process, also for
// another Flink's `_metadata` version and with expired TTL entries left
// out: the sharded savepoint's `_metadata` and state files are byte for
// byte the single process's, but for the names of the files.
func TestShardedFlinkEqualsSingleProcess(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")
	dir := t.TempDir()
	req := Request{Source: src, Change: redistribute.Request{MaxParallelism: 256, Parallelism: 3}, ReaderVersion: "2.1",
		DropExpired: &snapshot.Expiry{At: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), TTL: map[string]time.Duration{"last": 24 * time.Hour}}}
	req.Destination = filepath.Join(dir, "single")
	if _, err := Run(ctx, testReg, req); err != nil {
		t.Fatal(err)
	}
	single := flinkFiles(t, req.Destination)
	if single.meta.Version != 6 {
		t.Fatalf("_metadata version %d, want 6 (Flink 2.1)", single.meta.Version)
	}
	r := openSnap(t, src)
	keyed, _ := r.Snapshot().Operator("keyed")
	if n := countEntries(t, r, keyed, "last"); n == 0 {
		t.Fatal("the source has no entries of TTL state last: the test shows nothing about leaving them out")
	}
	for _, n := range []int{1, 3} {
		req.Destination = filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
		sharded(t, req, n)
		sameFlinkFiles(t, n, req.Destination, single)
		out := openSnap(t, req.Destination)
		op, _ := out.Snapshot().Operator("keyed")
		if left := countEntries(t, out, op, "last"); left != 0 {
			t.Errorf("%d shards: %d entries of state last, all expired", n, left)
		}
	}
}

// sameFlinkFiles fails unless the savepoint n shards wrote at dst holds
// the single process's files.
func sameFlinkFiles(t *testing.T, n int, dst string, single savepointFiles) {
	t.Helper()
	got := flinkFiles(t, dst)
	if !reflect.DeepEqual(got.meta, single.meta) {
		t.Errorf("%d shards: _metadata differs from the single process's but for file names", n)
	}
	if !reflect.DeepEqual(got.data, single.data) {
		t.Errorf("%d shards: state files differ from the single process's", n)
	}
}

// savepointFiles is a Flink savepoint's `_metadata` with the names of its
// state files (and so where inline data lies in it) left out, and those
// files' bytes in the order it lists them.
type savepointFiles struct {
	meta *metadata.Metadata
	data [][]byte
}

func flinkFiles(t *testing.T, dir string) savepointFiles {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := metadata.ParseMetadata(data, filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	m.File, m.Size = "", 0 // the file's size goes with the names' lengths
	var out savepointFiles
	take := func(d *metadata.StreamHandle) {
		if d == nil {
			return
		}
		d.DataOffset = 0 // where inline data lies in _metadata
		if d.Type != metadata.HandleRelativeFile {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, d.Path))
		if err != nil {
			t.Fatal(err)
		}
		out.data = append(out.data, b)
		d.Path = ""
	}
	for _, op := range m.Operators {
		take(op.CoordinatorState)
		for _, st := range op.Subtasks {
			for _, k := range []*metadata.KeyedHandle{st.ManagedKeyedState, st.RawKeyedState} {
				if k != nil && k.KeyGroups != nil {
					take(k.KeyGroups.Delegate)
				}
			}
			for _, o := range []*metadata.OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
				if o != nil {
					take(o.Delegate)
				}
			}
		}
	}
	out.meta = m
	return out
}

// countEntries counts op's entries of one keyed state.
func countEntries(t *testing.T, r snapshot.Reader, op *snapshot.Operator, state string) int {
	t.Helper()
	n := 0
	for _, sub := range op.Subtasks {
		for e, err := range r.Entries(context.Background(), op, sub.Index, sub.KeyGroups) {
			if err != nil {
				t.Fatal(err)
			}
			if e.State == state {
				n++
			}
		}
	}
	return n
}
