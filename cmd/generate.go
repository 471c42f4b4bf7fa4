package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
)

type generateOptions struct {
	format   string
	output   string
	force    bool
	stateCap sizeFlag
	config   generate.Config
}

func newGenerateCommand(e *env) *cobra.Command {
	o := &generateOptions{config: generate.Default()}
	c := &cobra.Command{
		Use:   "generate --format FORMAT --output PATH",
		Short: "Write a deterministic example snapshot",
		Long: `Write an example snapshot: a source with partition offsets (split) and watermarks
(union), a keyed word counter with value, list (TTL), map (TTL), reducing and aggregating
state, a keyed operator with broadcast rules, and a stateless sink. The same flags always
give the same snapshot.

` + exitCodeHelp,
		Example: `  stateutil generate --format memory --output ./example.dump
  stateutil generate --format jobmanager --output ./big.dump --keys 5000 --parallelism 4 --max-parallelism 4096`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.output == "" {
				return usageErrorf("--output is required")
			}
			if o.config.Keys < 0 || o.config.ValueBytes < 0 {
				return usageErrorf("--keys and --value-bytes cannot be negative")
			}
			f, err := e.reg.Writable(o.format)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			w, err := migrate.Create(c.Context(), e.reg, f, o.output, snapshot.WriteOptions{Force: o.force, StateSizeCap: o.stateCap.bytes})
			if err != nil {
				return err
			}
			s, err := generate.Write(c.Context(), w, o.config)
			if err != nil {
				return errors.Join(err, w.Abort(context.WithoutCancel(c.Context())))
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s snapshot of job %s with %d operators to %s\n", f.Name, s.JobID, len(s.Operators), o.output)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.format, "format", "memory", "snapshot format to write")
	f.StringVar(&o.output, "output", "", "where to write the snapshot (path, file://, hdfs://, s3://, gs://, abfss:// or wasbs:// URI)")
	f.BoolVar(&o.force, "force", false, "replace the snapshot at --output (only a snapshot: anything else there is refused)")
	addStateSizeCap(f, &o.stateCap)
	f.Uint64Var(&o.config.Seed, "seed", o.config.Seed, "random seed")
	f.IntVar(&o.config.Keys, "keys", o.config.Keys, "distinct keys per keyed operator")
	f.IntVar(&o.config.Parallelism, "parallelism", o.config.Parallelism, "parallelism of the word counter")
	f.IntVar(&o.config.MaxParallelism, "max-parallelism", o.config.MaxParallelism, "max parallelism of every operator")
	f.IntVar(&o.config.ValueBytes, "value-bytes", 0, "extra bytes of padding per value, to grow the snapshot")
	_ = c.RegisterFlagCompletionFunc("format", e.completeFormats)
	return c
}
