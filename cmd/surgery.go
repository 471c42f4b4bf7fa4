package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/surgery"
)

// surgeryHelp is what the help of every state edit says of how it writes.
const surgeryHelp = `The copy goes through the pipeline convert and rescale use: any format
stateutil writes (--format; default the source's), --parallelism and
--max-parallelism in the same run, --plan-only for shards (whose plan records
--key-serializers-from; --kryo-classes and --proto-descriptors, files the shards would
run without, go with no --plan-only or --yarn), local disk, HDFS or S3.
SRC is never modified; DST is claimed for this one writer and its metadata is
committed last and atomically, so a failed or interrupted edit leaves nothing a
reader accepts; --force replaces only a snapshot (see convert's help on DST). Every write prints, per state it touches, the entries (operator
states: elements) and bytes before and after; --dry-run prints the same, read
from SRC, and writes nothing.`

// surgeryFlags are the flags every state edit shares: how the copy is
// written.
type surgeryFlags struct {
	source         sourceFlags
	report         outputFlag
	shard          shardFlags
	output         string
	format         string
	force          bool
	stateCap       sizeFlag
	verify         bool
	dryRun         bool
	quiet          bool
	parallelism    int
	maxParallelism int
}

func (s *surgeryFlags) add(c *cobra.Command, e *env) {
	s.report.add(c)
	s.source.add(c)
	s.source.addSkip(c)
	s.source.addFlinkVersion(c)
	f := c.Flags()
	f.StringVar(&s.output, "output", "", "where to write the edited copy (path, file://, hdfs://, s3://, gs://, abfss:// or wasbs:// URI)")
	f.StringVar(&s.format, "format", "", "format to write (default: the format of SRC)")
	f.BoolVar(&s.force, "force", false, "replace the snapshot at --output, whatever its format (only a snapshot: anything else there is refused)")
	addStateSizeCap(f, &s.stateCap)
	f.BoolVar(&s.verify, "verify", false, "read the result back and compare it with SRC, as edited, entry by entry")
	f.BoolVar(&s.dryRun, "dry-run", false, "print what would change, write nothing")
	f.BoolVarP(&s.quiet, "quiet", "q", false, "no progress bar")
	f.IntVar(&s.parallelism, "parallelism", 0, "also rescale every operator to this parallelism")
	f.IntVar(&s.maxParallelism, "max-parallelism", 0, "also change the max parallelism (number of key groups) of every operator")
	s.shard.add(c)
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	_ = c.RegisterFlagCompletionFunc("format", e.completeFormats)
}

func (s *surgeryFlags) validate(c *cobra.Command) error {
	if err := s.report.validate(); err != nil {
		return err
	}
	for _, name := range []string{"parallelism", "max-parallelism"} {
		if n, _ := c.Flags().GetInt(name); c.Flags().Changed(name) && n <= 0 {
			return usageErrorf("--%s must be at least 1, not %d", name, n)
		}
	}
	if s.output == "" && !s.dryRun {
		return usageErrorf("--output is required")
	}
	return s.shard.validate(s.dryRun)
}

// run writes the copy of src with edits made, or with --dry-run says what
// it would change.
func (s *surgeryFlags) run(c *cobra.Command, e *env, src string, edits ...surgery.Edit) error {
	req, err := s.source.request(src, nil)
	if err != nil {
		return err
	}
	req.Destination, req.Format, req.StateEdits = s.output, s.format, edits
	req.Change = redistribute.Request{Parallelism: s.parallelism, MaxParallelism: s.maxParallelism}
	req.Force, req.DryRun, req.Verify, req.StateSizeCap = s.force, s.dryRun, s.verify, s.stateCap.bytes
	print := func(res *migrate.Result) error { return s.print(c, src, edits, res) }
	if s.shard.active() {
		return s.shard.run(c, e, req, s.report, print)
	}
	bar := e.newProgress(c.ErrOrStderr(), s.quiet || s.dryRun, "editing")
	req.Start, req.Progress = bar.start, bar.add
	res, err := migrate.Run(c.Context(), e.reg, req)
	bar.finish()
	if err != nil {
		return err
	}
	return print(res)
}

// surgeryReport is the JSON document of a state edit.
type surgeryReport struct {
	SchemaVersion int             `json:"schema_version"`
	Source        string          `json:"source"`
	Destination   string          `json:"destination,omitempty"`
	DryRun        bool            `json:"dry_run"`
	From          string          `json:"from"`
	To            string          `json:"to"`
	Edits         []surgery.Edit  `json:"edits"`
	Surgery       *surgery.Report `json:"surgery"`
	migrate.Totals
	Verified bool `json:"verified"`
}

func (s *surgeryFlags) print(c *cobra.Command, src string, edits []surgery.Edit, res *migrate.Result) error {
	warnDropped(c.ErrOrStderr(), res.Dropped)
	out := c.OutOrStdout()
	if s.report.json() {
		return render.JSON(out, surgeryReport{SchemaVersion: 1, Source: src, Destination: res.Plan.Destination, DryRun: s.dryRun,
			From: res.From, To: res.Plan.Format, Edits: withoutRecords(edits), Surgery: res.Surgery, Totals: res.Totals, Verified: res.Verified})
	}
	for _, ed := range edits {
		if s.dryRun {
			fmt.Fprintf(out, "dry run, nothing written: %s of %s\n", ed, src)
		} else {
			fmt.Fprintf(out, "wrote %s (%s) from %s (%s): %s\n", s.output, res.Plan.Format, src, res.From, ed)
		}
	}
	if res.Surgery == nil {
		// The shards' commit: each shard edited its part.
		return nil
	}
	return render.Surgery(out, res.Surgery, res.Verified)
}

// withoutRecords is edits as a report shows them: a load's records are
// in the file they came from, and counted in the report's loads.
func withoutRecords(edits []surgery.Edit) []surgery.Edit {
	out := make([]surgery.Edit, len(edits))
	for i, e := range edits {
		e.Records = nil
		out[i] = e
	}
	return out
}
