package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// The tests here run shards as YARN applications on the harness's
// MiniYARNCluster (testenv/hdfs, started by scripts/hdfs-start.sh), over
// its MiniDFSCluster, with the stateutil binary built from this tree.

// yarnEnv is the ResourceManager's address and the ApplicationMaster's
// classpath; it skips (or fails, where HDFS is required) without them.
func yarnEnv(t *testing.T) (rm, amClasspath string) {
	t.Helper()
	return yarnEnvOf(t, "STATEUTIL_TEST_YARN", "scripts/hdfs-start.sh && . .cache/hdfs.env")
}

// yarnEnvOf is yarnEnv for the cluster whose variables start with prefix.
func yarnEnvOf(t *testing.T, prefix, start string) (rm, amClasspath string) {
	t.Helper()
	rm, cp := os.Getenv(prefix), os.Getenv(prefix+"_AM_CLASSPATH")
	if rm == "" || cp == "" {
		msg := prefix + " is not set; start the test cluster with: " + start
		if formattest.HDFSRequired() {
			t.Fatal(msg + " (required under CI=true or STATEUTIL_REQUIRE_HDFS=1)")
		}
		t.Skip(msg)
	}
	return rm, cp
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// stateutilBinary builds the binary the containers run, once per test run.
func stateutilBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp(sharedTemp, "yarn-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "stateutil")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// exe runs the built binary with extra environment; it returns the exit
// code (-1 when a signal ended it), stdout and stderr. Every run is
// bounded: a hung YARN application fails the test, it does not hang it.
func exe(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, stateutilBinary(t), args...)
	c.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("stateutil %s: still running after 5 minutes; stderr: %s", strings.Join(args, " "), errOut.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func mustExe(t *testing.T, env []string, args ...string) string {
	t.Helper()
	code, out, errOut := exe(t, env, args...)
	if code != 0 {
		t.Fatalf("stateutil %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// yarnArgs are the flags that run a copy's shards on the test cluster.
func yarnArgs(rm, cp string, shards int, extra ...string) []string {
	return append([]string{"--yarn", rm, "--shards", fmt.Sprint(shards), "--queue", "default", "--yarn-am-classpath", cp, "-q"}, extra...)
}

// mustEqual fails unless diff --entries finds a and b equal.
func mustEqual(t *testing.T, a, b string) {
	t.Helper()
	code, out, errOut := run(t, "diff", a, b, "--entries")
	if code != 0 || !strings.Contains(out, "equal") {
		t.Fatalf("diff %s %s: exit %d: %s%s", a, b, code, out, errOut)
	}
}

// existsAt reports whether anything is at a location.
func existsAt(t *testing.T, uri string) bool {
	t.Helper()
	st, p, err := testReg.Storage.Resolve(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(context.Background(), p)
	return err == nil
}

// stagingOf finds the staging areas in dir.
func stagingOf(t *testing.T, dir string) []string {
	t.Helper()
	st, p, err := testReg.Storage.Resolve(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.List(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name, storage.TempPrefix+"shards-") {
			out = append(out, st.URI(e.Path))
		}
	}
	return out
}

// TestYARN runs the trials below side by side, each in an HDFS directory
// of its own: most of their time goes to YARN's scheduling of containers
// and to the NameNode's lease expiry, which leave the CPU to the others.
func TestYARN(t *testing.T) {
	rm, cp := yarnEnv(t)
	for _, trial := range []struct {
		name string
		run  func(t *testing.T, rm, cp, dir string)
	}{
		{"ShardsMatchSingleProcess", yarnShardsMatchSingleProcess},
		{"ShardKilledAndRetried", yarnShardKilledAndRetried},
		{"ShardFailsForGood", yarnShardFailsForGood},
		{"CommitKilledAndRerun", yarnCommitKilledAndRerun},
	} {
		// Made here: making it keeps the machine's Hadoop setup out of
		// the test through t.Setenv, which a parallel test cannot call.
		dir := formattest.HDFSDir(t)
		t.Run(trial.name, func(t *testing.T) {
			t.Parallel()
			trial.run(t, rm, cp, dir)
		})
	}
}

// A rescale and a convert in 3 shards on YARN give, entry for entry, what
// the single process gives, and leave no staging behind.
func yarnShardsMatchSingleProcess(t *testing.T, rm, cp, dir string) {
	src := dir + "/src"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--output", src)
	for _, c := range []struct{ name, cmd string }{
		{"rescale", "rescale --parallelism 5 --max-parallelism 256"},
		{"convert", "convert --to rocksdb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := strings.Fields(c.cmd)
			single, sharded := dir+"/"+c.name+"-single", dir+"/"+c.name+"-yarn"
			mustRun(t, append(append([]string{args[0], src}, args[1:]...), "--output", single, "-q")...)
			start := time.Now()
			mustExe(t, nil, append(append(append([]string{args[0], src}, args[1:]...), "--output", sharded), yarnArgs(rm, cp, 3)...)...)
			t.Logf("%s in 3 shards on YARN: %s", c.name, time.Since(start).Round(time.Millisecond))
			mustEqual(t, single, sharded)
			if left := stagingOf(t, dir); len(left) > 0 {
				t.Fatalf("staging left behind: %v", left)
			}
		})
	}
}

// A shard killed half way (SIGKILL, after its first state is written) is
// started again in its container and the result is whole.
func yarnShardKilledAndRetried(t *testing.T, rm, cp, dir string) {
	src, single, sharded := dir+"/src", dir+"/single", dir+"/yarn"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--output", src)
	mustRun(t, "rescale", src, "--parallelism", "4", "--output", single, "-q")
	marker := filepath.Join(t.TempDir(), "killed")
	mustExe(t, nil, append([]string{"rescale", src, "--parallelism", "4", "--output", sharded},
		yarnArgs(rm, cp, 3, "--yarn-retries", "2", "--yarn-shard-env", "STATEUTIL_TEST_KILL_SHARD_ONCE="+marker)...)...)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no shard was killed (marker %s: %v)", marker, err)
	}
	mustEqual(t, single, sharded)
}

// A shard that fails for good (its source state is damaged, and every
// retry fails as well) fails the application; the error names the shard
// and shows its log, and nothing is committed.
func yarnShardFailsForGood(t *testing.T, rm, cp, dir string) {
	src, dst := dir+"/src", dir+"/yarn"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--output", src)
	// Damage one keyed state file: the metadata (and so the plan) is
	// unchanged, the state under it no longer reads.
	damageLargestFile(t, src)
	code, _, errOut := exe(t, nil, append([]string{"rescale", src, "--parallelism", "4", "--output", dst}, yarnArgs(rm, cp, 3, "--yarn-retries", "1")...)...)
	if code == 0 {
		t.Fatal("rescale over a damaged source succeeded on YARN")
	}
	for _, want := range []string{"shard failed", "of 3 failed", "its log", "checksum mismatch"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("error lacks %q:\n%s", want, errOut)
		}
	}
	if existsAt(t, dst) {
		t.Fatalf("%s exists after a failed application", dst)
	}
	// The log the error names stays on HDFS, and is that shard's.
	m := regexp.MustCompile(`shard (\d) of 3 failed; its log \((hdfs://\S+)\) ends`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("the error names no shard and log:\n%s", errOut)
	}
	st, p, err := testReg.Storage.Resolve(context.Background(), m[2])
	if err != nil {
		t.Fatal(err)
	}
	log, err := storage.ReadAll(context.Background(), st, p, 1<<20)
	if err != nil {
		t.Fatalf("the failed shard's log, after the application: %v", err)
	}
	for _, want := range []string{"shard " + m[1] + "/3 failed after", "checksum mismatch"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log %s lacks %q:\n%s", m[2], want, log)
		}
	}
	t.Logf("error:\n%s", errOut)
}

// damageLargestFile flips bytes in the middle of the largest file of a
// filesystem snapshot on HDFS.
func damageLargestFile(t *testing.T, uri string) {
	t.Helper()
	ctx := context.Background()
	st, p, err := testReg.Storage.Resolve(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.List(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var big storage.Info
	for _, e := range entries {
		if !e.IsDir && e.Name != "_metadata" && e.Size > big.Size {
			big = e
		}
	}
	if big.Size < 1024 {
		t.Fatalf("no state file to damage in %s", uri)
	}
	data, err := storage.ReadAll(ctx, st, big.Path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 2; i < len(data)/2+64; i++ {
		data[i] ^= 0xff
	}
	if err := storage.WriteFile(ctx, st, big.Path, data); err != nil {
		t.Fatal(err)
	}
}

// A commit killed after it wrote the metadata, before the snapshot moved
// to the destination, leaves nothing at the destination; stateutil commit
// run again finishes, and the result matches the single process.
func yarnCommitKilledAndRerun(t *testing.T, rm, cp, dir string) {
	src, single, sharded := dir+"/src", dir+"/single", dir+"/yarn"
	mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--output", src)
	mustRun(t, "convert", src, "--to", "rocksdb", "--output", single, "-q")
	code, _, errOut := exe(t, []string{"STATEUTIL_TEST_KILL_COMMIT=after-metadata"},
		append([]string{"convert", src, "--to", "rocksdb", "--output", sharded}, yarnArgs(rm, cp, 3)...)...)
	if code != -1 {
		t.Fatalf("the commit was not killed: exit %d: %s", code, errOut)
	}
	if existsAt(t, sharded) {
		t.Fatalf("%s exists after a commit killed before moving it there", sharded)
	}
	if code, out, errOut := run(t, "inspect", sharded); code == 0 {
		t.Fatalf("inspect accepts what a killed commit left: %s", out)
	} else {
		t.Logf("inspect after the killed commit: exit %d: %s", code, strings.TrimSpace(errOut))
	}
	staging := stagingOf(t, dir)
	if len(staging) != 1 {
		t.Fatalf("staging areas after the killed commit: %v", staging)
	}
	// The killed commit's claim on HDFS is the namenode's lease on its
	// claim file, which lapses a minute after the client's last renewal:
	// until then the commit is refused as "in use".
	var out string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		code, o, errOut := run(t, "commit", staging[0]+"/plan.json")
		if code == 0 {
			out = o
			break
		}
		if !strings.Contains(errOut, "in use") || time.Now().After(deadline) {
			t.Fatalf("commit after the killed one: exit %d: %s", code, errOut)
		}
		time.Sleep(2 * time.Second)
	}
	if !strings.Contains(out, "committed plan") {
		t.Fatalf("commit: %s", out)
	}
	mustEqual(t, single, sharded)
	// A commit of a plan already committed says so and changes nothing.
	if code, _, errOut := run(t, "commit", staging[0]+"/plan.json"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("commit after the staging area is gone: exit %d: %s", code, errOut)
	}
}
