package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/buildinfo"
	"github.com/stateutil/stateutil/cmd/internal/render"
)

type versionOptions struct{ output outputFlag }

func newVersionCommand(e *env) *cobra.Command {
	o := &versionOptions{}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the libraries it was built with and the formats it reads and writes",
		Long: `Print stateutil's version (the module version, or the source revision of a
development build), the Go version and the RocksDB library it was built with, the
snapshot formats it reads and writes, the Apache Flink _metadata versions it reads and
writes, and the storage schemes it knows. -o json is for scripts that depend on them.

` + exitCodeHelp,
		Example: `  stateutil version
  stateutil version -o json
  stateutil --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			v := buildinfo.Of(e.reg)
			if o.output.json() {
				return render.JSON(c.OutOrStdout(), v)
			}
			buildinfo.Print(c.OutOrStdout(), v)
			return nil
		},
	}
	o.output.add(c)
	return c
}
