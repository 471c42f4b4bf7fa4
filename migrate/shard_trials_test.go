package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// The hostile trials of a sharded rewrite (scripts/shard-trials.sh runs
// them): every staged file flipped at sampled offsets and truncated,
// shards missing from the commit, and shards and commits killed (SIGKILL)
// at random points, on local disk and on S3. Each trial ends in one of
// three verdicts: refused (the commit failed and nothing a reader accepts
// is at the destination), completed (the destination verifies equal to
// the source) or BAD (a silent wrong result, a panic or internal error,
// or a destination a rerun and a forced convert cannot use).
// STATEUTIL_TRIALS=quick runs a small sample, =full the closing count;
// STATEUTIL_TRIALS_SEED fixes the offsets and delays (default 29).

type verdict string

const (
	refused   verdict = "refused"
	completed verdict = "completed"
	bad       verdict = "BAD"
)

type tally struct {
	rows  []string
	count map[string]map[verdict]int
	bads  []string
}

func (tl *tally) add(class string, v verdict, why string) {
	if tl.count[class] == nil {
		tl.count[class] = map[verdict]int{}
		tl.rows = append(tl.rows, class)
	}
	tl.count[class][v]++
	if v == bad {
		tl.bads = append(tl.bads, class+": "+why)
	}
}

func TestShardTrials(t *testing.T) {
	mode := os.Getenv("STATEUTIL_TRIALS")
	if mode == "" {
		t.Skip("STATEUTIL_TRIALS=quick|full runs the trials (scripts/shard-trials.sh)")
	}
	full := mode == "full"
	seed := uint64(29)
	if s := os.Getenv("STATEUTIL_TRIALS_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	tl := &tally{count: map[string]map[verdict]int{}}
	offsets, kills := 2, 3
	if full {
		offsets, kills = 8, 15
	}
	small := generated(t, 300, 3)
	big := generated(t, 4000, 2)
	for _, c := range []struct{ format, src string }{{"filesystem", big}, {"rocksdb", small}, {"memory", small}, {"flink", flinkSource}} {
		damageTrials(t, tl, rng, c.format, c.src, offsets)
	}
	bin := buildStateutil(t)
	locations := []string{t.TempDir()}
	if os.Getenv("STATEUTIL_TEST_S3") != "" {
		locations = append(locations, formattest.S3Dir(t))
	} else {
		t.Log("STATEUTIL_TEST_S3 unset (scripts/s3-start.sh; . .cache/s3.env): kill trials on local disk only")
	}
	for _, loc := range locations {
		where := "local"
		if strings.HasPrefix(loc, "s3://") {
			where = "s3"
		}
		for i := range kills {
			killTrial(t, tl, rng, bin, small, loc, where, "shard", i)
			killTrial(t, tl, rng, bin, small, loc, where, "commit", i)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-56s %8s %9s %4s\n", "trial", "refused", "completed", "BAD")
	total := map[verdict]int{}
	for _, r := range tl.rows {
		c := tl.count[r]
		fmt.Fprintf(&b, "%-56s %8d %9d %4d\n", r, c[refused], c[completed], c[bad])
		for v, n := range c {
			total[v] += n
		}
	}
	fmt.Fprintf(&b, "%-56s %8d %9d %4d\n", "total", total[refused], total[completed], total[bad])
	fmt.Print(b.String())
	for _, why := range tl.bads {
		t.Error(why)
	}
}

// damageTrials stages a plan of src in format once, then for every file
// the shards recorded flips a byte at sampled offsets and truncates it,
// and removes records and recorded subtasks, committing after each damage
// from a fresh copy of the staging area; last it commits the undamaged
// staging.
func damageTrials(t *testing.T, tl *tally, rng *rand.Rand, format, src string, offsets int) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "dst")
	sp, recs := planAndRun(t, Request{Source: src, Destination: dst, Format: format, Change: redistribute.Request{Parallelism: 3}}, 2)
	pristine := filepath.Join(t.TempDir(), "pristine")
	copyTree(t, sp.Staging, pristine)
	try := func(class string, damage func()) {
		for _, p := range []string{sp.Staging, dst} {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
		copyTree(t, pristine, sp.Staging)
		damage()
		_, err := CommitShards(ctx, testReg, sp, CommitOptions{})
		v, why := judge(sp, err)
		tl.add(format+" "+class, v, why)
	}
	for _, rec := range recs {
		for _, s := range rec.Subtasks {
			for _, f := range s.Files {
				p := filepath.Join(sp.Staging, f.Path)
				orig, err := os.ReadFile(filepath.Join(pristine, f.Path))
				if err != nil || len(orig) == 0 {
					continue
				}
				for range offsets {
					b := slices.Clone(orig)
					b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
					try("flip", func() { writeBack(t, p, b) })
				}
				try("truncate", func() { writeBack(t, p, orig[:len(orig)/2]) })
			}
		}
	}
	for i, rec := range recs {
		p := RecordPath(sp.Staging, i+1)
		try("record removed", func() {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		})
		cut := *rec
		cut.Subtasks = cut.Subtasks[1:]
		body, _ := json.Marshal(&cut)
		try("subtask removed from a record", func() { writeBack(t, p, body) })
	}
	try("undamaged", func() {})
}

func writeBack(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// judge gives a commit's verdict: an error is a refusal if nothing a
// reader accepts is at the destination (and BAD if internal); success is
// completed if the destination verifies equal to the source.
func judge(sp *ShardPlan, err error) (verdict, string) {
	ctx := context.Background()
	if err != nil {
		if strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "internal") {
			return bad, err.Error()
		}
		if _, _, _, derr := testReg.Detect(ctx, sp.Destination); derr == nil {
			return bad, fmt.Sprintf("refused (%v), yet %s reads as a snapshot", err, sp.Destination)
		}
		return refused, ""
	}
	if err := verifyDestination(sp); err != nil {
		return bad, fmt.Sprintf("committed, but: %v", err)
	}
	return completed, ""
}

// verifyDestination compares sp's destination with its source, entry by
// entry, as planned.
func verifyDestination(sp *ShardPlan) error {
	ctx := context.Background()
	r, plan, _, err := openPlanned(ctx, testReg, sp, "")
	if err != nil {
		return err
	}
	defer r.Close()
	return Verify(ctx, testReg, r, plan)
}

// buildStateutil builds the stateutil command for the kill trials.
func buildStateutil(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stateutil")
	out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// killTrial plans a rescale of src to a new destination under loc in 2
// shards, runs them, and SIGKILLs one shard run, or the commit, after a
// random delay; then it runs what is left again (the shards, then the
// commit, retrying while a killed run's claim holds the destination)
// and judges the result; last a forced convert must write the
// destination.
func killTrial(t *testing.T, tl *tally, rng *rand.Rand, bin, src, loc, where, victim string, i int) {
	ctx := context.Background()
	class := fmt.Sprintf("%s: SIGKILL of %s", where, victim)
	dst := fmt.Sprintf("%s/kill-%s-%d", loc, victim, i)
	plan := filepath.Join(t.TempDir(), "plan.json")
	if out, err := stateutil(bin, "rescale", src, "--parallelism", "3", "--output", dst, "--plan-only", plan, "--shards", "2"); err != nil {
		t.Fatalf("plan: %v: %s", err, out)
	}
	sp, err := ReadShardPlan(ctx, testReg, plan)
	if err != nil {
		t.Fatal(err)
	}
	// A random point of a run as long as the last one took, or, every
	// third trial, the command's own kill point (its first state
	// written; its metadata written).
	key := where + " " + victim
	delay := time.Duration(rng.Int64N(int64(tookLast[key])*6/5 + 1))
	var env []string
	if i%3 == 0 {
		delay = time.Hour
		env = map[string][]string{"shard": {"STATEUTIL_TEST_KILL_SHARD_ONCE=" + filepath.Join(t.TempDir(), "killed")},
			"commit": {"STATEUTIL_TEST_KILL_COMMIT=after-metadata"}}[victim]
	}
	shards := []string{"1/2", "2/2"}
	killed := false
	if victim == "shard" {
		killed = killAfter(t, delay, env, bin, "shard", plan, "--shard", shards[rng.IntN(2)], "-q")
	}
	for _, s := range shards {
		start := time.Now()
		if out, err := stateutil(bin, "shard", plan, "--shard", s, "-q"); err != nil {
			tl.add(class, bad, fmt.Sprintf("shard %s after the kill: %v: %s", s, err, out))
			return
		}
		tookLast[where+" shard"] = time.Since(start)
	}
	if victim == "commit" {
		killed = killAfter(t, delay, env, bin, "commit", plan)
	}
	if !killed {
		class += " (ran to its end first)"
	}
	var out []byte
	deadline := time.Now().Add(time.Minute)
	for {
		start := time.Now()
		out, err = stateutil(bin, "commit", plan)
		tookLast[where+" commit"] = time.Since(start)
		if err == nil || !strings.Contains(string(out), "in use") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 70 {
		tl.add(class, bad, fmt.Sprintf("commit exit 70: %s", out))
		return
	}
	v, why := judge(sp, errors.Join(err, errorIf(err != nil, string(out))))
	if v == refused {
		// A rerun after a kill must finish, not refuse.
		v, why = bad, fmt.Sprintf("commit after the kill refused: %s", out)
	}
	if killed && strings.Contains(string(out), "already committed") {
		class += ", rerun finished its move"
	}
	if v == completed {
		if out, err := stateutil(bin, "convert", src, "--to", "filesystem", "--output", dst, "--force", "-q"); err != nil {
			v, why = bad, fmt.Sprintf("convert --force to the destination after the commit: %v: %s", err, out)
		}
	}
	tl.add(class, v, why)
}

func errorIf(cond bool, msg string) error {
	if !cond {
		return nil
	}
	return errors.New(msg)
}

// tookLast is how long the last unkilled run of a command took, per
// location: the range of the next kill's delay.
var tookLast = map[string]time.Duration{}

// stateutil runs the command with a short S3 claim TTL, so that a killed
// run's claim lapses soon.
func stateutil(bin string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "STATEUTIL_S3_CLAIM_TTL=2s")
	return cmd.CombinedOutput()
}

// killAfter starts the command and SIGKILLs it after delay, unless it
// ended first (a run that finished is then what is rerun); it reports
// whether it killed it.
func killAfter(t *testing.T, delay time.Duration, env []string, bin string, args ...string) bool {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "STATEUTIL_S3_CLAIM_TTL=2s"), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		return errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()
	case <-time.After(delay):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true
	}
}
