package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/serve"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
	"github.com/stateutil/stateutil/storage"
)

type inspectOptions struct {
	source        sourceFlags
	output        outputFlag
	subtasks      bool
	keyGroups     bool
	operatorState bool
	values        bool
	operator      string
	html          string
}

func newInspectCommand(e *env) *cobra.Command {
	o := &inspectOptions{}
	c := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Show a snapshot's operators, parallelism, key groups, states, sizes and skew",
		Long: `Inspect a checkpoint or savepoint in any format stateutil reads.

By default it prints the snapshot's format, job, checkpoint id and kind, its totals, and one
row per operator: uid/name, parallelism, max parallelism, keyed states with their kinds and
TTL, operator states with their modes, and the entries and bytes they hold.

--html FILE writes the overview, the key-group heat maps and the operator state with its
values as one self-contained HTML page (stateutil serve's pages, for a CI artifact): it
loads nothing from anywhere. FILE must not exist; it appears only when complete.

Figures come from the snapshot's metadata where the format records them; otherwise the
state is scanned, one key group at a time.

` + exitCodeHelp,
		Example: `  stateutil inspect ./snapshot.dump
  stateutil inspect ./snapshot.dump -o json
  stateutil inspect ./snapshot.dump --subtasks
  stateutil inspect ./snapshot.dump --key-groups --operator word-counter
  stateutil inspect ./snapshot.dump --operator-state --values --operator kafka-source
  stateutil inspect ./savepoint --html report.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.output.add(c)
	o.output.addLegacyOutput(c)
	o.source.add(c)
	f := c.Flags()
	f.BoolVar(&o.subtasks, "subtasks", false, "per subtask: key-group range, entries, bytes")
	f.BoolVar(&o.keyGroups, "key-groups", false, "per key group: entries and bytes, with skew and a chart of bytes per subtask")
	f.BoolVar(&o.operatorState, "operator-state", false, "per operator state: mode and elements per subtask")
	f.BoolVar(&o.values, "values", false, "with --operator-state: print the elements, decoded by type")
	f.StringVar(&o.html, "html", "", "write the overview, heat maps and operator state as one self-contained HTML file")
	f.StringVar(&o.operator, "operator", "", "restrict --key-groups or --operator-state to one operator (uid, name or id)")
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	return c
}

func (o *inspectOptions) validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	views := 0
	for _, v := range []bool{o.subtasks, o.keyGroups, o.operatorState} {
		if v {
			views++
		}
	}
	if views > 1 {
		return usageErrorf("choose one of --subtasks, --key-groups and --operator-state")
	}
	if o.values && !o.operatorState {
		return usageErrorf("--values goes with --operator-state")
	}
	if o.html != "" && (views > 0 || o.values || o.operator != "" || o.output.json()) {
		return usageErrorf("--html writes every view: it goes with none of --subtasks, --key-groups, --operator-state, --values, --operator, -o json")
	}
	if o.operator != "" && !o.keyGroups && !o.operatorState {
		return usageErrorf("--operator goes with --key-groups or --operator-state")
	}
	_, err := o.source.openOptions()
	return err
}

func (o *inspectOptions) run(c *cobra.Command, e *env, location string) error {
	ctx := c.Context()
	r, err := o.source.open(ctx, e, location)
	if err != nil {
		return err
	}
	defer r.Close()
	w := c.OutOrStdout()
	for _, u := range snapshot.UnreadableParts(r.Snapshot()) {
		fmt.Fprintf(c.ErrOrStderr(), "stateutil: warning: %s; the figures leave it out\n", u)
	}
	if ops := keysNotRecorded(r); len(ops) > 0 {
		fmt.Fprintf(c.ErrOrStderr(), "stateutil: hint: %s\n", render.KeysNotRecordedHint(ops))
	}
	switch {
	case o.html != "":
		return writeHTMLReport(ctx, e, location, r, o.html)
	case o.keyGroups:
		rep, err := report.KeyGroupDistribution(ctx, location, r, o.operator)
		if err != nil {
			return err
		}
		if o.output.json() {
			return render.JSON(w, rep)
		}
		return render.InspectKeyGroups(w, rep)
	case o.operatorState:
		rep, err := report.OperatorStateUsages(ctx, location, r, e.reg.Codecs, o.operator, o.values)
		if err != nil {
			return err
		}
		if o.output.json() {
			return render.JSON(w, rep)
		}
		return render.InspectOperatorStates(w, rep, o.values)
	}
	rep, err := report.Summarize(ctx, location, r, o.subtasks)
	if err != nil {
		return err
	}
	if o.output.json() {
		return render.JSON(w, rep)
	}
	if o.subtasks {
		return render.InspectSubtasks(w, rep)
	}
	return render.InspectSummary(w, rep)
}

// keysNotRecorded names the operators whose keys r does not decode for
// want of a key serializer the snapshot records (snapshot.UnrecordedKeys).
func keysNotRecorded(r snapshot.Reader) []string {
	u, ok := r.(snapshot.UnrecordedKeys)
	if !ok {
		return nil
	}
	var out []string
	for _, id := range u.KeysNotRecorded() {
		label := id
		for _, op := range r.Snapshot().Operators {
			if op.ID == id {
				label = op.Label()
				break
			}
		}
		out = append(out, label)
	}
	return out
}

// writeHTMLReport computes the views an HTML report shows and writes it.
func writeHTMLReport(ctx context.Context, e *env, location string, r snapshot.Reader, file string) error {
	var rep serve.Report
	var err error
	if rep.Summary, err = report.Summarize(ctx, location, r, false); err != nil {
		return err
	}
	if rep.KeyGroups, err = report.KeyGroupDistribution(ctx, location, r, ""); err != nil {
		return err
	}
	if rep.OperatorStates, err = report.OperatorStateUsages(ctx, location, r, e.reg.Codecs, "", true); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := serve.WriteReport(&page, rep); err != nil {
		return err
	}
	return writeNewFile(file, page.Bytes())
}

// writeNewFile writes a local file that must not exist, atomically: a
// temporary file beside it, linked into place only when complete.
func writeNewFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Link(tmp.Name(), name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", storage.ErrExist, name)
		}
		return err
	}
	return nil
}
