package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"

	"github.com/stateutil/stateutil/redistribute"
)

// openStaging opens sp's staging area as planning does.
func openStaging(t *testing.T, sp *ShardPlan) {
	t.Helper()
	if err := OpenStaging(context.Background(), testReg, sp); err != nil {
		t.Fatal(err)
	}
}

// planAndRun plans req in n shards, opens the plan and runs every shard.
func planAndRun(t *testing.T, req Request, n int) (*ShardPlan, []*ShardRecord) {
	t.Helper()
	ctx := context.Background()
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: req, Shards: n})
	if err != nil {
		t.Fatal(err)
	}
	openStaging(t, sp)
	var recs []*ShardRecord
	for i := 1; i <= n; i++ {
		rec, err := RunShard(ctx, testReg, sp, i, ShardOptions{})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		recs = append(recs, rec)
	}
	return sp, recs
}

// flinkSource is a real Flink 1.20 savepoint.
var flinkSource = filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")

// noDestination fails if dst holds anything.
func noDestination(t *testing.T, dst string) {
	t.Helper()
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("%s exists after a refused commit: %v", dst, err)
	}
}

// One byte flipped in a staged file, its size unchanged: the commit
// refuses, naming the file and the shard to run again; after that run it
// goes through. Every format's shards record a CRC32C the commit checks.
func TestCommitChecksCRC32C(t *testing.T) {
	ctx := context.Background()
	gen := generated(t, 300, 3)
	// Above the inline threshold: the filesystem format keeps smaller
	// state in the metadata.
	big := generated(t, 4000, 2)
	for _, c := range []struct{ format, src string }{{"filesystem", big}, {"rocksdb", gen}, {"memory", gen}, {"flink", flinkSource}} {
		t.Run(c.format, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			sp, recs := planAndRun(t, Request{Source: c.src, Destination: dst, Format: c.format, Change: redistribute.Request{Parallelism: 4}}, 2)
			var victim string
			for _, s := range append(recs[1].Subtasks, recs[0].Subtasks...) {
				for _, f := range s.Files {
					if victim == "" && f.Size > 16 {
						victim = filepath.Join(sp.Staging, f.Path)
					}
				}
			}
			b, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x20
			if err := os.WriteFile(victim, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = CommitShards(ctx, testReg, sp, CommitOptions{})
			if !errors.Is(err, ErrShardsIncomplete) || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "crc32c") || !strings.Contains(err.Error(), "again") {
				t.Fatalf("commit over a flipped byte: %v", err)
			}
			noDestination(t, dst)
			for i := 1; i <= 2; i++ {
				if _, err := RunShard(ctx, testReg, sp, i, ShardOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := CommitShards(ctx, testReg, sp, CommitOptions{Verify: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The figures the shards wrote must add up to the source's: the commit
// refuses a record that lost a subtask, one that counts fewer keyed
// entries than the source holds, and one that counts fewer elements of a
// split operator state than its assignment gives, naming operator and
// figures. (A plan that covers less is refused before any shard writes:
// TestShardAndCommitRefuseAPlanThatCoversLess.)
func TestCommitChecksCounts(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 300, 3)
	cases := []struct {
		name, want string
		record     func(rec *ShardRecord) bool
	}{
		{name: "subtask left out", want: "recorded", record: func(rec *ShardRecord) bool {
			if len(rec.Subtasks) < 2 {
				return false
			}
			rec.Subtasks = rec.Subtasks[1:]
			return true
		}},
		{name: "entries lost", want: "keyed entries, the source holds", record: func(rec *ShardRecord) bool {
			for _, s := range rec.Subtasks {
				if s.Subtask.Keyed.Entries > 0 {
					s.Subtask.Keyed.Entries--
					return true
				}
			}
			return false
		}},
		{name: "elements lost", want: "its assignment gives it", record: func(rec *ShardRecord) bool {
			for _, s := range rec.Subtasks {
				for name, n := range s.Subtask.OperatorElements {
					if n > 0 {
						s.Subtask.OperatorElements[name] = n - 1
						return true
					}
				}
			}
			return false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			sp, recs := planAndRun(t, Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 4}}, 2)
			edited := false
			for i, rec := range recs {
				if edited = c.record(rec); edited {
					body, _ := json.Marshal(rec)
					if err := os.WriteFile(RecordPath(sp.Staging, i+1), body, 0o644); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			if !edited {
				t.Fatal("no record to edit")
			}
			_, err := CommitShards(ctx, testReg, sp, CommitOptions{})
			if !errors.Is(err, ErrPlanMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("commit of shards that lost state: %v", err)
			}
			t.Log(err)
			noDestination(t, dst)
		})
	}
}

// The result reports what the shards wrote, not the plan's estimate: a
// max-parallelism change is planned from estimates.
func TestCommitReportsWhatWasWritten(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 400, 3)
	dst := filepath.Join(t.TempDir(), "dst")
	sp, _ := planAndRun(t, Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 4, MaxParallelism: 256}}, 2)
	res, err := CommitShards(ctx, testReg, sp, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, op := range openSnap(t, src).Snapshot().Operators {
		for _, sub := range op.Subtasks {
			want += sub.Keyed.Entries
		}
	}
	if sp.Plan.Totals().Entries == want {
		t.Fatalf("the plan's estimate is exact (%d): the test shows nothing", want)
	}
	if res.Totals == nil || res.Totals.Entries != want {
		t.Fatalf("commit reports %+v keyed entries, the source holds %d", res.Totals, want)
	}
}

// A commit --verify that finds the staged snapshot differs from the
// source publishes nothing: the destination stays as it was and the
// staging area stays for inspection.
func TestCommitVerifiesBeforePublishing(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "dst")
	sp, recs := planAndRun(t, Request{Source: flinkSource, Destination: dst, Change: redistribute.Request{Parallelism: 3}}, 1)
	// A shard that wrote other bytes than it should have, and recorded
	// them: Flink's state files carry no checksums of their own.
	rec := recs[0]
	for _, s := range rec.Subtasks {
		if s.Subtask.Keyed.Entries == 0 || len(s.Files) == 0 {
			continue
		}
		f := &s.Files[0]
		p := filepath.Join(sp.Staging, f.Path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-3] ^= 0x01
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f.CRC32C = crc32.Checksum(b, envelope.Castagnoli)
		break
	}
	body, _ := json.Marshal(rec)
	if err := os.WriteFile(RecordPath(sp.Staging, 1), body, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := CommitShards(ctx, testReg, sp, CommitOptions{Verify: true})
	if !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("commit --verify of a snapshot that differs from its source: %v", err)
	}
	t.Log(err)
	noDestination(t, dst)
	if _, err := os.Stat(filepath.Join(sp.Staging, StagingPlan)); err != nil {
		t.Fatalf("staging area after a failed verify: %v", err)
	}
}

// A commit killed after it marked the plan committed, at each step of the
// move and the cleanup, is finished by the next commit, which says it was
// already committed; no step leaves a loop ("shards have not finished").
func TestCommitFinishesAKilledCommit(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 200, 2)
	for _, kill := range []string{"before-move", "half-moved", "after-move", "half-cleaned"} {
		t.Run(kill, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			sp, _ := planAndRun(t, Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 3}}, 2)
			// The first commit runs through; then the staging area is
			// put back as it was at the kill.
			stash := filepath.Join(t.TempDir(), "stash")
			copyTree(t, sp.Staging, stash)
			if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(stash, stagingData, "dst")
			if err := os.Remove(filepath.Join(stash, StagingPlan)); err != nil && kill == "half-cleaned" {
				t.Fatal(err)
			}
			copyTree(t, stash, sp.Staging)
			_ = os.WriteFile(filepath.Join(sp.Staging, StagingCommitted), []byte(sp.ID+"\n"), 0o644)
			staged := filepath.Join(sp.Staging, stagingData, "dst")
			switch kill {
			case "before-move":
				// The metadata of the committed snapshot is staged too.
				copyTree(t, dst, staged)
				if err := os.RemoveAll(dst); err != nil {
					t.Fatal(err)
				}
			case "half-moved":
				// As an object store's copy leaves it: some files at
				// the destination, no metadata; all of them staged.
				copyTree(t, dst, staged)
				if err := os.Remove(filepath.Join(dst, "_metadata")); err != nil {
					t.Fatal(err)
				}
			case "after-move":
				// Copied, the staged copy not yet removed.
				copyTree(t, dst, staged)
			case "half-cleaned":
				if err := os.RemoveAll(filepath.Join(sp.Staging, stagingShards)); err != nil {
					t.Fatal(err)
				}
				_ = os.RemoveAll(staged)
			}
			_ = data
			res, err := CommitShards(ctx, testReg, sp, CommitOptions{Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.AlreadyCommitted || !res.Verified {
				t.Fatalf("%+v", res)
			}
			if _, err := os.Stat(sp.Staging); !os.IsNotExist(err) {
				t.Fatalf("staging %s left: %v", sp.Staging, err)
			}
		})
	}
}

// An aborted plan (staging without plan.json), or one whose staging is
// gone with nothing at the destination, is closed; one whose staging
// holds another plan does not fit.
func TestCommitRefusesAClosedPlan(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 100, 2)
	dst := filepath.Join(t.TempDir(), "dst")
	sp, _ := planAndRun(t, Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 3}}, 1)
	other := *sp
	other.Force = true
	if err := other.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := WriteShardPlan(ctx, testReg, path.Join(sp.Staging, StagingPlan), &other, true); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("commit of another plan than the one opened: %v", err)
	}
	if err := os.Remove(filepath.Join(sp.Staging, StagingPlan)); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("commit of an aborted plan: %v", err)
	}
	if err := os.RemoveAll(sp.Staging); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("commit of a plan whose staging is gone: %v", err)
	}
	noDestination(t, dst)
}

// copyTree copies the directory from to to, merging into what is there.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		out := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
