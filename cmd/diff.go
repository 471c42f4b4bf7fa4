package cmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/diff"
)

type diffOptions struct {
	source  sourceFlags
	output  outputFlag
	entries bool
	values  bool
	maxKeys int
}

func newDiffCommand(e *env) *cobra.Command {
	o := &diffOptions{}
	c := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two snapshots",
		Long: `Compare snapshot A with snapshot B, in any formats: operators added and removed
(matched by uid, else id), parallelism and max-parallelism changes, state descriptors
added, removed and changed (kind, types, TTL, mode), and entries per keyed state and
elements per operator state.

With --entries, keyed entries are compared key by key and the keys that differ are
listed (added, removed, changed); --values adds their old and new values, decoded as
stateutil get shows them. B is brought to A's layout first, so snapshots at different
parallelism compare by content; both are read one key group at a time.

Exit code 0 means the snapshots are equal, 1 that they differ; 2 and up are errors.

` + exitCodeHelp,
		Example: `  stateutil diff ./before.dump ./after.dump
  stateutil diff ./snapshot.dump ./rescaled.dump --entries -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			if o.values && !o.entries {
				return usageErrorf("--values goes with --entries")
			}
			if o.maxKeys < 0 {
				return usageErrorf("--max-keys cannot be negative")
			}
			return o.run(c, e, args[0], args[1])
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
	}
	o.output.add(c)
	o.output.addLegacyOutput(c)
	o.source.add(c)
	o.source.addSkip(c)
	c.Flags().BoolVar(&o.entries, "entries", false, "compare keyed entries and operator-state elements, listing the keys that differ")
	c.Flags().BoolVar(&o.values, "values", false, "with --entries: show the old and new values of the keys that differ")
	c.Flags().IntVar(&o.maxKeys, "max-keys", 1000, "list at most this many differing keys per operator")
	return c
}

// errDiffer is diff's "the snapshots differ" (exit code 1).
var errDiffer = errors.New("snapshots differ")

func (o *diffOptions) run(c *cobra.Command, e *env, la, lb string) error {
	ctx := c.Context()
	opts, err := o.source.openOptions()
	if err != nil {
		return err
	}
	a, err := e.reg.Open(ctx, la, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := e.reg.Open(ctx, lb, opts)
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := diff.Compare(ctx, la, a, lb, b, diff.Options{Entries: o.entries, Values: o.values, MaxKeys: o.maxKeys, Codecs: e.reg.Codecs, SkipUnreadable: o.source.skipUnreadable})
	if err != nil {
		return err
	}
	warnDropped(c.ErrOrStderr(), append(res.DroppedA, res.DroppedB...))
	w := c.OutOrStdout()
	if o.output.json() {
		err = render.JSON(w, res)
	} else {
		err = render.Diff(w, res, o.values)
	}
	if err != nil {
		return err
	}
	if !res.Equal {
		return &codedError{code: ExitUsage, err: errDiffer}
	}
	return nil
}
