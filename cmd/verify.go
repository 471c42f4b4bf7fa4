package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
)

type verifyOptions struct {
	source sourceFlags
	output outputFlag
	strict bool
}

func newVerifyCommand(e *env) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check a snapshot end to end and print every problem",
		Long: `Read every keyed entry and operator-state element of a snapshot and check:

  - each operator's key-group ranges partition [0, max parallelism) exactly, as Flink
    assigns them;
  - every entry lies in its subtask's range, in key-group order, in the key group its
    key hashes to (where the key type's Java hashCode is known), of a declared state;
  - TTL expiry timestamps are not negative, and only states with TTL carry them;
  - entry and element counts match what the metadata records;
  - the format the metadata names is the one it was read as, and each
    subtask's file list names exactly the files its state is read from
    (filesystem, rocksdb);
  - whatever the format checks while reading (checksums, file references);
  - for a Flink savepoint stateutil wrote, every file's size and CRC32C against
    the checksum manifest beside _metadata (_stateutil-checksums.json).

Metadata no reader can make sense of (parallelism outside 1..max parallelism,
ranges that are not Flink's, duplicate operators or state names, unknown state
kinds or modes, names over 64 KiB) is refused when the snapshot is opened, by
verify and inspect alike.

Every finding is printed; then the command fails with exit code 2.

A value whose serializer stateutil does not implement (a class under Kryo, a custom
TypeSerializer, an unknown serializer snapshot) is not decoded: no damage, counted by
operator, state, part and serializer; so is a state whose values it cannot tell apart
(part "state", VALUES "?" if not recorded). With --strict they fail verify (exit 6).
Where the keys are not decoded because the snapshot records no key serializer (a Flink
changelog checkpoint not yet materialized), verify names the operators and
--key-serializers-from, which takes the key serializers from a savepoint of the same job.

A warning is what verify could not check though the snapshot's format would
let it: a Flink savepoint stateutil wrote (its state files are named as
stateutil names them) whose checksum manifest is gone, so that damage to its
state files can go unseen. Warnings are printed, and verify still succeeds;
with --strict they fail it with exit code 7 (before values not decoded).

` + exitCodeHelp,
		Example: `  stateutil verify ./snapshot.dump
  stateutil verify hdfs://nn:9000/checkpoints/job/chk-7 -o json
  stateutil verify --strict ./savepoint-1a2b3c`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.output.add(c)
	o.output.addLegacyOutput(c)
	o.source.add(c)
	c.Flags().BoolVar(&o.strict, "strict", false, "fail when there are warnings (exit code 7) or values were not decoded (exit code 6), even if nothing is damaged")
	return c
}

func (o *verifyOptions) run(c *cobra.Command, e *env, location string) error {
	ctx := c.Context()
	r, err := o.source.open(ctx, e, location)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := verify.Check(ctx, location, r, e.reg.Codecs)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if o.output.json() {
		err = render.JSON(w, res)
	} else {
		err = render.Verify(w, res)
	}
	if err != nil {
		return err
	}
	if !res.OK {
		return fmt.Errorf("%w: %d problems found in %q", snapshot.ErrCorrupt, len(res.Findings), location)
	}
	if n := len(res.Warnings); o.strict && n > 0 {
		return fmt.Errorf("%w: %d in %q (--strict)", verify.ErrWarnings, n, location)
	}
	if o.strict && len(res.NotDecoded) > 0 {
		return fmt.Errorf("%w: %d values in %q, whose serializers stateutil does not implement (--strict)", snapshot.ErrNotDecoded, res.NotDecodedValues(), location)
	}
	return nil
}
