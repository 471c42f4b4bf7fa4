package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
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

// writeCompactJSON writes v as one line of JSON, HTML left unescaped.
func writeCompactJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table renders rows as an ASCII table.
func table(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRendition(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)}),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(toAny(header)...)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// humanBytes renders a byte count for people.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
