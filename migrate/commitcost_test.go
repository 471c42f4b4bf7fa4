package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// calls counts what a storage is asked: calls per method, and the bytes
// read from files opened below a path of interest (the staged data).
type calls struct {
	mu       sync.Mutex
	n        map[string]int
	read     int64
	dataRead int64
	dataDir  string // a path within the storage; reads below it add to dataRead
}

func (c *calls) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[method]++
}

// reset starts counting afresh, reads below dataDir counted apart.
func (c *calls) reset(dataDir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.read, c.dataRead, c.dataDir = map[string]int{}, 0, 0, dataDir
}

func (c *calls) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, n := range c.n {
		t += n
	}
	return t
}

func (c *calls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for m := range c.n {
			if !yield(m) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s %d", m, c.n[m]))
	}
	return fmt.Sprintf("%s; %d bytes read, %d of them staged data", strings.Join(parts, ", "), c.read, c.dataRead)
}

// counted is a real storage whose calls are counted. Its URIs are those
// of the storage it wraps with "count+" before the scheme, so that
// locations the code under test derives resolve to it again.
type counted struct {
	storage.Storage
	c *calls
}

func (s counted) URI(p string) string {
	u := s.Storage.URI(p)
	if !strings.Contains(u, "://") {
		u = "file://" + u
	}
	return "count+" + u
}

func (s counted) Open(ctx context.Context, p string) (storage.File, error) {
	s.c.add("open")
	f, err := s.Storage.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	s.c.mu.Lock()
	data := s.c.dataDir != "" && strings.HasPrefix(p, s.c.dataDir+"/")
	s.c.mu.Unlock()
	return countedFile{File: f, c: s.c, data: data}, nil
}

func (s counted) Create(ctx context.Context, p string) (storage.Pending, error) {
	s.c.add("create")
	return s.Storage.Create(ctx, p)
}

func (s counted) Stat(ctx context.Context, p string) (storage.Info, error) {
	s.c.add("stat")
	return s.Storage.Stat(ctx, p)
}

func (s counted) List(ctx context.Context, p string) ([]storage.Info, error) {
	s.c.add("list")
	return s.Storage.List(ctx, p)
}

func (s counted) MkdirAll(ctx context.Context, p string) error {
	s.c.add("mkdir")
	return s.Storage.MkdirAll(ctx, p)
}

func (s counted) Remove(ctx context.Context, p string) error {
	s.c.add("remove")
	return s.Storage.Remove(ctx, p)
}

func (s counted) RemoveAll(ctx context.Context, p string) error {
	s.c.add("removeall")
	return s.Storage.RemoveAll(ctx, p)
}

func (s counted) Rename(ctx context.Context, oldpath, newpath string) error {
	s.c.add("rename")
	return s.Storage.Rename(ctx, oldpath, newpath)
}

func (s counted) Claim(ctx context.Context, p string) (storage.Claim, error) {
	s.c.add("claim")
	return s.Storage.Claim(ctx, p)
}

// CRC32C passes the question on to a storage that answers it; for one
// that does not, the caller reads the file, as it would unwrapped.
func (s counted) CRC32C(ctx context.Context, p string) (int64, uint32, error) {
	c, ok := s.Storage.(storage.Checksummer)
	if !ok {
		return 0, 0, errors.ErrUnsupported
	}
	s.c.add("crc32c")
	return c.CRC32C(ctx, p)
}

type countedFile struct {
	storage.File
	c    *calls
	data bool
}

func (f countedFile) count(n int) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	f.c.read += int64(n)
	if f.data {
		f.c.dataRead += int64(n)
	}
}

func (f countedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.count(n)
	return n, err
}

func (f countedFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.count(n)
	return n, err
}

var _ io.ReaderAt = countedFile{}

// countingRegistry knows the flink format and count+file:// and
// count+hdfs:// storages, which count their calls in c.
func countingRegistry(c *calls) *snapshot.Registry {
	inner := formattest.Registry().Storage
	st := storage.NewRegistry()
	st.Register("hdfs", storage.HDFSOpener(nil))
	for _, scheme := range []string{"file", "hdfs"} {
		st.Register("count+"+scheme, func(ctx context.Context, u *url.URL) (storage.Storage, error) {
			v := *u
			v.Scheme = scheme
			s, _, err := inner.Resolve(ctx, v.String())
			if err != nil {
				return nil, err
			}
			return counted{Storage: s, c: c}, nil
		})
	}
	reg := snapshot.NewRegistry(st)
	flink.Register(reg)
	return reg
}

// Budgets of storage calls of a sharded copy's plan and commit, whatever
// the storage. Planning reads the source's metadata and writes the plan
// twice (the plan file, the staging area's copy): a fixed number of
// calls. The commit reads each shard's record, checks each staged file
// once (on HDFS one checksum call, elsewhere a read), lists each staged
// directory, and writes the metadata and moves the snapshot in a fixed
// number of calls more. docs/SCALING.md turns these into time at the
// latencies measured there.
const (
	planCallsBudget     = 60
	commitCallsPerFile  = 2
	commitCallsPerShard = 2
	commitCallsFixed    = 80
	// The commit reads the plan and the shards' records, which grow with
	// the subtasks: bytes read other than staged data, per new subtask.
	commitBytesPerSubtask   = 4 << 10
	commitSubtasksPerFile   = 1 // the flink writer: a file per new subtask with state
	shardsOfCommitCostPlans = 10
)

// The plan and commit of a Flink max-parallelism rewrite (128 -> 4096)
// of a real Flink savepoint into 100, 1,000 and 10,000 new subtasks, in
// 10 shards, make a number of storage calls that stays within the
// budgets above (fixed for the plan, linear in files and shards for the
// commit), and the commit on HDFS reads none of the staged data: the
// datanodes give every file's CRC32C. Calls are counted, not timed. On
// local disk every size runs; on the test HDFS the two smaller ones.
func TestPlanAndCommitCallsGrowLinearly(t *testing.T) {
	src, err := filepath.Abs(flinkSource)
	if err != nil {
		t.Fatal(err)
	}
	// HDFSDir skips (fails under CI) without the test cluster.
	places := []struct {
		name  string
		root  func(t *testing.T) string
		sizes []int
	}{
		{"local", func(t *testing.T) string { return "count+file://" + t.TempDir() }, []int{100, 1000, 10000}},
		{"hdfs", func(t *testing.T) string { return "count+" + formattest.HDFSDir(t) }, []int{100, 1000}},
	}
	for _, place := range places {
		for _, subtasks := range place.sizes {
			t.Run(fmt.Sprintf("%s/%d", place.name, subtasks), func(t *testing.T) {
				planCommitCost(t, "count+file://"+src, place.root(t), subtasks, place.name == "hdfs")
			})
		}
	}
}

func planCommitCost(t *testing.T, src, root string, subtasks int, checksums bool) {
	ctx := context.Background()
	c := &calls{}
	reg := countingRegistry(c)
	// The savepoint has 5 operators; all are rescaled.
	req := Request{Source: src, Destination: root + "/dst", Format: "flink",
		Change: redistribute.Request{Parallelism: subtasks / 5, MaxParallelism: 4096}}

	c.reset("")
	sp, err := PlanShards(ctx, reg, ShardRequest{Request: req, Shards: shardsOfCommitCostPlans, PlanFile: root + "/plan.json"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sp.Plan.Totals().Subtasks; got != subtasks {
		t.Fatalf("the plan writes %d new subtasks, want %d", got, subtasks)
	}
	if err := WriteShardPlan(ctx, reg, root+"/plan.json", sp, false); err != nil {
		t.Fatal(err)
	}
	if err := OpenStaging(ctx, reg, sp); err != nil {
		t.Fatal(err)
	}
	planCalls := c.total()
	t.Logf("plan: %d calls (%v)", planCalls, c)

	files := 0
	var staged int64
	for i := 1; i <= len(sp.Shards); i++ {
		rec, err := RunShard(ctx, reg, sp, i, ShardOptions{})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		for _, s := range rec.Subtasks {
			for _, f := range s.Files {
				files++
				staged += f.Size
			}
		}
	}
	if files*commitSubtasksPerFile < subtasks/2 {
		t.Fatalf("the shards staged %d files for %d subtasks: too few for the commit's per-file cost to show", files, subtasks)
	}

	_, staging, err := reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		t.Fatal(err)
	}
	c.reset(staging + "/" + stagingData)
	if _, err := CommitShards(ctx, reg, sp, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	commitCalls := c.total()
	t.Logf("commit of %d subtasks, %d files (%d bytes), %d shards: %d calls (%v)", subtasks, files, staged, len(sp.Shards), commitCalls, c)

	if planCalls > planCallsBudget {
		t.Errorf("planning %d subtasks made %d storage calls, over the budget of %d whatever the subtasks", subtasks, planCalls, planCallsBudget)
	}
	if budget := commitCallsPerFile*files + commitCallsPerShard*len(sp.Shards) + commitCallsFixed; commitCalls > budget {
		t.Errorf("the commit of %d files from %d shards made %d storage calls, over the budget of %d", files, len(sp.Shards), commitCalls, budget)
	}
	if other, budget := c.read-c.dataRead, int64(commitBytesPerSubtask*subtasks+1<<20); other > budget {
		t.Errorf("the commit of %d subtasks read %d bytes besides staged data, over the budget of %d", subtasks, other, budget)
	}
	switch {
	case checksums && c.dataRead != 0:
		t.Errorf("the commit on a storage that gives CRC32Cs read %d bytes of staged data", c.dataRead)
	case !checksums && c.dataRead != staged:
		t.Errorf("the commit read %d bytes of the %d staged, want each staged file read once", c.dataRead, staged)
	}
	if _, _, _, err := reg.Detect(ctx, req.Destination); err != nil {
		t.Fatalf("no snapshot at the destination after the commit: %v", err)
	}
}

// On HDFS, where the commit asks the datanodes for every staged file's
// CRC32C instead of reading it, a staged file replaced by one of the same
// size with a byte changed is still refused, named with the shard to run
// again; after that run the commit goes through.
func TestCommitChecksCRC32COnHDFS(t *testing.T) {
	ctx := context.Background()
	dst := formattest.HDFSDir(t) + "/dst"
	sp, recs := planAndRun(t, Request{Source: flinkSource, Destination: dst, Change: redistribute.Request{Parallelism: 4}}, 2)
	st, staging, err := testReg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, s := range recs[0].Subtasks {
		for _, f := range s.Files {
			if victim == "" && f.Size > 16 {
				victim = staging + "/" + f.Path
			}
		}
	}
	b, err := storage.ReadAll(ctx, st, victim, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	if err := storage.WriteFile(ctx, st, victim, b); err != nil {
		t.Fatal(err)
	}
	_, err = CommitShards(ctx, testReg, sp, CommitOptions{})
	if !errors.Is(err, ErrShardsIncomplete) || !strings.Contains(err.Error(), st.URI(victim)) || !strings.Contains(err.Error(), "crc32c") || !strings.Contains(err.Error(), "shard 1 again") {
		t.Fatalf("commit over a changed byte on HDFS: %v", err)
	}
	if _, err := RunShard(ctx, testReg, sp, 1, ShardOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{Verify: true}); err != nil {
		t.Fatal(err)
	}
}
