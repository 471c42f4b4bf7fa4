package cmd

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
)

type convertOptions struct {
	to     string
	output string
	force  bool
	verify bool
	quiet  bool
}

func newConvertCommand() *cobra.Command {
	o := &convertOptions{}
	c := &cobra.Command{
		Use:   "convert SRC --to FORMAT --output DST",
		Short: "Convert a snapshot to another format",
		Long: `Convert a snapshot from any format stateutil reads to any format it writes,
streaming one subtask at a time. SRC is never modified; DST appears only when the whole
snapshot is written (its metadata is committed last and atomically), and an existing DST
is refused unless --force is given.

Converting to the memory format fails before writing anything when a subtask holds more
state than the format's per-subtask cap. With --verify the result is read back and
compared with SRC entry by entry. A progress bar is shown on stderr when it is a
terminal, unless --quiet.

` + exitCodeHelp,
		Example: `  stateutil convert ./snapshot.dump --to filesystem --output ./snapshot-fs
  stateutil convert hdfs://nn:9000/checkpoints/job/chk-7 --to jobmanager --output ./chk-7.dump --verify`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(args[0]); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	f := c.Flags()
	f.StringVar(&o.to, "to", "", "format to write: "+strings.Join(snapshot.WritableFormatNames(), ", "))
	f.StringVar(&o.output, "output", "", "where to write the converted snapshot (path, file:// or hdfs:// URI)")
	f.BoolVar(&o.force, "force", false, "replace an existing snapshot at --output")
	f.BoolVar(&o.verify, "verify", false, "read the result back and compare it with SRC entry by entry")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	_ = c.RegisterFlagCompletionFunc("to", completeFormats)
	return c
}

func (o *convertOptions) validate(src string) error {
	if o.to == "" {
		return usageErrorf("--to is required (one of %s)", strings.Join(snapshot.WritableFormatNames(), ", "))
	}
	return checkDestination(src, o.output)
}

func (o *convertOptions) run(c *cobra.Command, src string) error {
	ctx := c.Context()
	to, err := snapshot.LookupFormat(o.to)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if to.Create == nil {
		return usageErrorf("format %q is read-only; writable formats: %s", to.Name, strings.Join(snapshot.WritableFormatNames(), ", "))
	}
	r, err := snapshot.Open(ctx, src, snapshot.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	opts := migrate.ConvertOptions{Force: o.force, Verify: o.verify, StateSizeCap: to.StateSizeCap}
	bar := newProgress(c.ErrOrStderr(), o.quiet, "converting")
	opts.Start, opts.Progress = bar.start, bar.add
	res, err := migrate.Convert(ctx, src, r, to, o.output, opts)
	bar.finish()
	if err != nil {
		return err
	}
	verified := ""
	if res.Verified {
		verified = ", verified"
	}
	fmt.Fprintf(c.OutOrStdout(), "converted %s (%s) to %s (%s): %d operators, %d subtasks, %d keyed entries, %d operator-state elements, %s%s\n",
		res.Source, res.From, res.Destination, res.To, res.Operators, res.Subtasks, res.Entries, res.Elements, humanBytes(res.Bytes), verified)
	return nil
}

// checkDestination refuses a missing DST, and a DST that is SRC or lies
// inside it (writing there would change SRC).
func checkDestination(src, dst string) error {
	if dst == "" {
		return usageErrorf("--output is required")
	}
	s, d := normalizeLocation(src), normalizeLocation(dst)
	if d == s {
		return usageErrorf("--output %q is the source itself; write somewhere else", dst)
	}
	if strings.HasPrefix(d, strings.TrimSuffix(s, "/")+"/") {
		return usageErrorf("--output %q lies inside the source %q; write somewhere else", dst, src)
	}
	return nil
}

// normalizeLocation renders a location as scheme://host/clean/absolute/path.
func normalizeLocation(loc string) string {
	if strings.Contains(loc, "://") {
		if u, err := url.Parse(loc); err == nil {
			if u.Scheme == "file" {
				loc = u.Path
			} else {
				return u.Scheme + "://" + u.Host + filepath.ToSlash(filepath.Clean("/"+u.Path))
			}
		}
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	if real, err := filepath.EvalSymlinks(loc); err == nil {
		loc = real
	}
	return "file://" + filepath.ToSlash(loc)
}

// progress is a byte progress bar on a terminal, else nothing.
type progress struct {
	w     io.Writer
	desc  string
	bar   *progressbar.ProgressBar
	quiet bool
}

// progressHook, when set (tests), is called on every progress step.
var progressHook func()

func newProgress(w io.Writer, quiet bool, desc string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, desc: desc, quiet: quiet || !ok || !term.IsTerminal(int(f.Fd()))}
}

func (p *progress) start(total int64) {
	if p.quiet {
		return
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(p.desc),
		progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
}

func (p *progress) add(n int64) {
	if progressHook != nil {
		progressHook()
	}
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
