package cmd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
	opts, err := o.source.openOptions()
	if err != nil {
		return err
	}
	r, err := e.reg.Open(ctx, location, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	w := c.OutOrStdout()
	for _, u := range snapshot.UnreadableParts(r.Snapshot()) {
		fmt.Fprintf(c.ErrOrStderr(), "stateutil: warning: %s; the figures leave it out\n", u)
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
			return writeJSON(w, rep)
		}
		return printKeyGroups(w, rep)
	case o.operatorState:
		rep, err := report.OperatorStateUsages(ctx, location, r, e.reg.Codecs, o.operator, o.values)
		if err != nil {
			return err
		}
		if o.output.json() {
			return writeJSON(w, rep)
		}
		return printOperatorStates(w, rep, o.values)
	}
	rep, err := report.Summarize(ctx, location, r, o.subtasks)
	if err != nil {
		return err
	}
	if o.output.json() {
		return writeJSON(w, rep)
	}
	if o.subtasks {
		return printSubtasks(w, rep)
	}
	return printSummary(w, rep)
}

func printHeader(w io.Writer, s *report.Summary) {
	fmt.Fprintf(w, "Snapshot:   %s\n", s.Location)
	fmt.Fprintf(w, "Format:     %s\n", s.Format)
	fmt.Fprintf(w, "Job:        %s\n", cmp.Or(s.JobID, "(not recorded)"))
	fmt.Fprintf(w, "Checkpoint: %d (%s)\n", s.CheckpointID, s.Kind)
	if !s.Created.IsZero() {
		fmt.Fprintf(w, "Created:    %s\n", s.Created.UTC().Format(time.RFC3339))
	}
	if ids := s.Properties[snapshot.PropJobCheckpoints]; ids != "" {
		fmt.Fprintf(w, "Job has:    %s (complete checkpoints; showing the latest)\n", ids)
	}
	var details []string
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if k != snapshot.PropJobCheckpoints {
			details = append(details, k+"="+s.Properties[k])
		}
	}
	if len(details) > 0 {
		fmt.Fprintf(w, "Details:    %s\n", strings.Join(details, ", "))
	}
	t := s.Totals
	fmt.Fprintf(w, "Totals:     %d operators, %d subtasks, %d keyed entries (%s), %d operator-state elements (%s)\n",
		t.Operators, t.Subtasks, t.KeyedEntries, humanBytes(t.KeyedBytes), t.OperatorElements, humanBytes(t.OperatorBytes))
	if t.InFlightChannels > 0 {
		fmt.Fprintf(w, "In flight:  %d channels, %s (records in the channels of an unaligned checkpoint)\n", t.InFlightChannels, humanBytes(t.InFlightBytes))
	}
	fmt.Fprintln(w)
}

func printSummary(w io.Writer, s *report.Summary) error {
	printHeader(w, s)
	var rows [][]string
	for _, op := range s.Operators {
		entries, bytes := strconv.FormatInt(op.KeyedEntries+op.OperatorElements, 10), humanBytes(op.KeyedBytes+op.OperatorBytes)
		if op.Unreadable {
			entries += " + unreadable"
			bytes += " + " + humanBytes(op.UnreadableBytes) + " unreadable"
		}
		rows = append(rows, []string{
			operatorLabel(op.ID, op.UID, op.Name), strconv.Itoa(op.Parallelism), strconv.Itoa(op.MaxParallelism),
			keyedStatesCell(op.KeyedStates), operatorStatesCell(op.OperatorStates), entries, bytes,
		})
	}
	if err := table(w, []string{"OPERATOR", "PARALLELISM", "MAX PARALLELISM", "KEYED STATES", "OPERATOR STATES", "ENTRIES", "BYTES"}, rows); err != nil {
		return err
	}
	return printInFlight(w, s.InFlight)
}

// printInFlight lists the in-flight data of an unaligned checkpoint, one
// row a subtask's channel.
func printInFlight(w io.Writer, rows []report.InFlightRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nIn flight: input channels (gate, channel) and result subpartitions (partition, subpartition):")
	var cells [][]string
	for _, f := range rows {
		cells = append(cells, []string{f.Operator, strconv.Itoa(f.Subtask), f.Direction, strconv.Itoa(f.Gate), strconv.Itoa(f.Channel),
			strconv.Itoa(f.Buffers), humanBytes(f.Bytes), cmp.Or(f.File, "(in _metadata)")})
	}
	return table(w, []string{"OPERATOR", "SUBTASK", "DIRECTION", "GATE/PARTITION", "CHANNEL/SUBPARTITION", "BUFFERS", "BYTES", "FILE"}, cells)
}

func printSubtasks(w io.Writer, s *report.Summary) error {
	printHeader(w, s)
	var rows [][]string
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			rows = append(rows, []string{
				operatorLabel(op.ID, op.UID, op.Name), strconv.Itoa(sub.Index), sub.KeyGroups.String(),
				strconv.FormatInt(sub.KeyedEntries, 10), humanBytes(sub.KeyedBytes),
				strconv.FormatInt(sub.OperatorElements, 10), humanBytes(sub.OperatorBytes),
			})
		}
	}
	return table(w, []string{"OPERATOR", "SUBTASK", "KEY GROUPS", "KEYED ENTRIES", "KEYED BYTES", "OPERATOR ELEMENTS", "OPERATOR BYTES"}, rows)
}

const barWidth = 40

func printKeyGroups(w io.Writer, rep *report.KeyGroups) error {
	if len(rep.Operators) == 0 {
		fmt.Fprintln(w, "No keyed operators.")
	}
	for i, op := range rep.Operators {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Operator %s: parallelism %d, max parallelism %d\n", operatorLabel(op.ID, op.UID, op.Name), op.Parallelism, op.MaxParallelism)
		var rows [][]string
		for _, g := range op.KeyGroups {
			rows = append(rows, []string{strconv.Itoa(g.KeyGroup), strconv.Itoa(g.Subtask), strconv.FormatInt(g.Entries, 10), humanBytes(g.Bytes)})
		}
		if err := table(w, []string{"KEY GROUP", "SUBTASK", "ENTRIES", "BYTES"}, rows); err != nil {
			return err
		}
		fmt.Fprintf(w, "Skew (max/mean bytes): %.2f over key groups, %.2f over subtasks\n", op.KeyGroupSkew, op.SubtaskSkew)
		var most int64
		for _, s := range op.Subtasks {
			most = max(most, s.Bytes)
		}
		for _, s := range op.Subtasks {
			n := 0
			if most > 0 {
				n = int(s.Bytes * barWidth / most)
			}
			fmt.Fprintf(w, "  subtask %-3d |%-*s| %s\n", s.Index, barWidth, strings.Repeat("#", n), humanBytes(s.Bytes))
		}
	}
	return nil
}

func printOperatorStates(w io.Writer, rep *report.OperatorStates, values bool) error {
	if len(rep.Operators) == 0 {
		fmt.Fprintln(w, "No operator state.")
	}
	for i, op := range rep.Operators {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Operator %s: parallelism %d\n", operatorLabel(op.ID, op.UID, op.Name), op.Parallelism)
		var rows [][]string
		for _, st := range op.States {
			per := make([]string, len(st.ElementsPerSubtask))
			for j, n := range st.ElementsPerSubtask {
				per[j] = strconv.FormatInt(n, 10)
			}
			rows = append(rows, []string{st.Name, string(st.Mode), st.ElementType.String(), strings.Join(per, " ")})
		}
		if err := table(w, []string{"STATE", "MODE", "TYPE", "ELEMENTS PER SUBTASK"}, rows); err != nil {
			return err
		}
		if !values {
			continue
		}
		rows = nil
		for _, st := range op.States {
			for _, v := range st.Values {
				b, err := json.Marshal(v.Value)
				if err != nil {
					return err
				}
				rows = append(rows, []string{st.Name, strconv.Itoa(v.Subtask), string(b)})
			}
		}
		if err := table(w, []string{"STATE", "SUBTASK", "VALUE"}, rows); err != nil {
			return err
		}
	}
	return nil
}

// operatorLabel names an operator for people: uid and name, else whichever
// exists, else the id (Flink snapshots before 1.15 record neither).
func operatorLabel(id, uid, name string) string {
	switch {
	case uid != "" && name != "" && name != uid:
		return uid + " (" + name + ")"
	case uid != "":
		return uid
	case name != "":
		return name
	}
	return id
}

func keyedStatesCell(states []snapshot.KeyedState) string {
	if len(states) == 0 {
		return "-"
	}
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = s.Name + ": " + string(s.Kind)
		if s.TTL != nil {
			parts[i] += " (" + s.TTL.String() + ")"
		}
	}
	return strings.Join(parts, "\n")
}

func operatorStatesCell(states []snapshot.OperatorState) string {
	if len(states) == 0 {
		return "-"
	}
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = s.Name + ": " + string(s.Mode)
	}
	return strings.Join(parts, "\n")
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
