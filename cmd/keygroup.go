package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/keygroup"
)

type keygroupOptions struct {
	output         outputFlag
	keyType        string
	maxParallelism int
	parallelism    int
}

func newKeygroupCommand() *cobra.Command {
	o := &keygroupOptions{}
	c := &cobra.Command{
		Use:   "keygroup KEY",
		Short: "Show the key group and subtask Flink routes a key to",
		Long: `Compute, exactly as Apache Flink does, the key group of KEY
(murmurHash(key.hashCode()) % maxParallelism) and, with --parallelism, the subtask that
owns that key group and the subtask's key-group range.

Key types follow Java's hashCode: string (UTF-16), int (Integer), long (Long), bytes
(Arrays.hashCode of the UTF-8 bytes of KEY).

` + exitCodeHelp,
		Example: `  stateutil keygroup user-1 --key-type string --max-parallelism 128
  stateutil keygroup 42 --key-type int --max-parallelism 4096 --parallelism 3
  stateutil keygroup -- -1 --key-type long --max-parallelism 128 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			t, err := keygroup.ParseKeyType(o.keyType)
			if err != nil {
				return err
			}
			if c.Flags().Changed("parallelism") && o.parallelism <= 0 {
				return usageErrorf("--parallelism must be at least 1, not %d", o.parallelism)
			}
			loc, err := keygroup.Locate(t, args[0], o.maxParallelism, o.parallelism)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			w := c.OutOrStdout()
			if o.output.json() {
				return render.JSON(w, loc)
			}
			fmt.Fprintf(w, "key:             %q (%s)\n", loc.Key, loc.KeyType)
			fmt.Fprintf(w, "hashCode:        %d\n", loc.HashCode)
			fmt.Fprintf(w, "murmur:          %d\n", loc.Murmur)
			fmt.Fprintf(w, "key group:       %d of %d\n", loc.KeyGroup, loc.MaxParallelism)
			if loc.Subtask != nil {
				fmt.Fprintf(w, "subtask:         %d of %d (key groups %v)\n", *loc.Subtask, loc.Parallelism, *loc.SubtaskRange)
			}
			return nil
		},
	}
	o.output.add(c)
	f := c.Flags()
	f.StringVar(&o.keyType, "key-type", "string", "type of KEY: string, int, long or bytes")
	f.IntVar(&o.maxParallelism, "max-parallelism", 128, "max parallelism (number of key groups), 1..32768")
	f.IntVar(&o.parallelism, "parallelism", 0, "operator parallelism; adds the subtask that owns the key")
	_ = c.RegisterFlagCompletionFunc("key-type", cobra.FixedCompletions([]string{"string", "int", "long", "bytes"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}
