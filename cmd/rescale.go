package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
)

type rescaleOptions struct {
	source         sourceFlags
	expiry         expiryFlags
	report         outputFlag
	parallelism    int
	operators      []string
	maxParallelism int
	output         string
	format         string
	force          bool
	stateCap       sizeFlag
	dryRun         bool
	verify         bool
	quiet          bool
	entryByEntry   bool
	tempDir        string
	shard          shardFlags
}

func newRescaleCommand(e *env) *cobra.Command {
	o := &rescaleOptions{}
	c := &cobra.Command{
		Use:   "rescale SRC --parallelism N [--operator UID=N]... [--max-parallelism M] --output DST",
		Short: "Redistribute a snapshot's state to a new parallelism",
		Long: `Write a copy of SRC with its state redistributed as Apache Flink does on restore:

  keyed state      new subtask i takes the key groups of its new range, read from every
                   old subtask whose range intersects it;
  split state      all elements of a state, in old subtask order, are cut into N
                   contiguous slices (the first total%N get one more), the starting
                   subtask rotating from state to state;
  union state      every new subtask gets every element;
  broadcast state  new subtask i gets old subtask i % oldP's copy.

With unchanged parallelism everything stays where it is, except union state.
--parallelism applies to every operator; --operator UID=N overrides it for one.
--max-parallelism changes the number of key groups, which Flink itself cannot do:
every key is hashed again (its key type must have a known Java hashCode), sorting in
bounded memory with temporary files.

A Flink checkpoint or savepoint is written as a Flink savepoint (canonical, state files
relative to its _metadata) that Flink restores in a job whose max parallelism is unset or
the new one; --flink-version X.Y writes it for another Flink (see docs/flink.md: "Writing
Flink savepoints"). Keys are hashed again from their bytes with the Java hashCode their key
serializer implies (String, Long, Integer, Short, Byte, Boolean, Character, Double, Float,
Tuple and Row of these, the Table API's RowData); other key types, and raw state that
would have to be split, are refused, naming them. An unaligned checkpoint whose channels
hold records in flight is refused (exit 4) unless every operator keeps its parallelism and
max parallelism: Flink redistributes such records on restore, by the job's key selectors
and topology, which the checkpoint does not record; restore it in Flink at the new
parallelism, or take a savepoint and rescale that. A rescale that keeps the shape carries
them, as convert --to flink does.

` + copySchemasHelp + `

--dry-run prints the plan (new key-group ranges, the old subtasks feeding each new one,
entries, bytes and skew, and where operator-state elements go) without writing.
SRC is never modified; DST appears only when complete, is claimed for this one
writer, and --force replaces only a snapshot (see convert's help on DST). With --verify
the result is read back and compared with SRC.

` + shardHelp + `

` + expiryHelp + `
` + exitCodeHelp,
		Example: `  stateutil rescale ./snapshot.dump --parallelism 4 --output ./rescaled.dump
  stateutil rescale ./snapshot.dump --parallelism 4 --operator kafka-source=1 --output ./r.dump --dry-run
  stateutil rescale ./snapshot.dump --max-parallelism 4096 --output ./wide.dump -o json
  stateutil rescale ./flink/savepoint-1a2b3c --max-parallelism 4096 --operator counter=8 --output ./savepoint-4096
  stateutil rescale ./flink/chk-3 --parallelism 3 --key-serializers-from ./flink/savepoint-9f89f7 --output ./savepoint-p3
  stateutil rescale ./flink/chk-42 --max-parallelism 256 --flink-version 1.20 --drop-expired-ttl-at 2026-12-01T00:00:00Z --ttl last-seen=24h --output ./sp
  stateutil rescale hdfs://nn:8020/sp/job-7 --max-parallelism 4096 --output hdfs://nn:8020/sp/job-7-wide --yarn http://rm:8088 --shards 100 --queue batch
  stateutil rescale s3://bucket/sp/job-7 --parallelism 64 --output s3://bucket/sp/job-7-p64 --plan-only plan.json --shards 8`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			req, err := o.validate(c)
			if err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0], req)
		},
		ValidArgsFunction: completeFiles,
	}
	o.report.add(c)
	o.source.add(c)
	o.source.addSkip(c)
	o.source.addFlinkVersion(c)
	o.expiry.add(c)
	f := c.Flags()
	f.IntVar(&o.parallelism, "parallelism", 0, "new parallelism of every operator")
	f.StringArrayVar(&o.operators, "operator", nil, "new parallelism of one operator, as UID=N (repeatable)")
	f.IntVar(&o.maxParallelism, "max-parallelism", 0, "new max parallelism (number of key groups) of every operator")
	f.StringVar(&o.output, "output", "", "where to write the rescaled snapshot")
	f.StringVar(&o.format, "format", "", "format to write (default: the format of SRC)")
	f.BoolVar(&o.force, "force", false, "replace the snapshot at --output, whatever its format (only a snapshot: anything else there is refused)")
	addStateSizeCap(f, &o.stateCap)
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan, write nothing")
	f.BoolVar(&o.verify, "verify", false, "read the result back and compare it with SRC entry by entry")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	f.BoolVar(&o.entryByEntry, "entry-by-entry", false, "move keyed state entry by entry even where a faster path exists (RocksDB to RocksDB copies SST data), to compare the two")
	f.StringVar(&o.tempDir, "temp-dir", "", "where a max-parallelism change spills sorted runs (default: the system's)")
	o.shard.add(c)
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	_ = c.RegisterFlagCompletionFunc("format", e.completeFormats)
	return c
}

func (o *rescaleOptions) validate(c *cobra.Command) (redistribute.Request, error) {
	req := redistribute.Request{Parallelism: o.parallelism, MaxParallelism: o.maxParallelism}
	if err := o.report.validate(); err != nil {
		return req, err
	}
	if c.Flags().Changed("parallelism") && o.parallelism <= 0 {
		return req, usageErrorf("--parallelism must be at least 1, not %d", o.parallelism)
	}
	if c.Flags().Changed("max-parallelism") && o.maxParallelism <= 0 {
		return req, usageErrorf("--max-parallelism must be at least 1, not %d", o.maxParallelism)
	}
	for _, spec := range o.operators {
		uid, n, ok := strings.Cut(spec, "=")
		p, err := strconv.Atoi(n)
		if !ok || uid == "" || err != nil || p <= 0 {
			return req, usageErrorf("--operator wants UID=N with N at least 1, not %q", spec)
		}
		if req.Operators == nil {
			req.Operators = map[string]int{}
		}
		req.Operators[uid] = p
	}
	if o.parallelism == 0 && o.maxParallelism == 0 && len(req.Operators) == 0 {
		return req, usageErrorf("nothing to change: give --parallelism, --operator UID=N or --max-parallelism")
	}
	if o.output == "" && !o.dryRun {
		return req, usageErrorf("--output is required")
	}
	return req, o.shard.validate(o.dryRun)
}

func (o *rescaleOptions) run(c *cobra.Command, e *env, src string, change redistribute.Request) error {
	req, err := o.source.request(src, &o.expiry)
	if err != nil {
		return err
	}
	req.Destination, req.Format, req.Change, req.Force, req.DryRun = o.output, o.format, change, o.force, o.dryRun
	req.Verify, req.EntryByEntry, req.TempDir, req.StateSizeCap = o.verify, o.entryByEntry, o.tempDir, o.stateCap.bytes
	if o.shard.active() {
		return o.shard.run(c, e, req, o.report, func(res *migrate.Result) error { return o.print(c, res) })
	}
	bar := e.newProgress(c.ErrOrStderr(), o.quiet, "rescaling")
	req.Start, req.Progress = bar.start, bar.add
	res, err := migrate.Run(c.Context(), e.reg, req)
	bar.finish()
	if err != nil {
		return err
	}
	return o.print(c, res)
}

func (o *rescaleOptions) print(c *cobra.Command, res *migrate.Result) error {
	warnDropped(c.ErrOrStderr(), res.Dropped)
	if o.report.json() {
		return render.JSON(c.OutOrStdout(), res.Plan.Plan)
	}
	if err := render.RescalePlan(c.OutOrStdout(), res.Plan.Plan); err != nil {
		return err
	}
	if f := res.Plan.InFlight; f != nil {
		_, err := fmt.Fprintf(c.OutOrStdout(), "Data in flight: %d channels (%s) carried\n", f.Channels, render.Bytes(f.Bytes))
		return err
	}
	return nil
}
