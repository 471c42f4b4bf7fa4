package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/stateutil/stateutil/runtime/runtimetest"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/snaptest"
)

// The migration trials extend TestRunExactlyOnce: after an injected
// failure, the latest completed checkpoint goes through the real
// `stateutil convert` and/or `stateutil rescale` commands (cmd.Run, in
// process) before the job restores from the result. Final state and
// committed output must equal a failure-free run's, and every command must
// leave its SRC byte for byte as it was.

var trialLog = flag.Bool("trial-log", false, "log the scenario of every TestRunMigrateExactlyOnce trial")

// writableFormats are the formats the trials convert between.
var writableFormats = []string{"memory", "filesystem", "rocksdb"}

// migrateStats counts what the migration trials exercised.
type migrateStats struct {
	trials, failures, restores, noCheckpoint int
	// recoveries by what happened to the checkpoint first
	plain, converted, rescaled, both int
	maxPChanges                      int // rescales that also changed the max parallelism
	runtimeRescales                  int // restores at a parallelism other than the snapshot's
	verified                         int // conversions run with --verify
	capRefusals                      int // conversions to memory refused for the cap
	toFormat                         map[string]int
}

func (st *migrateStats) add(o *migrateStats) {
	st.trials += o.trials
	st.failures += o.failures
	st.restores += o.restores
	st.noCheckpoint += o.noCheckpoint
	st.plain += o.plain
	st.converted += o.converted
	st.rescaled += o.rescaled
	st.both += o.both
	st.maxPChanges += o.maxPChanges
	st.runtimeRescales += o.runtimeRescales
	st.verified += o.verified
	st.capRefusals += o.capRefusals
	for f, n := range o.toFormat {
		st.toFormat[f] += n
	}
}

func (st *migrateStats) String() string {
	var written []string
	for _, f := range writableFormats {
		written = append(written, fmt.Sprintf("%s %d", f, st.toFormat[f]))
	}
	return fmt.Sprintf("%d trials: %d injected failures, %d restores from a checkpoint (%d failures before any); recoveries: %d plain, %d after convert only, %d after rescale only, %d after both; %d rescales changed max parallelism; %d restores re-rescaled by the runtime; %d conversions verified, %d refused by the memory cap; written formats: %s",
		st.trials, st.failures, st.restores, st.noCheckpoint, st.plain, st.converted, st.rescaled, st.both, st.maxPChanges, st.runtimeRescales, st.verified, st.capRefusals, strings.Join(written, ", "))
}

// migrateTrialCounts is the number of trials per backend (full, -short):
// RocksDB checkpoints upload files, so it gets fewer.
func migrateTrialCounts(bc backendCase) int {
	n := 20
	if bc.format == "rocksdb" {
		n = 4
	}
	if testing.Short() {
		n = max(2, n/4)
	}
	return n
}

// TestRunMigrateExactlyOnce injects failures as TestRunExactlyOnce does
// and recovers from the latest completed checkpoint after `stateutil
// convert` to another format, `stateutil rescale` to a new parallelism
// (sometimes a new max parallelism), both in either order, or neither;
// the final state and committed output must equal a failure-free run's.
// Rerun one trial with -seed.
func TestRunMigrateExactlyOnce(t *testing.T) {
	total := &migrateStats{toFormat: map[string]int{}}
	defer func() { t.Logf("all backends: %s", total) }()
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) {
			base := uint64(time.Now().UnixNano())
			if *seedFlag != 0 {
				base = *seedFlag
			}
			st := &migrateStats{toFormat: map[string]int{}}
			start := time.Now()
			for i := range migrateTrialCounts(bc) {
				seed := base + uint64(i)
				st.trials++
				if err := migrateTrial(t, bc, seed, st); err != nil {
					t.Errorf("seed %d (rerun with -run 'TestRunMigrateExactlyOnce/%s' -seed %d): %v", seed, bc.name, seed, err)
				}
			}
			t.Logf("%s in %v", st, time.Since(start).Round(time.Millisecond))
			total.add(st)
		})
	}
}

// migrateTrial is one randomized failure, migration and recovery scenario.
func migrateTrial(t *testing.T, bc backendCase, seed uint64, st *migrateStats) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x316a7e))
	names := jobs.Names()
	name := names[rng.IntN(len(names))]
	cfg := jobs.Config{Records: int64(300 + bc.minEvery*2 + rng.IntN(600)), Partitions: 1 + rng.IntN(6), Seed: seed, Union: rng.IntN(4) == 0}
	p := 1 + rng.IntN(3)
	ref, refLines := reference(t, name, cfg, p)

	b, _ := jobs.Lookup(name)
	firstRestore := st.restores + 1
	dir, work, jobID := t.TempDir(), t.TempDir(), fmt.Sprintf("%032x", seed)
	out := runtimetest.NewMemoryCommitter()
	restore, failures, wantMaxP := "", 1+rng.IntN(2), 0
	later := int64(100) // percent of the failures' first AtRecord
	desc := fmt.Sprintf("job %s records %d partitions %d union %v p %d", name, cfg.Records, cfg.Partitions, cfg.Union, p)
	for attempt := 0; ; attempt++ {
		job, err := b.Build(cfg)
		if err != nil {
			return err
		}
		opts := attemptOptions(t, bc, p, dir, jobID, restore, out, int64(10+bc.minEvery+rng.IntN(80)), rng)
		if attempt < failures {
			// Late enough that a checkpoint has mostly completed, early
			// enough that the subtask mostly gets there: half of the
			// time source subtask 0, which reads partition 0 from its
			// start, else anywhere (keyed stages and sinks may see fewer
			// records than the sources).
			ops, per := uids(job), cfg.Records/int64(p)+1
			op, sub := ops[rng.IntN(len(ops))], rng.IntN(p)
			if rng.IntN(2) == 0 {
				op, sub, per = ops[0], 0, cfg.Records/int64(cfg.Partitions)+1
			}
			opts.Failure = &runtime.Failure{Operator: op, Subtask: sub, AtRecord: (per/4 + 1 + rng.Int64N(per/2)) * later / 100}
			desc += fmt.Sprintf("; fail %s/%d at %d", opts.Failure.Operator, opts.Failure.Subtask, opts.Failure.AtRecord)
		}
		res, err := runtime.Run(ctx, job, opts)
		if err == nil {
			if res.StateDigest != ref.StateDigest || res.StateEntries != ref.StateEntries {
				return fmt.Errorf("%s: final state %d entries %s, want %d entries %s", desc, res.StateEntries, res.StateDigest, ref.StateEntries, ref.StateDigest)
			}
			if got := out.Lines(); !slices.Equal(got, refLines) {
				return fmt.Errorf("%s: committed output differs: %d lines, want %d; %s", desc, len(got), len(refLines), firstDiff(got, refLines))
			}
			if wantMaxP != 0 && res.MaxParallelism != wantMaxP {
				return fmt.Errorf("%s: ran at max parallelism %d, want the restored snapshot's %d", desc, res.MaxParallelism, wantMaxP)
			}
			if *trialLog {
				t.Logf("seed %d: %s: equal", seed, desc)
			}
			return nil
		}
		if !errors.Is(err, runtime.ErrInjectedFailure) {
			return fmt.Errorf("%s: %v", desc, err)
		}
		st.failures++
		restore, err = runtime.LatestCheckpoint(ctx, testReg.Storage, runtime.JobDir(dir, jobID))
		switch {
		case errors.Is(err, snapshot.ErrNotFound):
			st.noCheckpoint++
			if n := out.Count(); n != 0 {
				return fmt.Errorf("%s: %d lines committed without a completed checkpoint", desc, n)
			}
			restore, wantMaxP = "", 0
			desc += "; restart from scratch"
			if attempt+1 == failures && failures < 4 {
				// Another failure, later: after a checkpoint this time.
				failures++
				later = later * 3 / 2
			}
			continue
		case err != nil:
			return fmt.Errorf("%s: %v", desc, err)
		}
		st.restores++
		m := &migration{t: t, rng: rng, st: st, dir: filepath.Join(work, strconv.Itoa(attempt))}
		if st.restores == firstRestore {
			m.steps = migrationSteps[seed%forcedKinds]
		}
		restore, err = m.run(ctx, restore)
		desc += m.desc
		if err != nil {
			return fmt.Errorf("%s: %v", desc, err)
		}
		if m.p != 0 {
			p = m.p
		}
		// The job runs at the max parallelism of what it restores: a
		// rescaled snapshot's, or an older checkpoint's when the run
		// restored from the rescaled one failed before its first.
		if _, _, wantMaxP, err = info(ctx, restore); err != nil {
			return fmt.Errorf("%s: %v", desc, err)
		}
		if rng.IntN(4) == 0 {
			// The runtime redistributes once more on restore.
			if np := 1 + rng.IntN(4); np != p {
				p = np
				st.runtimeRescales++
			}
		}
		desc += fmt.Sprintf("; restore at p %d", p)
	}
}

// migration takes one checkpoint through zero, one or two commands.
type migration struct {
	t   *testing.T
	rng *rand.Rand
	st  *migrateStats
	// steps, when set, are the commands to run; else a random entry of
	// migrationSteps.
	steps []string
	dir   string // this recovery's outputs go under it
	step  int
	desc  string
	// p is the parallelism the last rescale wrote (0: no rescale).
	p int
}

// migrationSteps are the commands a recovery runs on the checkpoint: the
// first recovery of a trial takes one of the first four by its seed (so
// that any four consecutive seeds cover convert, rescale with a new max
// parallelism, and both), later ones a random one or none. "rescale!"
// changes the max parallelism too; "rescale+format" is a rescale with
// --format, which converts as well.
var migrationSteps = [][]string{
	{"convert"},
	{"rescale!"},
	{"convert", "rescale"},
	{"rescale+format"},
	{"rescale", "convert"},
	{"rescale"},
	{}, // plain restore: what TestRunExactlyOnce does
}

// forcedKinds is how many of migrationSteps first recoveries cycle through.
const forcedKinds = 4

func (m *migration) run(ctx context.Context, chk string) (string, error) {
	steps := m.steps
	if steps == nil {
		steps = migrationSteps[m.rng.IntN(len(migrationSteps))]
	}
	var conv, resc bool
	cur := chk
	for _, s := range steps {
		var err error
		switch s {
		case "convert":
			cur, err = m.convert(ctx, cur)
			conv = true
		case "rescale", "rescale!":
			cur, err = m.rescale(ctx, cur, false, s == "rescale!")
			resc = true
		case "rescale+format":
			cur, err = m.rescale(ctx, cur, true, false)
			conv, resc = true, true
		}
		if err != nil {
			return "", err
		}
	}
	switch {
	case conv && resc:
		m.st.both++
	case conv:
		m.st.converted++
	case resc:
		m.st.rescaled++
	default:
		m.st.plain++
	}
	return cur, nil
}

// info opens a snapshot for its format, parallelism and max parallelism
// (those of the operators, which agree in the runtime's snapshots).
func info(ctx context.Context, loc string) (format string, p, maxP int, err error) {
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{})
	if err != nil {
		return "", 0, 0, err
	}
	defer r.Close()
	s := r.Snapshot()
	for _, op := range s.Operators {
		if p != 0 && (op.Parallelism != p || op.MaxParallelism != maxP) {
			return "", 0, 0, fmt.Errorf("%s: operator %q at parallelism %d/%d, others at %d/%d", loc, op.Label(), op.Parallelism, op.MaxParallelism, p, maxP)
		}
		p, maxP = op.Parallelism, op.MaxParallelism
	}
	return s.Format, p, maxP, nil
}

// otherFormat picks a writable format other than from.
func (m *migration) otherFormat(from string) string {
	var others []string
	for _, f := range writableFormats {
		if f != from {
			others = append(others, f)
		}
	}
	return others[m.rng.IntN(len(others))]
}

// output is a fresh destination for the next step, in a directory of its
// own so that hashing a step's SRC directory covers nothing else.
func (m *migration) output() (string, error) {
	m.step++
	d := filepath.Join(m.dir, fmt.Sprintf("step-%d", m.step))
	return filepath.Join(d, "snapshot"), os.MkdirAll(d, 0o755)
}

func (m *migration) convert(ctx context.Context, src string) (string, error) {
	from, _, _, err := info(ctx, src)
	if err != nil {
		return "", err
	}
	to := m.otherFormat(from)
	args := []string{"convert", src, "--to", to, "-q"}
	if m.rng.IntN(2) == 0 {
		args = append(args, "--verify")
		m.st.verified++
	}
	dst, err := m.command(ctx, src, args)
	if errors.Is(err, errTooLarge) && to == "memory" {
		// The memory format's per-subtask cap refused it, before writing.
		m.st.capRefusals++
		to = "filesystem"
		args[3] = to
		dst, err = m.command(ctx, src, args)
	}
	if err != nil {
		return "", err
	}
	m.st.toFormat[to]++
	m.desc += fmt.Sprintf("; convert %s -> %s", from, to)
	if got, _, _, err := info(ctx, dst); err != nil || got != to {
		return "", fmt.Errorf("converted snapshot %s: format %q, %v; want %q", dst, got, err, to)
	}
	return dst, nil
}

func (m *migration) rescale(ctx context.Context, src string, withFormat, changeMaxP bool) (string, error) {
	from, oldP, oldMaxP, err := info(ctx, src)
	if err != nil {
		return "", err
	}
	newP, newMaxP := 1+m.rng.IntN(4), oldMaxP
	args := []string{"rescale", src, "--parallelism", strconv.Itoa(newP), "-q"}
	if changeMaxP || m.rng.IntN(3) == 0 {
		// Re-hash every key into another number of key groups.
		for newMaxP == oldMaxP {
			newMaxP = []int{32, 64, 256, 1024}[m.rng.IntN(4)]
		}
		args = append(args, "--max-parallelism", strconv.Itoa(newMaxP), "--temp-dir", m.t.TempDir())
		m.st.maxPChanges++
	}
	to := from
	if withFormat {
		to = m.otherFormat(from)
		args = append(args, "--format", to)
	}
	dst, err := m.command(ctx, src, args)
	if errors.Is(err, errTooLarge) && to == "memory" {
		// A new subtask would exceed the memory format's cap: write
		// another format instead.
		m.st.capRefusals++
		if withFormat {
			args = args[:len(args)-2]
		}
		to, withFormat = "filesystem", true
		args = append(args, "--format", to)
		dst, err = m.command(ctx, src, args)
	}
	if err != nil {
		return "", err
	}
	if withFormat {
		m.st.toFormat[to]++
	}
	m.desc += fmt.Sprintf("; rescale %s p %d maxP %d -> %s p %d maxP %d", from, oldP, oldMaxP, to, newP, newMaxP)
	gotF, gotP, gotMaxP, err := info(ctx, dst)
	if err != nil || gotF != to || gotP != newP || gotMaxP != newMaxP {
		return "", fmt.Errorf("rescaled snapshot %s: format %q p %d maxP %d, %v; want %q p %d maxP %d", dst, gotF, gotP, gotMaxP, err, to, newP, newMaxP)
	}
	m.p = newP
	return dst, nil
}

// errTooLarge is a command's exit code 5.
var errTooLarge = errors.New("state too large for the target format")

// command runs `stateutil ARGS --output DST` in process and checks that
// the directory holding src is byte-identical afterwards, and that a
// refused command wrote nothing.
func (m *migration) command(ctx context.Context, src string, args []string) (string, error) {
	dst, err := m.output()
	if err != nil {
		return "", err
	}
	args = append(slices.Clone(args), "--output", dst)
	srcDir := filepath.Dir(src)
	before, err := snaptest.HashTree(srcDir)
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	code := cmd.Run(ctx, args, &stdout, &stderr)
	after, err := snaptest.HashTree(srcDir)
	if err != nil {
		return "", err
	}
	if d := snaptest.TreeDiff(before, after); d != "" {
		return "", fmt.Errorf("stateutil %s changed its source directory %s: %s", strings.Join(args, " "), srcDir, d)
	}
	if code != cmd.ExitOK {
		if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("stateutil %s: exit %d left %s behind (%v): %s", strings.Join(args, " "), code, dst, err, stderr.String())
		}
		if code == cmd.ExitTooLarge {
			return "", fmt.Errorf("stateutil %s: %w: %s", strings.Join(args, " "), errTooLarge, stderr.String())
		}
		return "", fmt.Errorf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(stderr.String()))
	}
	return dst, nil
}
