package cmd

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// TestHDFSDataNodeConvertTrials runs convert from local disk to the cluster
// of three DataNodes, stopping a random DataNode at a random progress step.
// Each run either completes, its writes going on without the DataNode,
// with an output equal to the same convert's on local disk, or fails
// leaving no _metadata that verify accepts, and then, with the DataNode
// back, the same convert run again completes.
// STATEUTIL_DN_TRIALS sets the number of trials (2 by default); the outcomes
// are counted in the log.
func TestHDFSDataNodeConvertTrials(t *testing.T) {
	d := formattest.DNHDFSCluster(t)
	trials := trialCount(t, "STATEUTIL_DN_TRIALS", 2)
	remote := d.Dir(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mustRun(t, "generate", "--format", "filesystem", "--keys", "20000", "--value-bytes", "200", "--parallelism", "2", "--output", src)
	convert := func(dst string) []string {
		return []string{"convert", src, "--to", "rocksdb", "--output", dst, "--quiet"}
	}
	want := filepath.Join(dir, "want")
	mustRun(t, convert(want)...)
	steps := progressReports(t, convert(remote+"/steps")...)
	t.Cleanup(func() { progressHook = nil })

	rng := rand.New(rand.NewPCG(27, 4))
	counts := map[string]int{}
	for i := range trials {
		at := 1 + rng.IntN(max(1, steps))
		args := convert(fmt.Sprintf("%s/t%d", remote, i))
		dst := args[len(args)-2]
		var calls atomic.Int64
		stopped := make(chan error, 1)
		progressHook = func() {
			if calls.Add(1) == int64(at) {
				_, err := d.Control("stop-datanode random")
				stopped <- err
			}
		}
		code, _, errOut := run(t, args...)
		progressHook = nil
		label := fmt.Sprintf("trial %d: convert with a DataNode stopped at step %d of %d", i, at, steps)
		if calls.Load() < int64(at) {
			t.Fatalf("%s: the run ended after %d steps, before the fault", label, calls.Load())
		}
		if err := <-stopped; err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if _, err := d.Control("start-datanode"); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		switch {
		case code == ExitOK:
			counts["completed"]++
			sameState(t, want, dst)
		case code == ExitInternal:
			t.Fatalf("%s: exit %d: %s", label, code, errOut)
		default:
			if vcode, _, _ := run(t, "verify", dst); vcode == ExitOK {
				counts["accepted partial output"]++
				t.Errorf("%s: failed (exit %d: %s), but verify accepts what it left at %s", label, code, errOut, dst)
				continue
			}
			counts["failed cleanly"]++
			t.Logf("%s: failed: exit %d: %s", label, code, strings.TrimSpace(errOut))
			if code, _, errOut := run(t, args...); code != ExitOK {
				t.Errorf("%s: the rerun failed: exit %d: %s", label, code, errOut)
				continue
			}
			counts["rerun completed"]++
			sameState(t, want, dst)
		}
	}
	t.Logf("%d DataNode trials of convert to %s: %d completed without the DataNode, %d failed cleanly, %d of them completed on a rerun, %d accepted partial outputs",
		trials, d.Addr, counts["completed"], counts["failed cleanly"], counts["rerun completed"], counts["accepted partial output"])
}
