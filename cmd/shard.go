package cmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/internal/kerberos"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/yarn"
)

type shardOptions struct {
	shard   string
	tempDir string
	quiet   bool
}

func newShardCommand(e *env) *cobra.Command {
	o := &shardOptions{}
	c := &cobra.Command{
		Use:   "shard PLAN --shard I/N",
		Short: "Write one shard's part of a planned rescale or convert",
		Long: `Write the new subtasks that PLAN (from rescale or convert --plan-only PLAN --shards N)
assigns to shard I of N, into the plan's staging area beside the destination (a
.stateutil-shards-<plan>-<name> directory on the destination's storage, opened by
--plan-only), and record their files, sizes and checksums there. Shards run anywhere
that reaches the source and the destination, in any order, at the same time or not;
stateutil commit PLAN finishes once all have recorded their part, stateutil abort PLAN
gives the plan up.

A shard refuses (exit 2) a plan edited since it was planned (its digest), a source whose
metadata changed since then, a plan that does not hold exactly what planning its request
on the source gives (every new subtask dealt to one shard, key groups, sources, where
operator-state elements go; the field that differs is named), and a plan that is closed:
committed or aborted, its staging area without the plan. Running a shard again, or twice
at once, is safe: each run writes files of its own and the last run to finish is the
shard's record; what a killed or superseded run wrote is removed by the commit. A log of
each run goes to the staging area's logs/.

` + exitCodeHelp,
		Example: `  stateutil rescale hdfs://nn:8020/sp/job-7 --parallelism 64 --output hdfs://nn:8020/sp/job-7-p64 --plan-only plan.json --shards 8
  stateutil shard plan.json --shard 3/8
  stateutil commit plan.json
  stateutil abort plan.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			i, n, err := parseShard(o.shard)
			if err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0], i, n)
		},
		ValidArgsFunction: completeFiles,
	}
	f := c.Flags()
	f.StringVar(&o.shard, "shard", "", "which shard to write, as I/N (1 <= I <= N; N as planned)")
	f.StringVar(&o.tempDir, "temp-dir", "", "where a max-parallelism change spills sorted runs (default: the system's)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	return c
}

// parseShard reads I/N.
func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 0, usageErrorf("which shard? --shard I/N (1 <= I <= N, N the plan's number of shards)")
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, usageErrorf("--shard wants I/N with 1 <= I <= N, not %q", s)
	}
	return i, n, nil
}

func (o *shardOptions) run(c *cobra.Command, e *env, planFile string, i, n int) (err error) {
	ctx := c.Context()
	sp, err := migrate.ReadShardPlan(ctx, e.reg, planFile)
	if err != nil {
		return err
	}
	if n != len(sp.Shards) {
		return usageErrorf("--shard %d/%d, but plan %s has %d shards", i, n, sp.ID, len(sp.Shards))
	}
	// A closed plan's shard writes nothing, not even its log.
	if err := migrate.CheckPlanOpen(ctx, e.reg, sp); err != nil {
		return err
	}
	// The run's log goes to stderr and, at the end, to the staging area,
	// where it stays reachable after the container or machine is gone.
	var log bytes.Buffer
	errOut := io.MultiWriter(c.ErrOrStderr(), &log)
	started := time.Now()
	a := sp.Shards[i-1]
	host, _ := os.Hostname()
	fmt.Fprintf(errOut, "stateutil: shard %d/%d of plan %s on %s (pid %d%s): %d subtasks, %s, from %s to %s\n",
		i, n, sp.ID, host, os.Getpid(), containerNote(), len(a.Subtasks), render.Bytes(a.Bytes), sp.Source, sp.Destination)
	defer func() {
		if err != nil {
			fmt.Fprintf(&log, "stateutil: shard %d/%d failed after %s: %v\n", i, n, time.Since(started).Round(time.Millisecond), err)
		}
		if werr := writeShardLog(c, e, sp, i, log.Bytes()); werr != nil {
			fmt.Fprintf(c.ErrOrStderr(), "stateutil: warning: shard log not kept: %v\n", werr)
		}
	}()
	bar := e.newProgress(c.ErrOrStderr(), o.quiet, fmt.Sprintf("shard %d/%d", i, n))
	bar.start(a.Bytes)
	progress := killOnceHook(bar.add)
	rec, err := migrate.RunShard(ctx, e.reg, sp, i, migrate.ShardOptions{TempDir: o.tempDir, Progress: progress})
	bar.finish()
	if err != nil {
		return err
	}
	var files int
	var bytes int64
	for _, s := range rec.Subtasks {
		for _, f := range s.Files {
			files++
			bytes += f.Size
		}
	}
	fmt.Fprintf(errOut, "stateutil: shard %d/%d wrote %d subtasks, %d files, %s in %s\n", i, n, len(rec.Subtasks), files, render.Bytes(bytes), time.Since(started).Round(time.Millisecond))
	fmt.Fprintf(c.OutOrStdout(), "shard %d/%d of plan %s: %d subtasks, %d files, %s staged in %s\n", i, n, sp.ID, len(rec.Subtasks), files, render.Bytes(bytes), sp.Staging)
	return nil
}

func containerNote() string {
	if id := os.Getenv("CONTAINER_ID"); id != "" {
		return ", container " + id
	}
	return ""
}

// writeShardLog keeps a shard run's log in the staging area.
func writeShardLog(c *cobra.Command, e *env, sp *migrate.ShardPlan, shard int, log []byte) error {
	st, staging, err := e.reg.Storage.Resolve(c.Context(), sp.Staging)
	if err != nil {
		return err
	}
	attempt := os.Getenv("CONTAINER_ID")
	var b [3]byte
	_, _ = rand.Read(b[:])
	attempt = strings.TrimPrefix(attempt+"-", "-") + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	p := migrate.LogPath(staging, shard, attempt)
	// A canceled shard's log is the one most worth keeping.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 30*time.Second)
	defer cancel()
	if err := st.MkdirAll(ctx, path.Dir(p)); err != nil {
		return err
	}
	return storage.WriteFile(ctx, st, p, log)
}

// killOnceHook is for tests of shards killed half way: with
// STATEUTIL_TEST_KILL_SHARD_ONCE=FILE set and FILE absent, the shard
// creates FILE and kills itself (SIGKILL) once it has written its first
// state, so that a retry finds FILE and runs through.
func killOnceHook(progress func(int64)) func(int64) {
	marker := os.Getenv("STATEUTIL_TEST_KILL_SHARD_ONCE")
	if marker == "" {
		return progress
	}
	return func(n int64) {
		if progress != nil {
			progress(n)
		}
		if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}

// shardHelp is what rescale's and convert's help say of running in shards.
const shardHelp = `For state too large for one machine, the copy runs in shards: --plan-only PLAN
--shards N writes the plan (source, target, new subtasks, who reads what) for
stateutil shard PLAN --shard I/N, run anywhere, and stateutil commit PLAN. The plan
file is written as a new file (never over the source, the destination or a file
that is not an earlier plan; --force replaces an earlier plan), sealed with a digest,
and checked against the source by every shard and by the commit; stateutil abort
PLAN gives it up and removes its staging area. --yarn http://RM:8088 --shards N
runs the N shards as one YARN application (Hadoop's DistributedShell; the
destination on HDFS), waits for it and commits. A failed shard's error names it and
shows the end of its log. The plan records --key-serializers-from: every shard and the
commit read SRC's keys by that snapshot, which they must reach as they reach SRC.
--kryo-classes and --proto-descriptors go with no --plan-only or --yarn: the shards
would run without their files.`

// shardFlags are the flags of rescale and convert that plan a copy for
// shards (--plan-only) or run it as shards on YARN (--yarn).
type shardFlags struct {
	planOnly    string
	shards      int
	yarn        string
	queue       string
	retries     int
	memory      int
	binary      string
	amJar       string
	amClasspath string
	shardEnv    []string
	// given tells a flag given on the command line from its default.
	given func(name string) bool
}

func (s *shardFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&s.planOnly, "plan-only", "", "write the plan for --shards shards to this new file (path or URI; --force replaces an earlier plan) instead of copying; then run stateutil shard and stateutil commit")
	f.IntVar(&s.shards, "shards", 0, "number of shards to plan or run, at most the new subtasks written (with --plan-only: default 1)")
	f.StringVar(&s.yarn, "yarn", "", "run the shards as one YARN application through this ResourceManager (http://host:8088), then commit")
	f.StringVar(&s.queue, "queue", "default", "YARN queue (with --yarn)")
	f.IntVar(&s.retries, "yarn-retries", 2, "times a failed shard is started again in its container before the application fails")
	f.IntVar(&s.memory, "yarn-memory", 512, "memory of each shard's container, in MiB")
	f.StringVar(&s.binary, "yarn-binary", "", "stateutil executable the containers run (default: this one)")
	f.StringVar(&s.amJar, "yarn-am-jar", "", "a DistributedShell jar to ship, for a cluster whose classpath lacks it")
	f.StringVar(&s.amClasspath, "yarn-am-classpath", os.Getenv("STATEUTIL_YARN_AM_CLASSPATH"), "more classpath for the ApplicationMaster ($STATEUTIL_YARN_AM_CLASSPATH)")
	f.StringArrayVar(&s.shardEnv, "yarn-shard-env", nil, "K=V: more environment for the shards (repeatable)")
	for _, name := range []string{"yarn-am-classpath", "yarn-shard-env"} {
		_ = f.MarkHidden(name)
	}
	s.given = func(name string) bool { return f.Changed(name) }
}

func (s *shardFlags) active() bool { return s.planOnly != "" || s.yarn != "" }

func (s *shardFlags) validate(dryRun bool) error {
	switch {
	case !s.active() && s.given("shards"):
		return usageErrorf("--shards needs --plan-only or --yarn")
	case s.planOnly != "" && s.yarn != "":
		return usageErrorf("--plan-only and --yarn exclude each other")
	case s.active() && dryRun:
		return usageErrorf("--dry-run and --%s exclude each other", map[bool]string{true: "plan-only", false: "yarn"}[s.planOnly != ""])
	case s.yarn != "" && s.shards < 1:
		return usageErrorf("--yarn needs --shards N (at least 1)")
	case s.given("shards") && s.shards < 1:
		return usageErrorf("--shards must be at least 1, not %d", s.shards)
	}
	for _, kv := range s.shardEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageErrorf("--yarn-shard-env wants K=V, not %q", kv)
		}
	}
	return nil
}

// run plans req for shards, opens the plan's staging area, and either
// writes the plan (--plan-only) or runs the shards on YARN and commits;
// done prints a committed copy.
func (s *shardFlags) run(c *cobra.Command, e *env, req migrate.Request, report outputFlag, done func(*migrate.Result) error) error {
	ctx := c.Context()
	sp, err := migrate.PlanShards(ctx, e.reg, migrate.ShardRequest{Request: req, Shards: max(s.shards, 1), PlanFile: s.planOnly})
	if errors.Is(err, migrate.ErrShardCount) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	if s.planOnly != "" {
		if err := migrate.OpenStaging(ctx, e.reg, sp); err != nil {
			return err
		}
		if err := migrate.WriteShardPlan(ctx, e.reg, s.planOnly, sp, req.Force); err != nil {
			_, aerr := migrate.AbortShards(context.WithoutCancel(ctx), e.reg, sp)
			return errors.Join(err, aerr)
		}
		if report.json() {
			return render.JSON(c.OutOrStdout(), sp)
		}
		return render.ShardPlan(c.OutOrStdout(), sp, s.planOnly)
	}
	st, staging, err := e.reg.Storage.Resolve(ctx, sp.Staging)
	if err != nil {
		return err
	}
	planFile := st.URI(path.Join(staging, migrate.StagingPlan))
	if !strings.HasPrefix(planFile, "hdfs://") {
		return usageErrorf("--yarn needs the destination on HDFS, where YARN localizes the binary for the containers and they write their part; %s is not (plan with --plan-only and run stateutil shard by other means)", sp.Destination)
	}
	if err := migrate.OpenStaging(ctx, e.reg, sp); err != nil {
		return err
	}
	var login kerberos.Login
	if e.hdfs != nil {
		login = e.hdfs.Kerberos
	}
	client, err := yarn.NewClient(s.yarn, login)
	if err != nil {
		return err
	}
	bin := s.binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return err
		}
	}
	tokens, err := shardTokens(c, e, sp, planFile)
	if err != nil {
		return err
	}
	env := map[string]string{}
	for _, kv := range s.shardEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	_, err = yarn.Run(ctx, yarn.Job{Client: client, Storage: e.reg.Storage, Plan: sp, PlanFile: planFile, Binary: bin,
		Queue: s.queue, ContainerMemoryMB: s.memory, Retries: s.retries, AMJar: s.amJar, AMClasspath: s.amClasspath,
		ShardEnv: env, Tokens: tokens, Poll: time.Second, Log: c.ErrOrStderr()})
	if err != nil {
		return fmt.Errorf("%w (the shards' staging area %s stays for a look or a commit; stateutil commit %s finishes once all shards have recorded, stateutil abort %s removes it)", err, sp.Staging, planFile, planFile)
	}
	res, err := migrate.CommitShards(ctx, e.reg, sp, migrate.CommitOptions{Verify: req.Verify, TempDir: req.TempDir, BeforePlace: killCommitHook()})
	if err != nil {
		return err
	}
	return done(res.Result)
}

// shardTokens are the delegation tokens the shards' containers reach a
// kerberized HDFS with, having no Kerberos identity there: one for each
// namenode of the source, destination and plan (and of the snapshot of
// --key-serializers-from), which the ResourceManager
// (yarn.resourcemanager.principal) may renew while the application runs.
// An HDFS without Kerberos needs none.
func shardTokens(c *cobra.Command, e *env, sp *migrate.ShardPlan, planFile string) ([]hdfs.Token, error) {
	kerberized, err := storage.HDFSKerberized(e.hdfs)
	if err != nil || !kerberized {
		return nil, err
	}
	renewer, err := defaultRenewer()
	if err != nil {
		return nil, fmt.Errorf("a delegation token for the shards on kerberized HDFS: %w", err)
	}
	var tokens []hdfs.Token
	var asked []string
	for _, uri := range []string{sp.Source, sp.Destination, planFile, sp.KeySerializersFrom} {
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "hdfs" || slices.Contains(asked, u.Host) {
			continue
		}
		asked = append(asked, u.Host)
		t, err := storage.HDFSDelegationToken(c.Context(), u, e.hdfs, renewer)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(tokens, func(h hdfs.Token) bool { return h.Service == t.Service }) {
			fmt.Fprintf(c.ErrOrStderr(), "stateutil: the shards get a %s for %s, renewer %s\n", t.Kind, t.Service, renewer)
			tokens = append(tokens, *t)
		}
	}
	return tokens, nil
}
