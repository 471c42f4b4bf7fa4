package cmd

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/migrate"
)

type operatorEditOptions struct {
	source   sourceFlags
	expiry   expiryFlags
	operator string
	to       string
	output   string
	format   string
	force    bool
	verify   bool
	stateCap sizeFlag
}

func newOperatorCommand(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "operator",
		Short: "Remove or rename an operator in a copy of a snapshot",
		Long: `Write a copy of a snapshot with one operator removed (its state dropped, as when a
job no longer has it) or with its uid changed (so a job whose operator got a new uid can
restore it). The copy is in the same format unless --format says otherwise; SRC is never
modified, and the copy is written and committed as convert writes.

` + exitCodeHelp,
		Example: `  stateutil operator remove ./snapshot.dump --operator rules --output ./without-rules.dump
  stateutil operator rename ./savepoint-1a2b --operator dedup --to dedup-v2 --output ./renamed
  stateutil operator set-uid-hash ./savepoint-1a2b --operator 2c4a0a1b69e7c1a5f5bd9e1a3d7b8c90 --to 6f1c0d7c1e5b4a3f2e1d0c9b8a796857 --output ./fixed`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageErrorf("operator needs a subcommand: remove, rename or set-uid-hash")
		},
	}
	c.AddCommand(newOperatorEditCommand(e, "remove"), newOperatorEditCommand(e, "rename"), newOperatorEditCommand(e, "set-uid-hash"))
	return c
}

func newOperatorEditCommand(e *env, verb string) *cobra.Command {
	o := &operatorEditOptions{}
	c := &cobra.Command{
		Use:   verb + " SRC --operator UID --output DST",
		Short: "Write a copy of SRC without operator UID",
		Example: `  stateutil operator remove ./snapshot.dump --operator rules --output ./without-rules.dump
  stateutil operator rename ./snapshot.dump --operator word-counter --to counter-v2 --output ./renamed.dump
  stateutil operator remove ./flink/savepoint-1a2b3c --operator dedup --output ./savepoint-without-dedup
  stateutil operator rename ./flink/chk-3 --key-serializers-from ./flink/savepoint-9f89f7 --operator 17_group-aggregate --to totals --output ./renamed`,
		Long: "Write a copy of SRC without operator UID (uid, id or name) and its state.\n\n" + exitCodeHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(verb); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, verb, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	switch verb {
	case "rename":
		c.Use = verb + " SRC --operator UID --to NEWUID --output DST"
		c.Short = "Write a copy of SRC with operator UID's uid changed to NEWUID"
		c.Long = "Write a copy of SRC with the uid of operator UID (uid, id or name) changed to NEWUID.\n" +
			"Its state is kept. Written as a Flink savepoint, the operator id is the one Flink derives\n" +
			"from NEWUID (murmur3_128 of its UTF-8 bytes), so a job that sets uid(NEWUID) restores it;\n" +
			"other formats keep the id.\n\n" + exitCodeHelp
		c.Flags().StringVar(&o.to, "to", "", "the new uid")
	case "set-uid-hash":
		c.Use = verb + " SRC --operator UID --to HASH --output DST"
		c.Short = "Write a copy of SRC with operator UID's id set to HASH"
		c.Long = "Write a copy of SRC with the operator id of operator UID (uid, id or name) set to HASH\n" +
			"(32 hex digits): what Flink's setUidHash(HASH) names, for operators that never had a uid.\n\n" + exitCodeHelp
		c.Example = "  stateutil operator set-uid-hash ./savepoint --operator 2c4a0a1b69e7c1a5f5bd9e1a3d7b8c90 --to 6f1c0d7c1e5b4a3f2e1d0c9b8a796857 --output ./fixed\n" +
			"  stateutil operator set-uid-hash ./flink/chk-3 --key-serializers-from ./flink/savepoint-9f89f7 --operator 17_group-aggregate --to 6f1c0d7c1e5b4a3f2e1d0c9b8a796857 --output ./fixed"
		c.Flags().StringVar(&o.to, "to", "", "the new operator id (32 hex digits)")
	}
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "the operator (uid, id or name)")
	f.StringVar(&o.output, "output", "", "where to write the copy")
	f.StringVar(&o.format, "format", "", "format to write (default: the format of SRC)")
	f.BoolVar(&o.force, "force", false, "replace the snapshot at --output, whatever its format (only a snapshot: anything else there is refused)")
	addStateSizeCap(f, &o.stateCap)
	f.BoolVar(&o.verify, "verify", false, "read the result back and compare it with SRC entry by entry")
	o.source.add(c)
	o.source.addSkip(c)
	o.source.addFlinkVersion(c)
	o.expiry.add(c)
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	_ = c.RegisterFlagCompletionFunc("format", e.completeFormats)
	return c
}

func (o *operatorEditOptions) validate(verb string) error {
	if o.operator == "" {
		return usageErrorf("--operator is required")
	}
	if verb != "remove" && o.to == "" {
		return usageErrorf("--to is required")
	}
	if verb == "set-uid-hash" && !isOperatorID(o.to) {
		return usageErrorf("--to %q is not an operator id (32 hex digits)", o.to)
	}
	if o.output == "" {
		return usageErrorf("--output is required")
	}
	return nil
}

func (o *operatorEditOptions) run(c *cobra.Command, e *env, verb, src string) error {
	req, err := o.source.request(src, &o.expiry)
	if err != nil {
		return err
	}
	edit := migrate.Edit{Operator: o.operator, Remove: verb == "remove"}
	switch verb {
	case "rename":
		edit.UID = o.to
	case "set-uid-hash":
		edit.ID = strings.ToLower(o.to)
	}
	req.Destination, req.Format, req.Edits = o.output, o.format, []migrate.Edit{edit}
	req.Force, req.Verify, req.StateSizeCap = o.force, o.verify, o.stateCap.bytes
	res, err := migrate.Run(c.Context(), e.reg, req)
	if err != nil {
		return err
	}
	warnDropped(c.ErrOrStderr(), res.Dropped)
	switch verb {
	case "remove":
		fmt.Fprintf(c.OutOrStdout(), "wrote %s without operator %s\n", o.output, o.operator)
	case "rename":
		fmt.Fprintf(c.OutOrStdout(), "wrote %s with operator %s renamed to %s\n", o.output, o.operator, o.to)
	default:
		fmt.Fprintf(c.OutOrStdout(), "wrote %s with operator %s's id set to %s\n", o.output, o.operator, strings.ToLower(o.to))
	}
	return nil
}

// isOperatorID reports whether s is 32 hex digits.
func isOperatorID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
