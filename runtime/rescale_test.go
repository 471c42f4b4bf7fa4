package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/stateutil/stateutil/runtime/runtimetest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
	"github.com/stateutil/stateutil/snapshot"
)

// failedRunAt2 runs a job at parallelism 2 until an injected failure and
// returns its latest completed checkpoint and what it committed.
func failedRunAt2(t *testing.T, name string, cfg jobs.Config, format string) (string, *runtimetest.MemoryCommitter) {
	t.Helper()
	b, _ := jobs.Lookup(name)
	job, _ := b.Build(cfg)
	dir := t.TempDir()
	out := runtimetest.NewMemoryCommitter()
	// The failure comes after the first checkpoint completed, however
	// slow the machine: a restore always has one to start from.
	_, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg,
		Parallelism: 2, Format: format, CheckpointDir: dir, JobID: "job", CheckpointEvery: 100, Clock: runtimetest.NewManualClock(epoch), Committer: out,
		Failure: &runtime.Failure{Operator: job.Stages[0].UID, Subtask: 1, AfterCheckpoint: 1}, ChannelCapacity: 1, BatchSize: 4,
	})
	if !errors.Is(err, runtime.ErrInjectedFailure) {
		t.Fatalf("want the injected failure, got %v", err)
	}
	chk, err := runtime.LatestCheckpoint(context.Background(), testReg.Storage, runtime.JobDir(dir, "job"))
	if err != nil {
		t.Fatalf("no checkpoint before the injected failure: %v", err)
	}
	return chk, out
}

// TestRunRescaleFromTwo restores a snapshot taken at parallelism 2 at 3
// and at 1, for every built-in job, in split and union mode, and checks
// state and output against a failure-free run.
func TestRunRescaleFromTwo(t *testing.T) {
	for _, name := range jobs.Names() {
		for _, union := range []bool{false, true} {
			cfg := jobs.Config{Records: 6000, Partitions: 5, Seed: 11, Union: union}
			ref, refLines := reference(t, name, cfg, 2)
			chk, out := failedRunAt2(t, name, cfg, "memory")
			for _, p := range []int{3, 1} {
				t.Run(fmt.Sprintf("%s/union=%v/p=%d", name, union, p), func(t *testing.T) {
					b, _ := jobs.Lookup(name)
					job, _ := b.Build(cfg)
					committed := out.Clone()
					res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: p, Restore: chk, Clock: runtimetest.NewManualClock(epoch), Committer: committed})
					if err != nil {
						t.Fatal(err)
					}
					if res.StateDigest != ref.StateDigest {
						t.Errorf("state digest %s, want %s", res.StateDigest, ref.StateDigest)
					}
					if got := committed.Lines(); !slices.Equal(got, refLines) {
						t.Errorf("output: %d lines, want %d: %s", len(got), len(refLines), firstDiff(got, refLines))
					}
					if res.Records >= cfg.Records {
						t.Errorf("restored run read %d records: it replayed from the start", res.Records)
					}
				})
			}
		}
	}
}

// failingBackend fails the first snapshot of its subtask: checkpoint 1.
type failingBackend struct {
	runtime.HeapStateBackend
}

type failingKeyed struct {
	runtime.KeyedBackend
	n int
}

func (failingBackend) NewKeyedBackend(info runtime.SubtaskInfo) (runtime.KeyedBackend, error) {
	be, err := runtime.HeapStateBackend{}.NewKeyedBackend(info)
	return &failingKeyed{KeyedBackend: be}, err
}

func (f *failingKeyed) Snapshot(ctx context.Context, w snapshot.SubtaskWriter, now int64) error {
	if _, ok := w.(interface{ Element(string, []byte) error }); ok {
		f.n++
		if f.n == 1 {
			return errors.New("disk full")
		}
	}
	return f.KeyedBackend.Snapshot(ctx, w, now)
}

// TestRunFailedCheckpointLeavesNothing makes one subtask fail to write
// checkpoint 1: the job goes on, chk-1 is not there, later ones are.
func TestRunFailedCheckpointLeavesNothing(t *testing.T) {
	for _, format := range []string{"memory", "filesystem"} {
		t.Run(format, func(t *testing.T) {
			job, _ := jobs.WordCount(jobs.Config{Records: 40000, Seed: 5})
			dir := t.TempDir()
			res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: 1, Backend: failingBackend{}, Format: format,
				CheckpointDir: dir, JobID: "j", CheckpointEvery: 400, Retain: 10, ChannelCapacity: 1, BatchSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			if res.FailedCheckpoints != 1 {
				t.Errorf("%d failed checkpoints, want 1", res.FailedCheckpoints)
			}
			names, _ := os.ReadDir(filepath.Join(dir, "j"))
			var got []string
			for _, n := range names {
				got = append(got, n.Name())
			}
			for _, n := range got {
				if n == "chk-1" || n == "chk-1.dump" || strings.Contains(n, "tmp") {
					t.Errorf("failed checkpoint left %q (dir holds %v)", n, got)
				}
			}
			if _, err := testReg.Open(context.Background(), res.LastCheckpoint, snapshot.OpenOptions{}); err != nil {
				t.Errorf("last checkpoint %q: %v", res.LastCheckpoint, err)
			}
		})
	}
}

// TestRunFileSource counts the words of partition files and restores the
// byte offsets after a failure.
func TestRunFileSource(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for p := range 3 {
		var sb strings.Builder
		for i := range 400 {
			fmt.Fprintf(&sb, "the quick fox %d jumps over %d\n", i%17, p)
		}
		path := filepath.Join(dir, fmt.Sprintf("part-%d.txt", p))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	cfg := jobs.Config{Input: paths}
	ref, refLines := reference(t, "wordcount", cfg, 2)
	if ref.Records != 1200 || len(refLines) != 1200*7 {
		t.Fatalf("read %d lines, emitted %d counts", ref.Records, len(refLines))
	}
	chk, out := failedRunAt2(t, "wordcount", jobs.Config{Input: paths, Records: 6000}, "memory")
	job, _ := jobs.WordCount(cfg)
	res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: 3, Restore: chk, Committer: out, Clock: runtimetest.NewManualClock(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	if res.StateDigest != ref.StateDigest || !slices.Equal(out.Lines(), refLines) {
		t.Errorf("file source restore differs: %s", firstDiff(out.Lines(), refLines))
	}
}

// TestRunRestoreErrors covers restores a job must refuse.
func TestRunRestoreErrors(t *testing.T) {
	chk, _ := failedRunAt2(t, "wordcount", jobs.Config{Records: 6000, Seed: 1}, "memory")
	job, _ := jobs.Sensors(jobs.Config{Records: 10})
	if _, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Restore: chk}); !errors.Is(err, runtime.ErrIncompatibleSnapshot) {
		t.Errorf("restoring wordcount state into sensors: %v", err)
	}
	wc, _ := jobs.WordCount(jobs.Config{Records: 10})
	if _, err := runtime.Run(context.Background(), wc, runtime.Options{Registry: testReg, Restore: chk, Parallelism: 200}); err == nil {
		t.Error("parallelism 200 above max parallelism 128 was accepted")
	}
	if _, err := runtime.Run(context.Background(), wc, runtime.Options{Registry: testReg, Restore: filepath.Join(t.TempDir(), "none")}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("missing snapshot: %v", err)
	}
}

// TestRunCheckpointInterval checkpoints by time alone and reports progress.
func TestRunCheckpointInterval(t *testing.T) {
	job, _ := jobs.WordCount(jobs.Config{Records: 300_000, Seed: 2})
	progress := 0
	res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: 2, CheckpointDir: t.TempDir(), CheckpointInterval: 5 * time.Millisecond,
		Retain: 2, Progress: func(runtime.Progress) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoints < 2 {
		t.Errorf("%d checkpoints in %v at a 5ms interval", res.Checkpoints, res.Elapsed)
	}
	if res.Elapsed > 400*time.Millisecond && progress == 0 {
		t.Errorf("no progress reported in %v", res.Elapsed)
	}
}
