package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// TestHAHDFSFailoverTrials runs convert and rescale from and to the HA
// nameservice, and a job that checkpoints there (run --checkpoint-dir),
// while its NameNodes fail over, or the active one dies, at a
// random progress step of the run, or none is active for longer than the
// client waits (an outage: every fifth trial, from the fifth on). Each run
// either completes, with an
// output (the job's savepoint) equal to the same command's on local disk,
// or fails leaving no _metadata that verify accepts (the job's latest
// checkpoint must verify), and then the same command run again (the job
// restored from that checkpoint) completes; a failover the NameNodes agree on must not fail it at all.
// STATEUTIL_HA_TRIALS sets the number of trials (4 by default); the
// outcomes are counted in the log.
func TestHAHDFSFailoverTrials(t *testing.T) {
	h := formattest.HAHDFSCluster(t)
	trials := trialCount(t, "STATEUTIL_HA_TRIALS", 4)
	remote := h.Dir(t)
	dir := t.TempDir()
	gen := []string{"generate", "--format", "filesystem", "--keys", "20000", "--value-bytes", "200", "--parallelism", "2", "--output"}
	mustRun(t, append(gen, filepath.Join(dir, "src"))...)
	mustRun(t, append(gen, remote+"/src")...)
	commands := map[string]func(src, dst string) []string{
		"convert": func(src, dst string) []string {
			return []string{"convert", src, "--to", "rocksdb", "--output", dst, "--quiet"}
		},
		"rescale": func(src, dst string) []string {
			return []string{"rescale", src, "--parallelism", "3", "--output", dst, "--quiet"}
		},
		// Its output is the savepoint; the checkpoints go beside it.
		"run": func(_, dst string) []string {
			return []string{"run", "wordcount", "--backend", "rocksdb", "--records", "100000", "--checkpoint-every", "25000",
				"--checkpoint-dir", dst + "-chk", "--job-id", "job", "--savepoint", dst, "--quiet"}
		},
	}
	kinds := []string{"convert", "rescale", "run"}
	want := map[string]string{}
	steps := map[string]int{}
	for _, k := range kinds {
		want[k] = filepath.Join(dir, k)
		mustRun(t, commands[k](filepath.Join(dir, "src"), want[k])...)
		steps[k] = progressReports(t, commands[k](remote+"/src", remote+"/steps-"+k)...)
	}
	// The job's latest checkpoint, "" if it made none.
	latest := func(dst string) string {
		p, err := runtime.LatestCheckpoint(context.Background(), testReg.Storage, runtime.JobDir(dst+"-chk", "job"))
		if errors.Is(err, snapshot.ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Cleanup(func() { progressHook = nil })

	rng := rand.New(rand.NewPCG(27, 3))
	counts := map[string]int{}
	for i := range trials {
		kind := kinds[i%len(kinds)]
		fault := "failover"
		switch {
		case i%5 == 4:
			fault = "standby"
		case i%3 == 2:
			fault = "kill-active"
		}
		// A run's last step may not come (its checkpoints follow the clock):
		// the fault comes before it. The job's steps are progress reports a
		// few times a second, as many as the machine's speed makes: its
		// fault comes in the first half, and should the run still end
		// before it, the trial is run again with the fault at the first.
		last := steps[kind] - 1
		if kind == "run" {
			last = steps[kind] / 2
		}
		at := 1 + rng.IntN(max(1, last))
		var (
			argv          []string
			label, errOut string
			code          int
		)
		for attempt := 0; ; attempt++ {
			argv = commands[kind](remote+"/src", fmt.Sprintf("%s/t%d-%d", remote, i, attempt))
			var calls atomic.Int64
			faults := make(chan error, 2)
			progressHook = func() {
				if calls.Add(1) != int64(at) {
					return
				}
				_, err := h.Admin(fault)
				faults <- err
				if fault == "standby" {
					// Longer than the client's 12.7 s of retries, then one becomes active.
					go func() {
						time.Sleep(15 * time.Second)
						_, err := h.Admin("failover")
						faults <- err
					}()
				}
			}
			code, _, errOut = run(t, argv...)
			progressHook = nil
			label = fmt.Sprintf("trial %d: %s with %s at step %d of %d", i, kind, fault, at, steps[kind])
			if calls.Load() < int64(at) {
				if kind == "run" && attempt == 0 && code == ExitOK {
					t.Logf("%s: the run ended after %d steps, before the fault: again with the fault at step 1", label, calls.Load())
					sameState(t, want[kind], argv[len(argv)-2])
					at = 1
					continue
				}
				t.Fatalf("%s: the run ended after %d steps, before the fault", label, calls.Load())
			}
			answers := 1
			if fault == "standby" {
				answers = 2 // and the failover that ends the outage
			}
			for range answers {
				if err := <-faults; err != nil {
					t.Fatalf("%s: %v", label, err)
				}
			}
			break
		}
		dst := argv[len(argv)-2]
		if fault == "kill-active" {
			h.Do(t, "restart-namenode")
		}
		if kind == "run" {
			if chk := latest(dst); chk != "" {
				if vcode, out, errOut := run(t, "verify", chk); vcode != ExitOK {
					t.Errorf("%s: the job's latest checkpoint %s does not verify: %s%s", label, chk, out, errOut)
				}
			}
		}
		switch {
		case code == ExitOK:
			counts["completed"]++
			sameState(t, want[kind], dst)
		case code == ExitInternal:
			t.Fatalf("%s: exit %d: %s", label, code, errOut)
		case fault == "failover":
			t.Errorf("%s: exit %d: %s", label, code, errOut)
		default:
			if vcode, _, _ := run(t, "verify", dst); vcode == ExitOK {
				counts["accepted partial output"]++
				t.Errorf("%s: failed (exit %d: %s), but verify accepts what it left at %s", label, code, errOut, dst)
				continue
			}
			counts["failed cleanly"]++
			t.Logf("%s: failed: exit %d: %s", label, code, strings.TrimSpace(errOut))
			rerun := argv
			if kind == "run" && latest(dst) != "" {
				rerun = append(rerun, "--restore", latest(dst))
			}
			if code, _, errOut := run(t, rerun...); code != ExitOK {
				t.Errorf("%s: the rerun failed: exit %d: %s", label, code, errOut)
				continue
			}
			counts["rerun completed"]++
			sameState(t, want[kind], dst)
		}
	}
	t.Logf("%d failover trials on %s: %d completed, %d failed cleanly, %d of them completed on a rerun, %d accepted partial outputs",
		trials, h.URI, counts["completed"], counts["failed cleanly"], counts["rerun completed"], counts["accepted partial output"])
}

// trialCount is the number of trials the variable env asks for, else def.
func trialCount(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count", env, v)
	}
	return n
}
