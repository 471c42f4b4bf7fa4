package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

type upgradeOptions struct {
	source         sourceFlags
	report         outputFlag
	check          bool
	parallelism    int
	maxParallelism int
	output         string
	force          bool
	quiet          bool
	tempDir        string
}

func newUpgradeCommand(e *env) *cobra.Command {
	o := &upgradeOptions{}
	c := &cobra.Command{
		Use:   "upgrade SRC --flink-version 2.N (--output DST | --check)",
		Short: "Carry a Flink 1.x checkpoint or savepoint into Flink 2.x",
		Long: `Write a copy of SRC, a Flink 1.x checkpoint or savepoint of any state backend (heap or
RocksDB, canonical or native, changelog), as a savepoint that Flink 2.N restores into the
same job compiled against Flink 2.N:

  Kryo             values Flink 1.x wrote with Kryo 2 are written again as Flink 2.x's
                   Kryo 5 writes them (same registrations, references on);
  POJO fields      List, Collection, Set and Map fields that Flink 1.x gave to Kryo are
                   written as Flink 2.x's NullableSerializer around its ListSerializer,
                   SetSerializer or MapSerializer writes them;
  serializers      the serializer snapshots are those Flink 2.N writes for the same
                   types; _metadata and the operator-state headers are of 2.N's versions;
  the rest         is carried byte for byte.

Every rewritten value is decoded from its new bytes and compared with what its old bytes
held before anything is published: a difference aborts the write (exit 2).

--check writes nothing: it prints, per operator and state, "restores as is", "rewritten
by upgrade" (and what changes) or "blocked" (and why: a class Kryo writes with its
FieldSerializer or with a serializer registered for it, whose bytes the savepoint does
not describe, unless --kryo-classes declares what that serializer writes; a POJO
collection field whose element type the values do not tell; a connector whose state
format changed; a legacy SourceFunction source, which Flink 2.x removed; values
stateutil cannot read that the upgrade must rewrite; an unaligned checkpoint's data in
flight when a state must be rewritten or is blocked, since no copy for Flink 2.x can carry it). When
every state restores as is, so does the data in flight: Flink 2.x restores the checkpoint
itself. It exits 8 when something blocks, 0 otherwise, for a CI gate. Without --check,
an upgrade that something blocks writes nothing and exits 8, naming every blocked state.

A POJO collection field's type argument is not in the savepoint: the upgrade takes it
from the values (every element of the field in every value of one class that Flink
serializes itself). Should the job declare another (List<Object> holding only Longs),
Flink 2.x refuses the restore as incompatible; it never reads it wrongly.

--parallelism and --max-parallelism rescale in the same run, as rescale does. Downgrades
(a Flink 2.x snapshot to Flink 1.x) are refused (exit 4). SRC is never modified; DST
appears only when complete, and is claimed for this one writer (see convert). A Flink
changelog checkpoint that records no key serializer for some operators takes them from a
savepoint of the same job with --key-serializers-from, as convert does.

` + exitCodeHelp,
		Example: `  stateutil upgrade --check ./savepoint-1.20 --flink-version 2.1
  stateutil upgrade --check ./savepoint-1.20 --flink-version 2.1 -o json
  stateutil upgrade ./savepoint-1.20 --flink-version 2.1 --output ./savepoint-2.1
  stateutil upgrade ./savepoint-1.20 --flink-version 2.3 --kryo-classes ./classes.java --output ./savepoint-2.3
  stateutil upgrade ./job/chk-42 --path-map file:/data/flink=/mnt/copy --flink-version 2.3 --output ./savepoint-2.3
  stateutil upgrade ./job/chk-3 --key-serializers-from ./savepoint-1.20 --flink-version 2.3 --output ./savepoint-2.3
  stateutil upgrade ./savepoint-1.18 --flink-version 2.0 --max-parallelism 4096 --parallelism 8 --output ./savepoint-2.0-wide`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.report.add(c)
	o.source.add(c)
	o.source.addFlinkVersion(c)
	f := c.Flags()
	f.BoolVar(&o.check, "check", false, "say per state what the upgrade would do, write nothing; exit 8 when something blocks")
	f.IntVar(&o.parallelism, "parallelism", 0, "new parallelism of every operator")
	f.IntVar(&o.maxParallelism, "max-parallelism", 0, "new max parallelism (number of key groups) of every operator")
	f.StringVar(&o.output, "output", "", "where to write the upgraded savepoint")
	f.BoolVar(&o.force, "force", false, "replace an existing snapshot at --output")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&o.tempDir, "temp-dir", "", "where a max-parallelism change spills sorted runs (default: the system's)")
	return c
}

func (o *upgradeOptions) validate(c *cobra.Command) error {
	if err := o.report.validate(); err != nil {
		return err
	}
	if o.source.flinkVersion == "" {
		return usageErrorf("--flink-version is required: the Flink 2.x release, X.Y, that must restore the result")
	}
	if c.Flags().Changed("parallelism") && o.parallelism <= 0 {
		return usageErrorf("--parallelism must be at least 1, not %d", o.parallelism)
	}
	if c.Flags().Changed("max-parallelism") && o.maxParallelism <= 0 {
		return usageErrorf("--max-parallelism must be at least 1, not %d", o.maxParallelism)
	}
	switch {
	case o.check && o.output != "":
		return usageErrorf("--check writes nothing: give --check or --output, not both")
	case o.check && (o.parallelism != 0 || o.maxParallelism != 0):
		return usageErrorf("--check takes no --parallelism or --max-parallelism")
	case !o.check && o.output == "":
		return usageErrorf("--output is required (or --check)")
	}
	return nil
}

func (o *upgradeOptions) run(c *cobra.Command, e *env, src string) error {
	req, err := o.source.request(src, nil)
	if err != nil {
		return err
	}
	if o.check {
		rep, err := migrate.CheckUpgrade(c.Context(), e.reg, src, req.ReaderVersion, req.PathMap)
		if err != nil {
			return err
		}
		if err := o.printReport(c.OutOrStdout(), rep); err != nil {
			return err
		}
		if rep.Blocked > 0 {
			return &codedError{code: ExitBlocked, err: fmt.Errorf("the upgrade to %s is blocked: %s", rep.To, rep.BlockedCount())}
		}
		return nil
	}
	req.Destination, req.Format, req.Force, req.TempDir, req.Upgrade = o.output, "flink", o.force, o.tempDir, true
	req.Change = redistribute.Request{Parallelism: o.parallelism, MaxParallelism: o.maxParallelism}
	bar := e.newProgress(c.ErrOrStderr(), o.quiet, "upgrading")
	req.Start, req.Progress = bar.start, bar.add
	res, err := migrate.Run(c.Context(), e.reg, req)
	bar.finish()
	if err != nil {
		return err
	}
	if o.report.json() {
		return render.JSON(c.OutOrStdout(), res)
	}
	t := res.Totals
	fmt.Fprintf(c.OutOrStdout(), "Upgraded %s -> %s for %s: %d operators, %d keyed entries, %d operator-state elements, %s\n\n",
		src, o.output, res.Upgrade.To, t.Operators, t.Entries, t.Elements, render.Bytes(t.Bytes))
	return o.printReport(c.OutOrStdout(), res.Upgrade)
}

// printReport prints the verdicts, as a table or JSON.
func (o *upgradeOptions) printReport(w io.Writer, rep *snapshot.UpgradeReport) error {
	if o.report.json() {
		return render.JSON(w, rep)
	}
	return render.UpgradeReport(w, rep)
}
