package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/surgery"
)

type stateEditOptions struct {
	surgeryFlags
	operator string
	state    string
	to       string
}

func newStateCommand(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "state",
		Short: "Drop or rename a state in a copy of a snapshot",
		Long: `Write a copy of a snapshot with one keyed or operator state dropped (its descriptor,
entries and files gone, as if the job had never had it) or renamed (its content kept
under a new descriptor name, so that a job whose state descriptor got a new name restores
it instead of starting it empty).

` + exitCodeHelp,
		Example: `  stateutil state drop ./savepoint-1a2b --operator word-counter --state recent --output ./without-recent
  stateutil state rename ./savepoint-1a2b --operator word-counter --state count --to word-count --output ./renamed`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageErrorf("state needs a subcommand: drop or rename")
		},
	}
	c.AddCommand(newStateEditCommand(e, surgery.DropState), newStateEditCommand(e, surgery.RenameState))
	return c
}

func newStateEditCommand(e *env, op surgery.Op) *cobra.Command {
	o := &stateEditOptions{}
	c := &cobra.Command{
		Use:   "drop SRC --operator UID --state NAME --output DST",
		Short: "Write a copy of SRC without state NAME of operator UID",
		Long: `Write a copy of SRC without the keyed or operator state NAME of operator UID (uid, id
or name): its descriptor, every entry or element, and in a Flink savepoint its meta info
and serializer snapshots. The operator's other state is copied as it is.

` + surgeryHelp + `

An unknown operator or state exits 3, a state name that is both a keyed and an
operator state of the operator exits 1.

` + exitCodeHelp,
		Example: `  stateutil state drop ./savepoint-1a2b --operator word-counter --state recent --output ./without-recent
  stateutil state drop ./snapshot.dump --operator word-counter --state count --dry-run
  stateutil state drop hdfs://nn:8020/sp/job-7 --operator dedup --state seen --max-parallelism 256 --output hdfs://nn:8020/sp/job-7-fixed
  stateutil state drop ./job/chk-3 --key-serializers-from ./savepoint-9f89f7 --operator 17_group-aggregate --state accState --output ./without-acc`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c, op); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0], surgery.Edit{Op: op, Operator: o.operator, State: o.state, To: o.to})
		},
		ValidArgsFunction: completeFiles,
	}
	if op == surgery.RenameState {
		c.Use = "rename SRC --operator UID --state OLD --to NEW --output DST"
		c.Short = "Write a copy of SRC with state OLD of operator UID renamed to NEW"
		c.Long = `Write a copy of SRC with the keyed or operator state OLD of operator UID (uid, id or
name) named NEW, its content kept: Flink matches state by its descriptor name, so a job
whose descriptor is now called NEW restores it. In a Flink savepoint the meta info and
serializer snapshots of OLD are written under NEW.

` + surgeryHelp + `

An unknown operator or state exits 3; a NEW that the operator already has among its
states of the same kind (keyed or operator) exits 1, as does a NEW equal to OLD.

` + exitCodeHelp
		c.Example = `  stateutil state rename ./savepoint-1a2b --operator word-counter --state count --to word-count --output ./renamed
  stateutil state rename ./snapshot.dump --operator kafka-source --state partition-offsets --to offsets --dry-run
  stateutil state rename ./savepoint-heap-native --kryo-classes ./acme.kryo-classes --operator sessions --state events --to events-v2 --output ./renamed`
		c.Flags().StringVar(&o.to, "to", "", "the state's new name")
	}
	c.Flags().StringVar(&o.operator, "operator", "", "the operator (uid, id or name)")
	c.Flags().StringVar(&o.state, "state", "", "the keyed or operator state")
	o.add(c, e)
	return c
}

func (o *stateEditOptions) validate(c *cobra.Command, op surgery.Op) error {
	switch {
	case o.operator == "":
		return usageErrorf("--operator is required")
	case o.state == "":
		return usageErrorf("--state is required")
	case op == surgery.RenameState && o.to == "":
		return usageErrorf("--to is required")
	}
	return o.surgeryFlags.validate(c)
}
