// Package cmd is stateutil's command line: one file per subcommand, each
// turning flags into options, calling a domain package and printing.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/cmd/internal/buildinfo"
	"github.com/stateutil/stateutil/internal/kerberos"
	"github.com/stateutil/stateutil/internal/recovered"
	"github.com/stateutil/stateutil/internal/schemaflags"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
	"github.com/stateutil/stateutil/statesql"
	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/azure"
	"github.com/stateutil/stateutil/storage/gcs"
	"github.com/stateutil/stateutil/storage/s3"
	"github.com/stateutil/stateutil/surgery"
)

// Exit codes, documented in the root help and docs/exit-codes.md.
const (
	ExitOK          = 0 // success (diff: the snapshots are equal)
	ExitUsage       = 1 // bad flags or arguments, a destination that exists, is no snapshot or is in use (diff: the snapshots differ)
	ExitCorrupt     = 2 // corrupt or unreadable snapshot, failed write, verify findings
	ExitNotFound    = 3 // snapshot, file, operator, state or key not found
	ExitUnsupported = 4 // unsupported format or format version, state that cannot be read
	ExitTooLarge    = 5 // state exceeds a cap (the memory format's per-subtask limit)
	ExitNotDecoded  = 6 // values whose serializer stateutil does not implement (verify --strict)
	ExitWarnings    = 7 // verify --strict: warnings, what could not be checked (a lost checksum manifest)
	ExitBlocked     = 8 // upgrade: state the new Flink would not restore and stateutil cannot rewrite
	// Kerberos (a kerberized HDFS or YARN) refused who stateutil is, one code per cause.
	ExitNoTicket       = 10 // no Kerberos ticket: no credential cache, or none for the realm
	ExitTicketExpired  = 11 // the Kerberos ticket has expired
	ExitPrincipal      = 12 // a principal the KDC does not know, or not the service's
	ExitKDCUnreachable = 13 // no KDC of the realm answered
	ExitNoKey          = 14 // the keytab holds no key for the principal (or none the KDC accepts)
	ExitClockSkew      = 15 // clock skew with the KDC or the service too large
	// A delegation token (HADOOP_TOKEN_FILE_LOCATION) in place of a Kerberos login.
	ExitNoToken      = 16  // the credentials file holds no HDFS delegation token for the namenode
	ExitTokenRefused = 17  // the namenode refused the token: expired, cancelled or not its own
	ExitInternal     = 70  // a bug in stateutil: it panicked (please report it)
	ExitInterrupted  = 130 // interrupted by SIGINT or SIGTERM; nothing was left behind
)

const exitCodeHelp = `Exit codes:
  0    success (diff: snapshots are equal)
  1    usage error: bad flags or arguments; the destination holds a snapshot
       (and no --force), holds what is not a snapshot, or another writer holds
       it (diff: snapshots differ)
  2    corrupt or unreadable snapshot, failed write; verify found problems
  3    not found: snapshot, file, operator, state or key
  4    unsupported format or version; state stateutil cannot read or write
  5    state too large for the target format
  6    values not decoded: their serializer is one stateutil does not
       implement (verify --strict)
  7    warnings: what verify could not check, such as a savepoint stateutil
       wrote whose checksum manifest is gone (verify --strict)
  8    upgrade blocked: state that the Flink asked for would not restore and
       stateutil cannot rewrite (upgrade, upgrade --check)
  10   Kerberos: no ticket (no credential cache, or none for the realm)
  11   Kerberos: the ticket has expired
  12   Kerberos: wrong principal (unknown to the KDC, or not the service's)
  13   Kerberos: no KDC answered
  14   Kerberos: the keytab holds no key for the principal
  15   Kerberos: clock skew too large
  16   delegation token: none for the namenode in $HADOOP_TOKEN_FILE_LOCATION
  17   delegation token: refused by the namenode (expired, cancelled, not its own)
  70   internal error (a bug in stateutil)
  130  interrupted (SIGINT, SIGTERM): writes were aborted and temporary
       files removed`

// errUsage marks errors in what the user asked for.
var errUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// errInterrupted is the cause of the root context's cancellation by a signal.
var errInterrupted = errors.New("interrupted")

// exitCode maps an error onto the documented exit codes.
func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.Is(err, kerberos.ErrNoTicket):
		return ExitNoTicket
	case errors.Is(err, kerberos.ErrTicketExpired):
		return ExitTicketExpired
	case errors.Is(err, kerberos.ErrPrincipal):
		return ExitPrincipal
	case errors.Is(err, kerberos.ErrKDCUnreachable):
		return ExitKDCUnreachable
	case errors.Is(err, kerberos.ErrNoKey):
		return ExitNoKey
	case errors.Is(err, kerberos.ErrClockSkew):
		return ExitClockSkew
	case errors.Is(err, storage.ErrNoDelegationToken):
		return ExitNoToken
	case errors.Is(err, storage.ErrDelegationTokenRefused):
		return ExitTokenRefused
	case errors.Is(err, errUsage), errors.Is(err, kerberos.ErrLogin), errors.Is(err, keygroup.ErrInvalidParallelism), errors.Is(err, keygroup.ErrUnknownKeyType),
		errors.Is(err, storage.ErrExist), errors.Is(err, storage.ErrInUse), errors.Is(err, migrate.ErrBadDestination),
		errors.Is(err, migrate.ErrConflict), errors.Is(err, surgery.ErrBadEdit), errors.Is(err, surgery.ErrConflict),
		errors.Is(err, redistribute.ErrNotRedistributable), errors.As(err, new(*snapshot.ExpiryError)),
		errors.As(err, new(*lookup.QueryError)), errors.As(err, new(*statesql.QueryError)), errors.As(err, new(*schemaflags.Error)),
		errors.As(err, new(*snapshot.KeySerializersError)):
		return ExitUsage
	case errors.Is(err, snapshot.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, snapshot.ErrUnsupportedVersion), errors.Is(err, snapshot.ErrUnknownFormat), errors.Is(err, snapshot.ErrReadOnly):
		return ExitUnsupported
	case errors.Is(err, snapshot.ErrTooLarge):
		return ExitTooLarge
	case errors.Is(err, snapshot.ErrNotDecoded):
		return ExitNotDecoded
	case errors.Is(err, verify.ErrWarnings):
		return ExitWarnings
	case errors.Is(err, snapshot.ErrUpgradeBlocked):
		return ExitBlocked
	}
	return ExitCorrupt
}

// message is the one line printed for an error; usage errors lose their
// sentinel prefix.
func message(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, errUsage.Error()+": "); ok {
		return rest
	}
	return msg
}

// codedError carries an exit code chosen by a command (diff's "differ").
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// env is what every command works with: the registry of formats, codecs
// and storages, and the one place that decides whether a stream is a
// terminal.
type env struct {
	reg      *snapshot.Registry
	terminal func(w io.Writer) bool
	stores
}

// stores are what the root's storage flags fill in; reg's storages read
// them when they resolve a location. A nil one is left to the
// environment.
type stores struct {
	s3    *s3.Options
	gcs   *gcs.Options
	azure *azure.Options
	// hdfs is what the Kerberos flags fill in.
	hdfs *storage.HDFSOptions
}

// isTerminal reports whether w is an interactive terminal (not /dev/null,
// not a pipe, not a file).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newRegistry is everything this build of stateutil knows, in the order
// formats are probed: the formats with magic bytes of their own first.
// Remote locations are resolved with o's options as they are then.
func newRegistry(o stores) *snapshot.Registry {
	st := storage.NewRegistry()
	st.Register("hdfs", storage.HDFSOpener(o.hdfs))
	s3.Register(st, o.s3)
	gcs.Register(st, o.gcs)
	azure.Register(st, o.azure)
	reg := snapshot.NewRegistry(st)
	memory.Register(reg)
	filesystem.Register(reg)
	rocksdb.Register(reg)
	flink.Register(reg)
	return reg
}

// NewRootCommand builds the whole command tree writing to out and errOut.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	o := stores{s3: &s3.Options{}, gcs: &gcs.Options{}, azure: &azure.Options{}, hdfs: &storage.HDFSOptions{}}
	return newRoot(&env{reg: newRegistry(o), terminal: isTerminal, stores: o}, out, errOut)
}

func newRoot(e *env, out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stateutil",
		Short: "Inspect, convert, rescale and verify stream-processing state snapshots",
		Long: `stateutil works with the checkpoints and savepoints of stateful stream processing in
Apache Flink's model: keyed state split into key groups, and operator list state in
split, union or broadcast mode. It reads its own memory, filesystem and RocksDB formats
and real Apache Flink checkpoints and savepoints, on local disk, HDFS, S3, Google
Cloud Storage or Azure.

Locations are plain paths, file:// URIs, hdfs://namenode:port/path URIs,
s3://bucket/path URIs (s3a:// and s3p:// too, as Flink writes them),
gs://bucket/path URIs, and abfss://container@account.dfs.core.windows.net/path
or wasbs://container@account.blob.core.windows.net/path URIs (abfs:// and
wasb:// too).

` + exitCodeHelp,
		Version:       buildinfo.Line(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	if e.s3 != nil {
		root.PersistentFlags().StringVar(&e.s3.Endpoint, "s3-endpoint", "",
			"S3 endpoint URL for MinIO, Ceph, SeaweedFS... (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, AWS)")
		root.PersistentFlags().BoolVar(&e.s3.PathStyle, "s3-path-style", false,
			"address S3 buckets as endpoint/bucket/key (also STATEUTIL_S3_PATH_STYLE=true; implied for an IP or localhost endpoint)")
	}
	if e.gcs != nil {
		root.PersistentFlags().StringVar(&e.gcs.Endpoint, "gcs-endpoint", "",
			"Google Cloud Storage JSON API endpoint URL (default: $STORAGE_EMULATOR_HOST's, or Google's)")
	}
	if e.azure != nil {
		root.PersistentFlags().StringVar(&e.azure.Endpoint, "azure-endpoint", "",
			"Azure Blob service URL of the account (default: $STATEUTIL_AZURE_ENDPOINT, the BlobEndpoint of $AZURE_STORAGE_CONNECTION_STRING, or https://ACCOUNT.blob.core.windows.net)")
	}
	if e.hdfs != nil {
		root.PersistentFlags().StringVar(&e.hdfs.Kerberos.Keytab, "keytab", "",
			"log in to a kerberized HDFS with this keytab, as --principal (default: $STATEUTIL_KEYTAB; without one, the ticket of $KRB5CCNAME)")
		root.PersistentFlags().StringVar(&e.hdfs.Kerberos.Principal, "principal", "",
			"the Kerberos principal of --keytab, user@REALM (default: $STATEUTIL_PRINCIPAL)")
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		c.PrintErrln(c.UsageString())
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	root.AddGroup(
		&cobra.Group{ID: groupLook, Title: "Look at snapshots (read only):"},
		&cobra.Group{ID: groupChange, Title: "Change snapshots (each writes a new one):"},
		&cobra.Group{ID: groupScaleOut, Title: "Scale out (a planned copy in shards):"},
		&cobra.Group{ID: groupOther, Title: "Other commands:"},
	)
	// The commands that read values take the user's schemas of classes the
	// snapshots only name (--kryo-classes, --proto-descriptors) and the
	// snapshot that gives the key serializers one does not record
	// (--key-serializers-from); so do those that write a snapshot from a
	// source, which must tell its values and keys apart to copy them. Such a
	// copy planned for shards takes the key serializers' snapshot but no
	// files: its shards run elsewhere.
	schemas := func(c *cobra.Command) *cobra.Command { return schemaflags.Add(&e.reg, c) }
	var copies func(c *cobra.Command) *cobra.Command
	copies = func(c *cobra.Command) *cobra.Command {
		for _, sub := range c.Commands() {
			copies(sub)
		}
		if c.HasSubCommands() {
			return c
		}
		return schemaflags.Add(&e.reg, c, "plan-only", "yarn")
	}
	addGroup(root, groupLook, schemas(newInspectCommand(e)), newLsCommand(e), schemas(newGetCommand(e)), schemas(newDumpCommand(e)),
		schemas(newSQLCommand(e)), schemas(newDiffCommand(e)), schemas(newVerifyCommand(e)), newKeygroupCommand(), schemas(newServeCommand(e)))
	addGroup(root, groupChange, copies(newConvertCommand(e)), copies(newRescaleCommand(e)), schemaflags.AddWritten(&e.reg, newUpgradeCommand(e)),
		copies(newOperatorCommand(e)), copies(newStateCommand(e)), copies(newKeysCommand(e)), copies(newPutCommand(e)), copies(newLoadCommand(e)))
	addGroup(root, groupScaleOut, newShardCommand(e), newCommitCommand(e), newAbortCommand(e))
	addGroup(root, groupOther, newGenerateCommand(e), newRunCommand(e), newVersionCommand(e), newFetchTokenCommand(e))
	root.SetHelpCommandGroupID(groupOther)
	root.SetCompletionCommandGroupID(groupOther)
	documentCompletion(root)
	root.Args = cobra.NoArgs
	root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	markArgErrorsAsUsage(root)
	return root
}

// The groups the root's help lists its commands in.
const (
	groupLook     = "look"
	groupChange   = "change"
	groupScaleOut = "scale-out"
	groupOther    = "other"
)

// addGroup adds cmds to root in group.
func addGroup(root *cobra.Command, group string, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.GroupID = group
		root.AddCommand(c)
	}
}

// completionExamples load each shell's completion, as cobra's help for it
// says.
var completionExamples = map[string]string{
	"bash":       "  source <(stateutil completion bash)\n  stateutil completion bash > /etc/bash_completion.d/stateutil",
	"zsh":        "  stateutil completion zsh > \"${fpath[1]}/_stateutil\"",
	"fish":       "  stateutil completion fish | source",
	"powershell": "  stateutil completion powershell | Out-String | Invoke-Expression",
}

// documentCompletion makes cobra's completion command now rather than
// when the tree runs, and gives it and its shells examples and the exit
// codes, as every other command's help has.
func documentCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = completionExamples["bash"] + "\n" + completionExamples["zsh"]
		c.Long += "\n" + exitCodeHelp
		for _, shell := range c.Commands() {
			shell.Example = completionExamples[shell.Name()]
			shell.Long += "\n" + exitCodeHelp
		}
	}
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
// printing any error as one line on errOut. A panic is an internal error
// (ExitInternal), never mistaken for a finding.
func Run(ctx context.Context, args []string, out, errOut io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(errOut, "stateutil: internal error: %v\n%s", p, debug.Stack())
			code = ExitInternal
		}
	}()
	stdout := &writeRecorder{w: out}
	root := NewRootCommand(stdout, errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var coded *codedError
	if stdout.err != nil && !errors.Is(stdout.err, syscall.EPIPE) && (err == nil || errors.As(err, &coded)) {
		// Output the command printed without looking at the error (tables,
		// summaries, help) failed, or did where the result is only the
		// exit code (diff's "differ"). A reader that stopped is no failure,
		// and leaves such a result as it is.
		err = fmt.Errorf("writing output: %w", stdout.err)
	}
	if err == nil || errors.Is(err, syscall.EPIPE) {
		// A reader that stopped reading (dump | head) is no failure.
		return ExitOK
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	if errors.As(err, &coded) {
		if coded.err != nil && coded.code != ExitOK {
			fmt.Fprintln(errOut, "stateutil:", message(coded.err))
		}
		return coded.code
	}
	var panicked *recovered.Error
	if errors.As(err, &panicked) {
		fmt.Fprintf(errOut, "stateutil: internal error: %v\n%s", panicked.Value, panicked.Stack)
		return ExitInternal
	}
	fmt.Fprintln(errOut, "stateutil:", message(err))
	return exitCode(err)
}

// writeRecorder is a command's stdout: it keeps the first write error, so
// that a command fails when its output does even where it did not check.
type writeRecorder struct {
	w   io.Writer
	err error
}

func (r *writeRecorder) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// Main runs stateutil with the process's arguments. SIGINT or SIGTERM
// cancel the root context: every writer aborts, every temporary file
// goes, and the exit code is ExitInterrupted. A second signal stops the
// process at once.
func Main() int { return runMain(os.Args[1:]) }

func runMain(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	// Writes to a closed pipe fail with EPIPE, which Run takes as the
	// reader having stopped, instead of the signal killing the process.
	signal.Ignore(syscall.SIGPIPE)
	go func() {
		sig, ok := <-signals
		if !ok {
			return
		}
		cancel(fmt.Errorf("%w by %v", errInterrupted, sig))
		if _, ok := <-signals; ok {
			os.Exit(ExitInterrupted)
		}
	}()
	code := Run(ctx, args, os.Stdout, os.Stderr)
	if context.Cause(ctx) != nil && code != ExitOK {
		return ExitInterrupted
	}
	return code
}
