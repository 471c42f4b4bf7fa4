package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
	"github.com/stateutil/stateutil/runtime/runtimetest"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// A job checkpointing to S3 fails after its second checkpoint and is
// restored, at another parallelism, from the latest checkpoint it finds
// there: state and committed output equal a failure-free run's, every
// line committed once. Every checkpoint left on S3 opens, and no more of
// them than retained.
func TestCheckpointsOnS3RestoreExactlyOnce(t *testing.T) {
	remote := formattest.S3Dir(t)
	cfg := jobs.Config{Records: 3000, Partitions: 3, Seed: 11}
	ref, refLines := reference(t, "wordcount", cfg, 2)
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := remote + "/" + bc.name
			jobDir := runtime.JobDir(dir, "job")
			out := runtimetest.NewMemoryCommitter()
			opts := func(p int, restore string) runtime.Options {
				o := runtime.Options{Registry: testReg, Parallelism: p, Backend: bc.backend, Format: bc.format,
					CheckpointDir: dir, JobID: "job", CheckpointEvery: 400, Retain: 2, Restore: restore,
					Clock: runtimetest.NewManualClock(epoch), Committer: out}
				if o.Backend == nil {
					o.Backend = runtime.RocksDBStateBackend{LocalDir: t.TempDir()}
				}
				return o
			}
			job, _ := jobs.WordCount(cfg)
			failing := opts(2, "")
			failing.Failure = &runtime.Failure{Operator: job.Sink.UID, Subtask: 1, AfterCheckpoint: 2}
			if _, err := runtime.Run(ctx, job, failing); !errors.Is(err, runtime.ErrInjectedFailure) {
				t.Fatalf("run with a failure after checkpoint 2: %v", err)
			}
			latest, err := runtime.LatestCheckpoint(ctx, testReg.Storage, jobDir)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(latest, jobDir+"/chk-") {
				t.Fatalf("latest checkpoint %q, want one in %s", latest, jobDir)
			}
			again, _ := jobs.WordCount(cfg)
			res, err := runtime.Run(ctx, again, opts(3, latest))
			if err != nil {
				t.Fatalf("restore from %s: %v", latest, err)
			}
			if res.RestoredFrom != latest {
				t.Errorf("restored from %q, want %q", res.RestoredFrom, latest)
			}
			if res.StateDigest != ref.StateDigest || res.StateEntries != ref.StateEntries {
				t.Errorf("final state %d entries %s, want %d entries %s", res.StateEntries, res.StateDigest, ref.StateEntries, ref.StateDigest)
			}
			if got := out.Lines(); !slices.Equal(got, refLines) {
				t.Errorf("committed output: %d lines, want %d; %s", len(got), len(refLines), firstDiff(got, refLines))
			}
			st, p, err := testReg.Storage.Resolve(ctx, jobDir)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := st.List(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var checkpoints []string
			for _, e := range entries {
				if !strings.HasPrefix(e.Name, "chk-") {
					continue
				}
				checkpoints = append(checkpoints, e.Name)
				r, err := testReg.Open(ctx, jobDir+"/"+e.Name, snapshot.OpenOptions{})
				if err != nil {
					t.Errorf("%s, left on S3, does not open: %v", e.Name, err)
					continue
				}
				r.Close()
			}
			if len(checkpoints) == 0 || len(checkpoints) > 2 {
				t.Errorf("checkpoints left on S3: %v; want 1 or 2 (retain 2)", checkpoints)
			}
		})
	}
}
