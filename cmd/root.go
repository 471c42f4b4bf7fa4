// Package cmd is stateutil's command line: one file per subcommand, each
// turning flags into options, calling a domain package and printing.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"

	// Formats register themselves with the snapshot registry.
	_ "github.com/stateutil/stateutil/backends/filesystem"
	_ "github.com/stateutil/stateutil/backends/flink"
	_ "github.com/stateutil/stateutil/backends/memory"
	_ "github.com/stateutil/stateutil/backends/rocksdb"
)

// Exit codes, documented in the root help and the README.
const (
	ExitOK          = 0 // success (diff: the snapshots are equal)
	ExitUsage       = 1 // bad flags or arguments (diff: the snapshots differ)
	ExitCorrupt     = 2 // corrupt or unreadable snapshot, failed write, verify findings
	ExitNotFound    = 3 // snapshot, file, operator or state not found
	ExitUnsupported = 4 // unsupported format or format version
	ExitTooLarge    = 5 // state exceeds a cap (the memory format's per-subtask limit)
)

const exitCodeHelp = `Exit codes:
  0  success (diff: snapshots are equal)
  1  usage error: bad flags or arguments (diff: snapshots differ)
  2  corrupt or unreadable snapshot, failed write; verify found problems
  3  not found: snapshot, file, operator or state
  4  unsupported format or format version
  5  state too large for the target format`

// errUsage marks errors in what the user asked for.
var errUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// exitCode maps an error onto the documented exit codes.
func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUsage), errors.Is(err, keygroup.ErrInvalidParallelism), errors.Is(err, keygroup.ErrUnknownKeyType), errors.Is(err, storage.ErrExist):
		return ExitUsage
	case errors.Is(err, snapshot.ErrNotFound), errors.Is(err, storage.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, snapshot.ErrUnsupportedVersion), errors.Is(err, snapshot.ErrUnknownFormat):
		return ExitUnsupported
	case errors.Is(err, snapshot.ErrTooLarge):
		return ExitTooLarge
	}
	return ExitCorrupt
}

// message is the one line printed for an error; usage errors lose their
// sentinel prefix.
func message(err error) string {
	msg := err.Error()
	if errors.Is(err, errUsage) {
		if rest, ok := cutPrefix(msg, errUsage.Error()+": "); ok {
			return rest
		}
	}
	return msg
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return s, false
}

// codedError carries an exit code chosen by a command (diff's "differ").
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// NewRootCommand builds the whole command tree writing to out and errOut.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stateutil",
		Short: "Inspect, convert, rescale and verify stream-processing state snapshots",
		Long: `stateutil works with the checkpoints and savepoints of stateful stream processing in
Apache Flink's model: keyed state split into key groups, and operator list state in
split, union or broadcast mode. It reads its own memory, filesystem and RocksDB formats
and real Apache Flink checkpoints and savepoints, on local disk or HDFS.

Locations are plain paths, file:// URIs or hdfs://namenode:port/path URIs.

` + exitCodeHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		c.PrintErrln(c.UsageString())
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	root.AddCommand(
		newInspectCommand(),
		newKeygroupCommand(),
		newGenerateCommand(),
		newConvertCommand(),
		newRescaleCommand(),
		newVerifyCommand(),
		newDiffCommand(),
		newOperatorCommand(),
		newRunCommand(),
	)
	root.Args = cobra.NoArgs
	root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	markArgErrorsAsUsage(root)
	return root
}

// markArgErrorsAsUsage makes every command's argument check fail with a
// usage error (exit 1), as flag errors do.
func markArgErrorsAsUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markArgErrorsAsUsage(sub)
	}
}

// Run executes the command tree with args and returns the exit code,
// printing any error as one line on errOut.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := NewRootCommand(out, errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var coded *codedError
	if errors.As(err, &coded) {
		if coded.err != nil && coded.code != ExitOK {
			fmt.Fprintln(errOut, "stateutil:", message(coded.err))
		}
		return coded.code
	}
	fmt.Fprintln(errOut, "stateutil:", message(err))
	return exitCode(err)
}

// Main runs stateutil with the process's arguments.
func Main() int {
	return Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
}
