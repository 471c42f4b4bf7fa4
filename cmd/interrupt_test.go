package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/diff"
	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// mainEnv makes the test binary, re-executed, run Main (signal handling
// included) with these arguments; signalAtEnv makes it send itself SIGINT
// at its Nth progress report, so that the point of interruption is chosen
// by the test, not by timing.
const (
	mainEnv     = "STATEUTIL_MAIN_ARGS"
	signalAtEnv = "STATEUTIL_SIGNAL_AT"
	// pauseEnv names a file: at its first progress report the child
	// creates NAME.paused and waits until NAME.go exists.
	pauseEnv = "STATEUTIL_PAUSE"
	// killAfterCheckpointEnv names a job directory: at the first progress
	// report after a checkpoint is complete there, the child kills itself.
	killAfterCheckpointEnv = "STATEUTIL_KILL_AFTER_CHECKPOINT"
)

func interruptedMain(args []string) int {
	if pause := os.Getenv(pauseEnv); pause != "" {
		var once atomic.Bool
		progressHook = func() {
			if once.CompareAndSwap(false, true) {
				os.WriteFile(pause+".paused", nil, 0o644)
				for !exists(pause + ".go") {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
	}
	if n, err := strconv.Atoi(os.Getenv(signalAtEnv)); err == nil && n > 0 {
		var calls atomic.Int64
		progressHook = func() {
			if calls.Add(1) == int64(n) {
				syscall.Kill(os.Getpid(), syscall.SIGINT)
				// Let the signal arrive before the next step runs.
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if n, err := strconv.Atoi(os.Getenv(killAtEnv)); err == nil && n > 0 {
		var calls atomic.Int64
		progressHook = func() {
			if calls.Add(1) == int64(n) {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	if jobDir := os.Getenv(killAfterCheckpointEnv); jobDir != "" {
		progressHook = func() {
			if _, err := runtime.LatestCheckpoint(context.Background(), testReg.Storage, jobDir); err == nil {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	return runMain(args)
}

// child runs stateutil in a child process with its own TMPDIR, interrupted
// at its signalAt-th progress report (0: never), and returns its exit code
// and stderr.
func child(t *testing.T, tmp string, signalAt int, args ...string) (int, string) {
	t.Helper()
	return childWithEnv(t, nil, tmp, signalAt, args...)
}

// childWithEnv is child with more environment for the child alone, which
// tests running side by side cannot share through the process's own.
func childWithEnv(t *testing.T, env []string, tmp string, signalAt int, args ...string) (int, string) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), env...), mainEnv+"="+strings.Join(args, "\x1f"), signalAtEnv+"="+strconv.Itoa(signalAt), "TMPDIR="+tmp)
	var stderr strings.Builder
	c.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, stderr.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), stderr.String()
		}
		t.Fatalf("%v: %v", args, err)
	case <-ctx.Done():
		c.Process.Kill()
		t.Fatalf("%v: still running after 5 minutes (interrupted at progress report %d)", args, signalAt)
	}
	return 0, ""
}

// leftovers lists what stateutil left below dir: temporary names.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), storage.TempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func emptyDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// progressReports counts the progress reports an uninterrupted run makes.
func progressReports(t *testing.T, args ...string) int {
	t.Helper()
	var n atomic.Int64
	progressHook = func() { n.Add(1) }
	defer func() { progressHook = nil }()
	if code, _, errOut := run(t, append(args, "--quiet")...); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return int(n.Load())
}

// TestInterruptedWritesLeaveNothing sends SIGINT to child converts and
// rescales at random points of their writing: each either completes (exit
// 0, DST verifies and equals SRC) or stops with exit 130 leaving DST
// absent, or as it was when it existed before; no temporary file or
// directory is left anywhere, and SRC is untouched.
func TestInterruptedWritesLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	srcs := map[string]string{}
	mem := filepath.Join(dir, "src.dump")
	mustRun(t, "generate", "--output", mem, "--keys", "4000", "--value-bytes", "200", "--parallelism", "2")
	srcs["memory"] = mem
	for _, f := range []string{"filesystem", "rocksdb"} {
		srcs[f] = filepath.Join(dir, "src-"+f)
		mustRun(t, "convert", mem, "--to", f, "--output", srcs[f], "--quiet")
	}
	sums := map[string]string{}
	for f, s := range srcs {
		sums[f] = hashTree(t, s)
	}
	type trial struct{ from, what string }
	commands := func(tr trial, dst string) []string {
		src := srcs[tr.from]
		switch tr.what {
		case "convert":
			to := map[string]string{"memory": "rocksdb", "filesystem": "rocksdb", "rocksdb": "filesystem"}[tr.from]
			return []string{"convert", src, "--to", to, "--output", dst}
		case "rescale":
			return []string{"rescale", src, "--parallelism", "3", "--output", dst}
		default: // a max-parallelism change spills sorted runs to TMPDIR
			return []string{"rescale", src, "--max-parallelism", "256", "--format", "filesystem", "--output", dst}
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	counts := map[string]int{}
	reports := map[trial]int{}
	for i := range 66 {
		tr := trial{[]string{"memory", "filesystem", "rocksdb"}[i%3], []string{"convert", "rescale", "rehash"}[(i/3)%3]}
		kind := "convert"
		if tr.what != "convert" {
			kind = "rescale"
		}
		trialDir := filepath.Join(dir, fmt.Sprintf("t%d", i))
		tmp := filepath.Join(trialDir, "tmp")
		os.MkdirAll(tmp, 0o755)
		dst := filepath.Join(trialDir, "dst")
		// Every third trial forces over an existing snapshot, which must
		// survive an interruption whole.
		forced := i%3 == 2
		before := ""
		if forced {
			mustRun(t, "convert", mem, "--to", "filesystem", "--output", dst, "--quiet")
			before = hashTree(t, dst)
		}
		args := commands(tr, dst)
		if forced {
			args = append(args, "--force")
		}
		if _, ok := reports[tr]; !ok {
			reports[tr] = progressReports(t, commands(tr, filepath.Join(dir, fmt.Sprintf("count-%d", i)))...)
		}
		at := 1 + rng.IntN(max(1, reports[tr]))
		code, errOut := child(t, tmp, at, append(args, "--quiet")...)
		switch code {
		case ExitInterrupted:
			counts[kind+" interrupted"]++
			if forced {
				if got := hashTree(t, dst); got != before {
					t.Errorf("%v interrupted at report %d: the snapshot it was to replace changed", args, at)
				}
			} else if exists(dst) {
				t.Errorf("%v interrupted at report %d left %s", args, at, dst)
			}
			if !strings.Contains(errOut, "interrupted") {
				t.Errorf("%v: exit 130 without saying so: %s", args, errOut)
			}
		case ExitOK:
			counts[kind+" completed"]++
			sameState(t, srcs[tr.from], dst)
		default:
			t.Fatalf("%v interrupted at report %d: exit %d: %s", args, at, code, errOut)
		}
		if left := emptyDir(t, tmp); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left in TMPDIR: %v", args, at, left)
		}
		if left := leftovers(t, trialDir); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left %v", args, at, left)
		}
	}
	for f, s := range srcs {
		if hashTree(t, s) != sums[f] {
			t.Errorf("SRC %s changed", s)
		}
	}
	t.Logf("66 trials: %v", counts)
	if counts["convert interrupted"] < 20 || counts["rescale interrupted"] < 20 {
		t.Errorf("fewer than 20 interrupted trials of convert or rescale: %v", counts)
	}
}

// sameState fails t unless b holds a's state entry for entry and element
// for element, whatever their formats and parallelisms.
func sameState(t *testing.T, a, b string) {
	t.Helper()
	ctx := context.Background()
	ra, err := testReg.Open(ctx, a, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := testReg.Open(ctx, b, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	res, err := diff.Compare(ctx, a, ra, b, rb, diff.Options{Entries: true, Codecs: testReg.Codecs})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.OperatorsAdded)+len(res.OperatorsRemoved) > 0 {
		t.Fatalf("%s vs %s: operators added %v, removed %v", a, b, res.OperatorsAdded, res.OperatorsRemoved)
	}
	for _, o := range res.Operators {
		differ := len(o.Keys) > 0 || o.KeysOmitted > 0 || len(o.ElementsDiffer) > 0 || len(o.StatesAdded)+len(o.StatesRemoved)+len(o.StatesChanged) > 0
		rescaled := false
		for _, c := range o.Changes {
			rescaled = rescaled || c.Field == "parallelism"
		}
		for _, c := range o.Counts {
			// Broadcast and union state count once per subtask; the
			// element comparison has brought them to one layout.
			differ = differ || (c.A != c.B && !(rescaled && c.Scope == "operator"))
		}
		if differ {
			t.Fatalf("%s vs %s: operator %s differs: %+v", a, b, o.Label(), o)
		}
	}
}

// TestInterruptedRunLeavesNothing sends SIGINT to child runs of a job
// that checkpoints, at random progress reports: each ends with exit 0 or
// 130; every checkpoint left in the job directory is complete and
// verifies, a savepoint is there whole or not at all, and no temporary
// file or directory (the RocksDB working instances included) is left.
func TestInterruptedRunLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	counts := map[string]int{}
	for i := range 24 {
		backend := []string{"rocksdb", "filesystem", "memory"}[i%3]
		trialDir := filepath.Join(dir, fmt.Sprintf("t%d", i))
		tmp := filepath.Join(trialDir, "tmp")
		os.MkdirAll(tmp, 0o755)
		chk := filepath.Join(trialDir, "chk")
		sp := filepath.Join(trialDir, "sp")
		if backend == "memory" {
			sp += ".dump"
		}
		// Heap runs are ten times faster: give them ten times the records,
		// so that every run lasts many progress reports (5 a second).
		records := map[string]string{"rocksdb": "300000", "filesystem": "3000000", "memory": "3000000"}[backend]
		every := map[string]string{"rocksdb": "40000", "filesystem": "400000", "memory": "400000"}[backend]
		args := []string{"run", "wordcount", "--backend", backend, "--records", records, "--checkpoint-every", every,
			"--checkpoint-dir", chk, "--job-id", "job", "--savepoint", sp, "--quiet"}
		at := 1 + rng.IntN(4)
		code, errOut := child(t, tmp, at, args...)
		switch code {
		case ExitInterrupted:
			counts[backend+" interrupted"]++
		case ExitOK:
			counts[backend+" completed"]++
		default:
			t.Fatalf("%v interrupted at report %d: exit %d: %s", args, at, code, errOut)
		}
		if exists(sp) {
			if code, out, errOut := run(t, "verify", sp); code != ExitOK {
				t.Errorf("%v: the savepoint left does not verify: %s%s", args, out, errOut)
			}
		} else if code == ExitOK {
			t.Errorf("%v completed without its savepoint", args)
		}
		entries, _ := os.ReadDir(filepath.Join(chk, "job"))
		for _, e := range entries {
			if e.Name() == "shared" || e.Name() == "taskowned" {
				continue
			}
			p := filepath.Join(chk, "job", e.Name())
			if code, out, errOut := run(t, "verify", p); code != ExitOK {
				t.Errorf("%v: %s, left in the job directory, does not verify: %s%s", args, e.Name(), out, errOut)
			}
		}
		if left := emptyDir(t, tmp); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left in TMPDIR: %v", args, at, left)
		}
		if left := leftovers(t, trialDir); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left %v", args, at, left)
		}
	}
	t.Logf("24 trials: %v", counts)
	interrupted := counts["rocksdb interrupted"] + counts["filesystem interrupted"] + counts["memory interrupted"]
	if interrupted < 20 {
		t.Errorf("only %d of 24 runs were interrupted: %v", interrupted, counts)
	}
}

// TestRacingConvertsToOneDestination starts two converts to one new DST:
// while the first is writing, the second is refused as "in use"; the first
// then completes, and a third, after it, is refused because DST exists.
// Exactly one result is at DST: the first's.
func TestRacingConvertsToOneDestination(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.dump")
	mustRun(t, "generate", "--output", src, "--keys", "2000")
	for i, to := range []string{"memory", "filesystem", "rocksdb", "filesystem", "rocksdb"} {
		dst := filepath.Join(dir, fmt.Sprintf("dst-%d", i))
		raceConverts(t, src, dst, to, filepath.Join(dir, fmt.Sprintf("pause-%d", i)))
		if left := leftovers(t, dir); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	}
}

// raceConverts starts a convert of src to dst in format to and holds it
// mid-write (pause names its pause files); a second convert to dst must
// fail "in use" meanwhile, the first must finish, a third must find dst
// "already" there, and dst must hold the first's snapshot.
func raceConverts(t *testing.T, src, dst, to, pause string) {
	t.Helper()
	first := exec.Command(os.Args[0], "-test.run=^$")
	first.Env = append(os.Environ(), mainEnv+"="+strings.Join([]string{"convert", src, "--to", to, "--output", dst, "--quiet"}, "\x1f"), pauseEnv+"="+pause)
	var firstErr strings.Builder
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !exists(pause + ".paused") {
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("the first convert never started writing: %s", firstErr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, errOut := child(t, t.TempDir(), 0, "convert", src, "--to", "memory", "--output", dst, "--quiet")
	if code != ExitUsage || !strings.Contains(errOut, "in use") {
		t.Errorf("second convert to %s while the first writes: exit %d: %s", dst, code, errOut)
	}
	os.WriteFile(pause+".go", nil, 0o644)
	if err := first.Wait(); err != nil {
		t.Fatalf("first convert: %v: %s", err, firstErr.String())
	}
	code, errOut = child(t, t.TempDir(), 0, "convert", src, "--to", "memory", "--output", dst, "--quiet")
	if code != ExitUsage || !strings.Contains(errOut, "already") {
		t.Errorf("third convert to %s after the first: exit %d: %s", dst, code, errOut)
	}
	r, err := testReg.Open(context.Background(), dst, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Format; got != to {
		t.Errorf("%s holds a %s snapshot, the first convert wrote %s", dst, got, to)
	}
	r.Close()
	sameState(t, src, dst)
}
