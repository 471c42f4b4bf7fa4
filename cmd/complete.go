package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/snapshot"
)

// completeFiles completes the first argument with file names.
func completeFiles(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

// completeOperators completes --operator with the uids of the snapshot
// named by the first argument.
func (e *env) completeOperators(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	r, err := e.reg.Open(c.Context(), args[0], snapshot.OpenOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer r.Close()
	var labels []string
	for _, op := range r.Snapshot().Operators {
		labels = append(labels, op.Label()+"\t"+op.Name)
	}
	return labels, cobra.ShellCompDirectiveNoFileComp
}

// completeFormats completes a format flag with the writable format names.
func (e *env) completeFormats(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return e.reg.WritableNames(), cobra.ShellCompDirectiveNoFileComp
}
