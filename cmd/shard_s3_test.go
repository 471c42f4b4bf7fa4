package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// Shards and the commit work with the staging area on S3 as on HDFS: a
// rescale and a convert planned onto S3, run in 2 shards, committed once
// both have recorded (refused, naming the missing one, before), equal
// entry for entry to the single-process run, with no staging left.
func TestShardsStageOnS3(t *testing.T) {
	remote := formattest.S3Dir(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mustRun(t, "generate", "--format", "filesystem", "--output", src, "--keys", "1500", "--parallelism", "2")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"rescale", []string{"rescale", src, "--parallelism", "3"}},
		{"convert", []string{"convert", src, "--to", "rocksdb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := remote + "/" + c.name
			plan := filepath.Join(dir, c.name+"-plan.json")
			mustRun(t, append(c.args, "--output", dst, "--plan-only", plan, "--shards", "2")...)
			runShard(t, plan, "2/2")
			code, _, errOut := run(t, "commit", plan)
			if code != ExitCorrupt || !strings.Contains(errOut, "shard 1 of 2 has not finished") {
				t.Fatalf("commit with shard 1 missing: exit %d: %s", code, errOut)
			}
			if code, _, _ := run(t, "inspect", dst); code != ExitNotFound {
				t.Fatalf("inspect %s after a refused commit: exit %d", dst, code)
			}
			runShard(t, plan, "1/2")
			if out := mustRun(t, "commit", plan); !strings.Contains(out, "written by 2 shards") {
				t.Fatalf("commit: %s", out)
			}
			single := filepath.Join(dir, c.name+"-single")
			mustRun(t, append(c.args, "--output", single, "-q")...)
			sameState(t, single, dst)
			if left := remoteLeftovers(t, remote+"/"); len(left) > 0 {
				t.Errorf("left on S3 after the commit: %v", left)
			}
		})
	}
}

// runShard runs one shard in-process; its log lines go to stderr.
func runShard(t *testing.T, plan, shard string) {
	t.Helper()
	if code, out, errOut := run(t, "shard", plan, "--shard", shard, "-q"); code != ExitOK || !strings.Contains(out, "staged in") {
		t.Fatalf("shard %s: exit %d: %s%s", shard, code, out, errOut)
	}
}
