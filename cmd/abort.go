package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
)

type abortOptions struct {
	report outputFlag
}

func newAbortCommand(e *env) *cobra.Command {
	o := &abortOptions{}
	c := &cobra.Command{
		Use:   "abort PLAN",
		Short: "Give up a planned rescale or convert and remove its staging area",
		Long: `Close PLAN (from rescale or convert --plan-only PLAN --shards N) without committing
it: remove the plan from its staging area first, so that no shard or commit of it
starts any more, then everything the shards wrote there. The destination is never
touched. A plan whose commit has begun is refused (exit 2): run stateutil commit PLAN
again, which finishes it. Aborting a plan that is aborted already, or whose staging
area is gone, says so and exits 0. A shard still running when its plan is aborted
fails without recording its part.

` + exitCodeHelp,
		Example: `  stateutil abort plan.json
  stateutil abort hdfs://nn:8020/sp/.stateutil-shards-0123456789ab-job-7-p64/plan.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.report.validate(); err != nil {
				return err
			}
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.report.add(c)
	return c
}

func (o *abortOptions) run(c *cobra.Command, e *env, planFile string) error {
	sp, err := migrate.ReadShardPlan(c.Context(), e.reg, planFile)
	if err != nil {
		return err
	}
	res, err := migrate.AbortShards(c.Context(), e.reg, sp)
	if err != nil {
		return err
	}
	if o.report.json() {
		return render.JSON(c.OutOrStdout(), res)
	}
	if !res.Removed {
		_, err = fmt.Fprintf(c.OutOrStdout(), "plan %s has no staging area at %s (aborted before, or committed); nothing to remove\n", res.Plan, res.Staging)
		return err
	}
	_, err = fmt.Fprintf(c.OutOrStdout(), "aborted plan %s: removed its staging area %s; the destination %s is as it was\n", res.Plan, res.Staging, sp.Destination)
	return err
}
