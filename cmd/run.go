package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/runtime/jobs"
)

type runOptions struct {
	output             outputFlag
	config             jobs.Config
	parallelism        int
	maxParallelism     int
	backend            string
	localDir           string
	checkpointDir      string
	checkpointEvery    int64
	checkpointInterval time.Duration
	retain             int
	savepoint          string
	restore            string
	allowNonRestored   bool
	jobID              string
	quiet              bool
}

func newRunCommand(e *env) *cobra.Command {
	o := &runOptions{config: jobs.Config{Records: 100_000, Seed: 1}}
	c := &cobra.Command{
		Use:   "run JOB",
		Short: "Run a built-in streaming job with checkpoints, savepoints and restore",
		Long: `Run one of the built-in jobs on stateutil's stream runtime, in Apache Flink's model:
a partitioned, replayable source keeping (partition, offset) pairs in operator state, keyBy
routing by key group, keyed operators with value, list, map, reducing and aggregating state,
and a sink that commits its output only when a checkpoint completes (exactly-once).

Jobs:
` + jobList() + `

Checkpoints are taken with aligned barriers every --checkpoint-every source records (and/or
every --checkpoint-interval) and written in the --backend's format under
<checkpoint-dir>/<job-id>/: chk-N.dump files for memory, chk-N directories with a _metadata
for filesystem and rocksdb (rocksdb checkpoints are incremental: they share SST files under
shared/). The newest --retain are kept. A job that ends takes a final checkpoint, or with
--savepoint writes its final state there as a savepoint.

--restore starts from any snapshot stateutil reads (a memory dump, a filesystem or rocksdb
chk-N or savepoint, a job directory meaning its latest checkpoint) at any --parallelism up
to its max parallelism; sources resume at their stored offsets.

The summary goes to stdout; a progress line goes to stderr when it is a terminal.

` + exitCodeHelp,
		Example: `  stateutil run wordcount --records 1000000 --parallelism 2 --checkpoint-dir ./chk
  stateutil run wordcount --parallelism 2 --checkpoint-dir ./chk --savepoint ./sp.dump
  stateutil run wordcount --parallelism 3 --restore ./sp.dump
  stateutil run sessions --backend rocksdb --checkpoint-dir ./chk --retain 3 --checkpoint-every 20000
  stateutil run sensors --backend filesystem --checkpoint-dir hdfs://namenode:9000/chk -o json
  stateutil run wordcount --input part-0.txt,part-1.txt --checkpoint-dir ./chk --union`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			job, run, err := o.validate(e, args[0])
			if err != nil {
				return err
			}
			return o.run(c, e, job, run)
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return jobs.Names(), cobra.ShellCompDirectiveNoFileComp
		},
	}
	o.output.add(c)
	f := c.Flags()
	f.IntVarP(&o.parallelism, "parallelism", "p", 1, "parallelism of every operator")
	f.IntVar(&o.maxParallelism, "max-parallelism", 0, "number of key groups (default: the restored snapshot's, else Flink's default)")
	f.StringVar(&o.backend, "backend", "memory", "state backend and checkpoint format: memory, filesystem or rocksdb (Flink names work: jobmanager, hashmap)")
	f.StringVar(&o.localDir, "local-dir", "", "rocksdb working directory (default: a temporary directory)")
	f.StringVar(&o.checkpointDir, "checkpoint-dir", "", "where checkpoints go (path, file://, hdfs://, s3://, gs://, abfss:// or wasbs:// URI); none if empty")
	f.Int64Var(&o.checkpointEvery, "checkpoint-every", 10_000, "checkpoint every N source records (0: off)")
	f.DurationVar(&o.checkpointInterval, "checkpoint-interval", 0, "checkpoint every interval, e.g. 500ms (0: off)")
	f.IntVar(&o.retain, "retain", 1, "completed checkpoints to keep")
	f.StringVar(&o.savepoint, "savepoint", "", "write the final state to this savepoint")
	f.StringVar(&o.restore, "restore", "", "start from this checkpoint or savepoint")
	f.BoolVar(&o.allowNonRestored, "allow-non-restored-state", false, "skip state of operators the job does not have")
	f.StringVar(&o.jobID, "job-id", "", "job id, the name of the checkpoint subdirectory (default: random)")
	f.Int64Var(&o.config.Records, "records", o.config.Records, "source records to generate")
	f.IntVar(&o.config.Partitions, "partitions", 0, "source partitions (default 4, or one per --input file)")
	f.Uint64Var(&o.config.Seed, "seed", o.config.Seed, "seed of the generated input")
	f.StringSliceVar(&o.config.Input, "input", nil, "wordcount: read these files, one partition each, instead of generating")
	f.BoolVar(&o.config.Union, "union", false, "keep source offsets in union instead of split list state")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	_ = c.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions([]string{"memory", "filesystem", "rocksdb"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func jobList() string {
	var b strings.Builder
	for _, n := range jobs.Names() {
		j, _ := jobs.Lookup(n)
		fmt.Fprintf(&b, "  %-10s %s\n", n, j.Summary)
	}
	return strings.TrimRight(b.String(), "\n")
}

// validate turns flags into a job and run options.
func (o *runOptions) validate(e *env, name string) (*runtime.Job, runtime.Options, error) {
	var opts runtime.Options
	if err := o.output.validate(); err != nil {
		return nil, opts, err
	}
	b, err := jobs.Lookup(name)
	if err != nil {
		return nil, opts, runError(err)
	}
	if o.parallelism < 1 || o.maxParallelism < 0 || o.retain < 1 || o.checkpointEvery < 0 || o.checkpointInterval < 0 || o.config.Records < 0 || o.config.Partitions < 0 {
		return nil, opts, usageErrorf("--parallelism and --retain must be at least 1; --max-parallelism, --records, --partitions and checkpoint frequencies cannot be negative")
	}
	f, err := e.reg.Writable(o.backend)
	var backend runtime.StateBackend = runtime.HeapStateBackend{}
	switch {
	case err != nil || f.Name == "flink": // Flink's savepoints are written from Flink's state only
		return nil, opts, usageErrorf("--backend must be memory, filesystem or rocksdb (or Flink's jobmanager, hashmap), not %q", o.backend)
	case f.Name == "rocksdb":
		backend = runtime.RocksDBStateBackend{LocalDir: o.localDir}
	}
	o.config.Storage = e.reg.Storage
	job, err := b.Build(o.config)
	if err != nil {
		return nil, opts, runError(err)
	}
	opts = runtime.Options{
		Registry: e.reg, Parallelism: o.parallelism, MaxParallelism: o.maxParallelism, Backend: backend, Format: f.Name,
		CheckpointDir: o.checkpointDir, CheckpointEvery: o.checkpointEvery, CheckpointInterval: o.checkpointInterval,
		Retain: o.retain, Savepoint: o.savepoint, Restore: o.restore, AllowNonRestoredState: o.allowNonRestored, JobID: o.jobID,
	}
	return job, opts, nil
}

// runError makes errors in what the user asked for usage errors (exit 1).
func runError(err error) error {
	if errors.Is(err, runtime.ErrJob) || errors.Is(err, runtime.ErrIncompatibleSnapshot) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

func (o *runOptions) run(c *cobra.Command, e *env, job *runtime.Job, opts runtime.Options) error {
	errOut := c.ErrOrStderr()
	if !o.quiet && e.terminal(errOut) {
		bar := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(errOut), progressbar.OptionSetDescription(job.Name),
			progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
		opts.Progress = func(p runtime.Progress) {
			bar.Describe(fmt.Sprintf("%s: %d records, %d checkpoints", job.Name, p.Records, p.Checkpoints))
			_ = bar.Set64(p.Records)
		}
		defer bar.Finish()
	}
	if progressHook != nil {
		shown := opts.Progress
		opts.Progress = func(p runtime.Progress) {
			progressHook()
			if shown != nil {
				shown(p)
			}
		}
	}
	opts.Log = errOut
	res, err := runtime.Run(c.Context(), job, opts)
	if err != nil {
		return runError(err)
	}
	if o.output.json() {
		return writeJSON(c.OutOrStdout(), res)
	}
	printRunSummary(c.OutOrStdout(), res)
	return nil
}

func printRunSummary(w io.Writer, r *runtime.Result) {
	fmt.Fprintf(w, "Job:          %s (job id %s)\n", r.Job, r.JobID)
	fmt.Fprintf(w, "Parallelism:  %d (max parallelism %d)\n", r.Parallelism, r.MaxParallelism)
	fmt.Fprintf(w, "Backend:      %s state, %s format\n", r.Backend, r.Format)
	if r.RestoredFrom != "" {
		fmt.Fprintf(w, "Restored:     %s\n", r.RestoredFrom)
	}
	rate := ""
	if s := r.Elapsed.Seconds(); s > 0 {
		rate = fmt.Sprintf(" (%.0f records/s)", float64(r.Records)/s)
	}
	fmt.Fprintf(w, "Records:      %d in %s%s\n", r.Records, r.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "Checkpoints:  %d written, %d failed", r.Checkpoints, r.FailedCheckpoints)
	if r.LastCheckpoint != "" && r.Savepoint == "" {
		fmt.Fprintf(w, "; latest %s", r.LastCheckpoint)
	}
	fmt.Fprintln(w)
	printIncremental(w, r.Incremental)
	if r.Savepoint != "" {
		fmt.Fprintf(w, "Savepoint:    %s\n", r.Savepoint)
	}
	fmt.Fprintf(w, "State:        %d entries, digest %s\n", r.StateEntries, r.StateDigest)
	fmt.Fprintf(w, "Output:       %d lines committed, digest %s\n", r.OutputLines, r.OutputDigest)
}

// maxIncrementalLines bounds the per-checkpoint lines of the summary; the
// JSON output lists every checkpoint.
const maxIncrementalLines = 10

// printIncremental tells what the incremental checkpoints uploaded and
// what they reused from the checkpoints before them: the last one and the
// total, then one line per checkpoint (the newest maxIncrementalLines).
func printIncremental(w io.Writer, cs []runtime.IncrementalCheckpoint) {
	if len(cs) == 0 {
		return
	}
	last := cs[len(cs)-1]
	var total int64
	for _, c := range cs {
		total += c.UploadedBytes
	}
	fmt.Fprintf(w, "Incremental:  last checkpoint uploaded %s of %s (%s reused); %s uploaded by %s\n",
		humanBytes(last.UploadedBytes), humanBytes(last.Bytes), plural(last.ReusedFiles, "file"), humanBytes(total), plural(len(cs), "checkpoint"))
	if len(cs) > maxIncrementalLines {
		fmt.Fprintf(w, "              (%s not shown)\n", plural(len(cs)-maxIncrementalLines, "earlier checkpoint"))
		cs = cs[len(cs)-maxIncrementalLines:]
	}
	width := len(fmt.Sprint(cs[len(cs)-1].ID))
	for _, c := range cs {
		fmt.Fprintf(w, "              chk-%-*d uploaded %s of %s; SST files: %d uploaded (%s), %d reused (%s)\n",
			width, c.ID, humanBytes(c.UploadedBytes), humanBytes(c.Bytes),
			c.SharedFiles-c.ReusedFiles, humanBytes(c.SharedBytes-c.ReusedBytes), c.ReusedFiles, humanBytes(c.ReusedBytes))
	}
}

// plural is "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
