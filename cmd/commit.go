package cmd

import (
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
)

type commitOptions struct {
	report outputFlag
	verify bool
}

func newCommitCommand(e *env) *cobra.Command {
	o := &commitOptions{}
	c := &cobra.Command{
		Use:   "commit PLAN",
		Short: "Finish a planned rescale or convert once every shard has run",
		Long: `Check that PLAN is open (its staging area holds the same plan), that every shard
recorded its part (the shards missing are named, and nothing is written while any is),
that every file the shards recorded is in the staging area with the size and CRC32C
recorded, and that the keyed entries and operator-state elements the shards wrote add
up to the source's; then remove what killed or superseded shard runs left and write the
format's metadata. --verify compares the staged
snapshot with the source entry by entry before anything reaches the destination: on a
difference nothing is written there and the staging area stays for inspection. Then
the plan is marked committed, the snapshot moved to the destination (a plan made with
--force replaces what is there) and the staging area removed. The summary gives what
the shards wrote. A commit killed at any point leaves nothing at the destination that a
reader accepts but the whole snapshot; run it again: it finishes the move (also one an
object store copied half way) and the cleanup. A damaged or incomplete shard is named
(exit 2): run it again. An aborted plan, or a plan whose source changed since it was
planned, is refused (exit 2).

` + exitCodeHelp,
		Example: `  stateutil commit plan.json
  stateutil commit hdfs://nn:8020/sp/.stateutil-shards-0123456789ab-job-7-p64/plan.json --verify`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.report.validate(); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.report.add(c)
	c.Flags().BoolVar(&o.verify, "verify", false, "read the result back and compare it with the source entry by entry")
	return c
}

// killCommitHook is for tests of a commit killed after it wrote the
// metadata: with STATEUTIL_TEST_KILL_COMMIT=after-metadata the commit kills
// itself (SIGKILL) there.
func killCommitHook() func() {
	if os.Getenv("STATEUTIL_TEST_KILL_COMMIT") != "after-metadata" {
		return nil
	}
	return func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
}

func (o *commitOptions) run(c *cobra.Command, e *env, planFile string) error {
	sp, err := migrate.ReadShardPlan(c.Context(), e.reg, planFile)
	if err != nil {
		return err
	}
	opts := migrate.CommitOptions{Verify: o.verify, BeforePlace: killCommitHook()}
	res, err := migrate.CommitShards(c.Context(), e.reg, sp, opts)
	if err != nil {
		return err
	}
	if o.report.json() {
		return render.JSON(c.OutOrStdout(), res)
	}
	if res.AlreadyCommitted {
		how := "already committed by an earlier run"
		if res.StagingGone && sp.Force {
			how = "committed or aborted by an earlier run (its staging area is gone and the destination holds a snapshot)"
		}
		note := "; staging cleaned up"
		if res.Verified {
			note += ", verified"
		}
		fmt.Fprintf(c.OutOrStdout(), "plan %s: %s (%s) %s%s\n", sp.ID, sp.Destination, sp.Format, how, note)
		return nil
	}
	t := res.Totals
	note := ""
	if res.Verified {
		note = ", verified"
	}
	fmt.Fprintf(c.OutOrStdout(), "committed plan %s: %s (%s): %d operators, %d subtasks, %d keyed entries, %d operator-state elements, %s written by %d shards%s\n",
		sp.ID, sp.Destination, sp.Format, t.Operators, t.Subtasks, t.Entries, t.Elements, render.Bytes(t.Bytes), len(sp.Shards), note)
	return nil
}
