package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
)

type operatorEditOptions struct {
	operator string
	to       string
	output   string
	force    bool
}

func newOperatorCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "operator",
		Short: "Remove or rename an operator in a copy of a snapshot",
		Long: `Write a copy of a snapshot with one operator removed (its state dropped, as when a
job no longer has it) or with its uid changed (so a job whose operator got a new uid can
restore it). The copy is in the same format; SRC is never modified.

` + exitCodeHelp,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageErrorf("operator needs a subcommand: remove or rename")
		},
	}
	c.AddCommand(newOperatorEditCommand("remove"), newOperatorEditCommand("rename"))
	return c
}

func newOperatorEditCommand(verb string) *cobra.Command {
	o := &operatorEditOptions{}
	c := &cobra.Command{
		Use:   verb + " SRC --operator UID --output DST",
		Short: "Write a copy of SRC without operator UID",
		Example: `  stateutil operator remove ./snapshot.dump --operator rules --output ./without-rules.dump
  stateutil operator rename ./snapshot.dump --operator word-counter --to counter-v2 --output ./renamed.dump`,
		Long: "Write a copy of SRC without operator UID (uid, id or name) and its state.\n\n" + exitCodeHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(verb, args[0]); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, verb, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	if verb == "rename" {
		c.Use = verb + " SRC --operator UID --to NEWUID --output DST"
		c.Short = "Write a copy of SRC with operator UID's uid changed to NEWUID"
		c.Long = "Write a copy of SRC with the uid of operator UID (uid, id or name) changed to NEWUID.\nIts operator id and state are kept.\n\n" + exitCodeHelp
		c.Flags().StringVar(&o.to, "to", "", "the new uid")
	}
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "the operator (uid, id or name)")
	f.StringVar(&o.output, "output", "", "where to write the copy")
	f.BoolVar(&o.force, "force", false, "replace an existing snapshot at --output")
	_ = c.RegisterFlagCompletionFunc("operator", completeOperators)
	return c
}

func (o *operatorEditOptions) validate(verb, src string) error {
	if o.operator == "" {
		return usageErrorf("--operator is required")
	}
	if verb == "rename" && o.to == "" {
		return usageErrorf("--to is required")
	}
	return checkDestination(src, o.output)
}

func (o *operatorEditOptions) run(c *cobra.Command, verb, src string) error {
	ctx := c.Context()
	f, err := snapshot.Detect(ctx, src)
	if err != nil {
		return err
	}
	if f.Create == nil {
		return usageErrorf("format %q is read-only; convert the snapshot first", f.Name)
	}
	r, err := f.Open(ctx, src, snapshot.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	if _, ok := r.Snapshot().Operator(o.operator); !ok {
		return fmt.Errorf("%w: no operator %q in %q", snapshot.ErrNotFound, o.operator, src)
	}
	w, err := f.Create(ctx, o.output, snapshot.WriteOptions{Force: o.force})
	if err != nil {
		return err
	}
	if verb == "remove" {
		err = migrate.RemoveOperator(ctx, r, w, o.operator)
	} else {
		err = migrate.RenameOperator(ctx, r, w, o.operator, o.to)
	}
	if errors.Is(err, migrate.ErrConflict) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	if verb == "remove" {
		fmt.Fprintf(c.OutOrStdout(), "wrote %s without operator %s\n", o.output, o.operator)
	} else {
		fmt.Fprintf(c.OutOrStdout(), "wrote %s with operator %s renamed to %s\n", o.output, o.operator, o.to)
	}
	return nil
}
