package cmd

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// outputFlag is -o/--output-format, how every command prints its result:
// table (for people) or json (for scripts). --output is always a
// destination; commands that write none still take --output for the
// format, as earlier versions did, hidden and deprecated.
type outputFlag struct {
	format  string
	choices []string
}

func (o *outputFlag) add(c *cobra.Command) {
	if o.choices == nil {
		o.choices = []string{"table", "json"}
	}
	help := "output format: " + strings.Join(o.choices, ", ")
	c.Flags().StringVarP(&o.format, "output-format", "o", o.choices[0], help)
	_ = c.RegisterFlagCompletionFunc("output-format", cobra.FixedCompletions(o.choices, cobra.ShellCompDirectiveNoFileComp))
}

// addLegacyOutput adds the hidden --output spelling of -o to a command
// that writes no destination.
func (o *outputFlag) addLegacyOutput(c *cobra.Command) {
	c.Flags().StringVar(&o.format, "output", o.format, "output format")
	_ = c.Flags().MarkDeprecated("output", "use -o/--output-format")
}

func (o *outputFlag) validate() error {
	if !slices.Contains(o.choices, o.format) {
		return usageErrorf("-o/--output-format must be %s, not %q", strings.Join(o.choices, " or "), o.format)
	}
	return nil
}

func (o *outputFlag) json() bool { return o.format == "json" }
