package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
)

// A failure injected after a checkpoint comes after that checkpoint
// completed, on every operator and subtask, also when the subtask sees
// no record after the barrier (it fails at the end of its input).
func TestFailureAfterCheckpointFollowsIt(t *testing.T) {
	for _, name := range jobs.Names() {
		b, _ := jobs.Lookup(name)
		probe, _ := b.Build(jobs.Config{Records: 10})
		uids := []string{probe.Stages[0].UID}
		for _, s := range probe.Stages[1:] {
			uids = append(uids, s.UID)
		}
		for _, uid := range uids {
			for sub := range 2 {
				for _, every := range []int64{50, 900} { // many checkpoints, or only the first
					job, _ := b.Build(jobs.Config{Records: 1000, Seed: 3})
					dir := t.TempDir()
					res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: 2, CheckpointDir: dir, JobID: "job",
						CheckpointEvery: every, Failure: &runtime.Failure{Operator: uid, Subtask: sub, AfterCheckpoint: 1}})
					if !errors.Is(err, runtime.ErrInjectedFailure) {
						t.Fatalf("%s %s/%d every %d: %v", name, uid, sub, every, err)
					}
					if res == nil || res.Checkpoints < 1 {
						t.Fatalf("%s %s/%d every %d: failed with %v checkpoints behind it", name, uid, sub, every, res)
					}
					if _, err := runtime.LatestCheckpoint(context.Background(), testReg.Storage, runtime.JobDir(dir, "job")); err != nil {
						t.Fatalf("%s %s/%d: %v", name, uid, sub, err)
					}
				}
			}
		}
	}
}

// A job directory of memory-format checkpoints (chk-N.dump files) restores
// from its latest checkpoint, as one of directories does.
func TestRestoreFromJobDirectory(t *testing.T) {
	for _, format := range []string{"memory", "filesystem"} {
		job, _ := jobs.WordCount(jobs.Config{Records: 2000, Seed: 4})
		dir := t.TempDir()
		if _, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: 2, Format: format,
			CheckpointDir: dir, JobID: "job", CheckpointEvery: 300, Retain: 3}); err != nil {
			t.Fatal(err)
		}
		latest, err := runtime.LatestCheckpoint(context.Background(), testReg.Storage, runtime.JobDir(dir, "job"))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := jobs.WordCount(jobs.Config{Records: 2000, Seed: 4})
		res, err := runtime.Run(context.Background(), again, runtime.Options{Registry: testReg, Parallelism: 3, Restore: runtime.JobDir(dir, "job")})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if res.RestoredFrom != latest {
			t.Errorf("%s: restored from %q, want the latest checkpoint %q", format, res.RestoredFrom, latest)
		}
	}
}
