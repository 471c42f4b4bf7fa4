package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/stateutil/stateutil/runtime/runtimetest"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	_ "github.com/stateutil/stateutil/backends/filesystem"
	_ "github.com/stateutil/stateutil/backends/memory"
	_ "github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
	"github.com/stateutil/stateutil/snapshot"
)

// epoch is the manual clock's start: TTL stamps are the same in every run.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// backendCase is one state backend and snapshot format the harness runs.
type backendCase struct {
	name    string
	backend runtime.StateBackend
	format  string
	// minEvery is the fewest records between checkpoints: RocksDB
	// checkpoints upload files and take tens of milliseconds.
	minEvery int
}

func backendCases() []backendCase {
	return []backendCase{
		{name: "heap-memory", backend: runtime.HeapStateBackend{}, format: "memory"},
		{name: "heap-filesystem", backend: runtime.HeapStateBackend{}, format: "filesystem"},
		{name: "rocksdb", format: "rocksdb", minEvery: 200},
	}
}

// reference runs a job without failures or checkpoints.
func reference(t *testing.T, name string, cfg jobs.Config, p int) (*runtime.Result, []string) {
	t.Helper()
	b, err := jobs.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	job, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := runtimetest.NewMemoryCommitter()
	res, err := runtime.Run(context.Background(), job, runtime.Options{Registry: testReg, Parallelism: p, Clock: runtimetest.NewManualClock(epoch), Committer: out})
	if err != nil {
		t.Fatalf("reference run of %s: %v", name, err)
	}
	return res, out.Lines()
}

// uids lists a job's operators in chain order.
func uids(job *runtime.Job) []string {
	out := []string{job.Source.UID}
	for _, s := range job.Stages {
		out = append(out, s.UID)
	}
	return append(out, job.Sink.UID)
}

// attemptOptions configures one attempt of a trial: checkpoints every
// every records, and a random retention, batch size and channel capacity.
func attemptOptions(t *testing.T, bc backendCase, p int, dir, jobID, restore string, out runtime.Committer, every int64, rng *rand.Rand) runtime.Options {
	backend := bc.backend
	if backend == nil {
		backend = runtime.RocksDBStateBackend{LocalDir: t.TempDir()}
	}
	return runtime.Options{Registry: testReg,
		Parallelism: p, Backend: backend, Format: bc.format, CheckpointDir: dir, JobID: jobID,
		CheckpointEvery: every, Retain: 1 + rng.IntN(2), Restore: restore,
		Clock: runtimetest.NewManualClock(epoch), Committer: out, BatchSize: 1 + rng.IntN(16), ChannelCapacity: 1 + rng.IntN(4),
	}
}

// trial runs one randomized failure-and-recovery scenario and reports any
// difference from the failure-free run.
func trial(t *testing.T, bc backendCase, seed uint64, st *trialStats) error {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	names := jobs.Names()
	name := names[rng.IntN(len(names))]
	cfg := jobs.Config{Records: int64(200 + rng.IntN(1200-bc.minEvery*3)), Partitions: 1 + rng.IntN(6), Seed: seed, Union: rng.IntN(4) == 0}
	p := 1 + rng.IntN(3)
	ref, refLines := reference(t, name, cfg, p)

	b, _ := jobs.Lookup(name)
	dir, jobID := t.TempDir(), fmt.Sprintf("%032x", seed)
	out := runtimetest.NewMemoryCommitter()
	restore, failures := "", 1+rng.IntN(2)
	desc := fmt.Sprintf("job %s records %d partitions %d union %v p %d", name, cfg.Records, cfg.Partitions, cfg.Union, p)
	for attempt := 0; ; attempt++ {
		job, err := b.Build(cfg)
		if err != nil {
			return err
		}
		opts := attemptOptions(t, bc, p, dir, jobID, restore, out, int64(20+bc.minEvery+rng.IntN(150)), rng)
		if attempt < failures {
			ops := uids(job)
			opts.Failure = &runtime.Failure{Operator: ops[rng.IntN(len(ops))], Subtask: rng.IntN(p), AtRecord: 1 + rng.Int64N(cfg.Records/int64(p)+1)}
			desc += fmt.Sprintf("; fail %s/%d at %d", opts.Failure.Operator, opts.Failure.Subtask, opts.Failure.AtRecord)
		}
		res, err := runtime.Run(context.Background(), job, opts)
		if err == nil {
			if res.StateDigest != ref.StateDigest || res.StateEntries != ref.StateEntries {
				return fmt.Errorf("%s: final state %d entries %s, want %d entries %s", desc, res.StateEntries, res.StateDigest, ref.StateEntries, ref.StateDigest)
			}
			if got := out.Lines(); !slices.Equal(got, refLines) {
				return fmt.Errorf("%s: committed output differs: %d lines, want %d; %s", desc, len(got), len(refLines), firstDiff(got, refLines))
			}
			return nil
		}
		if !errors.Is(err, runtime.ErrInjectedFailure) {
			return fmt.Errorf("%s: %v", desc, err)
		}
		st.failures++
		restore, err = runtime.LatestCheckpoint(context.Background(), testReg.Storage, runtime.JobDir(dir, jobID))
		switch {
		case errors.Is(err, snapshot.ErrNotFound):
			restore = ""
			if n := out.Count(); n != 0 {
				return fmt.Errorf("%s: %d lines committed without a completed checkpoint", desc, n)
			}
		case err != nil:
			return err
		default:
			st.restores++
		}
		if rng.IntN(2) == 0 {
			p = 1 + rng.IntN(4) // recover at another parallelism
		}
		if restore != "" && p != opts.Parallelism {
			st.rescales++
		}
		desc += fmt.Sprintf("; restore %q at p %d", restore, p)
	}
}

// trialStats counts what the trials exercised.
type trialStats struct{ failures, restores, rescales int }

var seedFlag = flag.Uint64("seed", 0, "run TestRunExactlyOnce's trials from this seed")

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at %d: %q, want %q", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// TestRunExactlyOnce injects a failure at a random record of a random
// subtask, recovers from the latest completed checkpoint (sometimes at a
// new parallelism), and requires the final state and the committed output
// to equal a failure-free run's. Every trial's seed is printed on failure.
func TestRunExactlyOnce(t *testing.T) {
	trials := 50
	if testing.Short() {
		trials = 10
	}
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) {
			base := uint64(time.Now().UnixNano())
			if *seedFlag != 0 {
				base = *seedFlag
			}
			var st trialStats
			for i := range trials {
				seed := base + uint64(i)
				if err := trial(t, bc, seed, &st); err != nil {
					t.Errorf("seed %d (rerun with -seed %d): %v", seed, seed, err)
				}
			}
			t.Logf("%d trials: %d injected failures, %d restores from a checkpoint, %d of them at a new parallelism", trials, st.failures, st.restores, st.rescales)
		})
	}
}
