package cmd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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
		err = writeJSON(w, res)
	} else {
		err = printDiff(w, res, o.values)
	}
	if err != nil {
		return err
	}
	if !res.Equal {
		return &codedError{code: ExitUsage, err: errDiffer}
	}
	return nil
}

func printDiff(w io.Writer, res *diff.Result, values bool) error {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", res.A, res.FormatA, res.B, res.FormatB)
	for _, ch := range res.Changes {
		fmt.Fprintf(w, "%s: %s -> %s\n", ch.Field, ch.A, ch.B)
	}
	for _, op := range res.OperatorsRemoved {
		fmt.Fprintf(w, "operator removed: %s\n", operatorLabel(op.ID, op.UID, op.Name))
	}
	for _, op := range res.OperatorsAdded {
		fmt.Fprintf(w, "operator added: %s\n", operatorLabel(op.ID, op.UID, op.Name))
	}
	for _, op := range res.Operators {
		if op.Equal {
			continue
		}
		fmt.Fprintf(w, "\nOperator %s:\n", operatorLabel(op.ID, op.UID, op.Name))
		for _, ch := range op.Changes {
			fmt.Fprintf(w, "  %s: %s -> %s\n", ch.Field, ch.A, ch.B)
		}
		for _, s := range op.StatesRemoved {
			fmt.Fprintf(w, "  %s state removed: %s\n", s.Scope, s.Name)
		}
		for _, s := range op.StatesAdded {
			fmt.Fprintf(w, "  %s state added: %s\n", s.Scope, s.Name)
		}
		for _, s := range op.StatesChanged {
			fmt.Fprintf(w, "  %s state %s: %s %s -> %s\n", s.Scope, s.Name, s.Field, s.A, s.B)
		}
		var rows [][]string
		for _, n := range op.Counts {
			rows = append(rows, []string{n.Name, n.Scope, strconv.FormatInt(n.A, 10), strconv.FormatInt(n.B, 10), strconv.FormatInt(n.B-n.A, 10)})
		}
		if len(rows) > 0 {
			if err := table(w, []string{"STATE", "SCOPE", "A", "B", "B-A"}, rows); err != nil {
				return err
			}
		}
		if op.EntriesNotCompared != "" {
			fmt.Fprintf(w, "  entries not compared: %s\n", op.EntriesNotCompared)
		}
		if len(op.ElementsDiffer) > 0 {
			fmt.Fprintf(w, "  operator-state elements differ: %s\n", strings.Join(op.ElementsDiffer, ", "))
		}
		rows = nil
		header := []string{"STATE", "KEY GROUP", "KEY", "CHANGE"}
		if values {
			header = append(header, "OLD", "NEW")
		}
		for _, k := range op.Keys {
			row := []string{k.State, strconv.Itoa(k.KeyGroup), jsonText(k.Key), k.Change}
			if values {
				row = append(row, valueText(k.Old), valueText(k.New))
			}
			rows = append(rows, row)
		}
		if len(rows) > 0 {
			if err := table(w, header, rows); err != nil {
				return err
			}
		}
		if op.KeysOmitted > 0 {
			fmt.Fprintf(w, "  ... and %d more keys (raise --max-keys)\n", op.KeysOmitted)
		}
	}
	if res.Equal {
		fmt.Fprintln(w, "equal")
	} else {
		fmt.Fprintln(w, "\ndifferent")
	}
	return nil
}

// valueText is a value for a table cell; "-" where there is none.
func valueText(v any) string {
	if v == nil {
		return "-"
	}
	return jsonText(v)
}
