package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
)

func inspectHeader(w io.Writer, s *report.Summary) {
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
		t.Operators, t.Subtasks, t.KeyedEntries, Bytes(t.KeyedBytes), t.OperatorElements, Bytes(t.OperatorBytes))
	if t.InFlightChannels > 0 {
		fmt.Fprintf(w, "In flight:  %d channels, %s (records in the channels, as an unaligned checkpoint took them)\n", t.InFlightChannels, Bytes(t.InFlightBytes))
	}
	fmt.Fprintln(w)
}

func InspectSummary(w io.Writer, s *report.Summary) error {
	inspectHeader(w, s)
	var rows [][]string
	for _, op := range s.Operators {
		entries, bytes := strconv.FormatInt(op.KeyedEntries+op.OperatorElements, 10), Bytes(op.KeyedBytes+op.OperatorBytes)
		if op.Unreadable {
			entries += " + unreadable"
			bytes += " + " + Bytes(op.UnreadableBytes) + " unreadable"
		}
		rows = append(rows, []string{
			operatorLabel(op.ID, op.UID, op.Name), strconv.Itoa(op.Parallelism), strconv.Itoa(op.MaxParallelism),
			keyedStatesCell(op.KeyedStates), operatorStatesCell(op.OperatorStates), entries, bytes,
		})
	}
	if err := Table(w, []string{"OPERATOR", "PARALLELISM", "MAX PARALLELISM", "KEYED STATES", "OPERATOR STATES", "ENTRIES", "BYTES"}, rows); err != nil {
		return err
	}
	return inFlight(w, s.InFlight)
}

// inFlight lists the in-flight data of an unaligned checkpoint, one row a
// subtask's channel.
func inFlight(w io.Writer, rows []report.InFlightRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nIn flight: input channels (gate, channel) and result subpartitions (partition, subpartition):")
	var cells [][]string
	for _, f := range rows {
		cells = append(cells, []string{f.Operator, strconv.Itoa(f.Subtask), f.Direction, strconv.Itoa(f.Gate), strconv.Itoa(f.Channel),
			strconv.Itoa(f.Buffers), Bytes(f.Bytes), cmp.Or(f.File, "(in _metadata)")})
	}
	return Table(w, []string{"OPERATOR", "SUBTASK", "DIRECTION", "GATE/PARTITION", "CHANNEL/SUBPARTITION", "BUFFERS", "BYTES", "FILE"}, cells)
}

func InspectSubtasks(w io.Writer, s *report.Summary) error {
	inspectHeader(w, s)
	var rows [][]string
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			rows = append(rows, []string{
				operatorLabel(op.ID, op.UID, op.Name), strconv.Itoa(sub.Index), sub.KeyGroups.String(),
				strconv.FormatInt(sub.KeyedEntries, 10), Bytes(sub.KeyedBytes),
				strconv.FormatInt(sub.OperatorElements, 10), Bytes(sub.OperatorBytes),
			})
		}
	}
	return Table(w, []string{"OPERATOR", "SUBTASK", "KEY GROUPS", "KEYED ENTRIES", "KEYED BYTES", "OPERATOR ELEMENTS", "OPERATOR BYTES"}, rows)
}

const barWidth = 40

func InspectKeyGroups(w io.Writer, rep *report.KeyGroups) error {
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
			rows = append(rows, []string{strconv.Itoa(g.KeyGroup), strconv.Itoa(g.Subtask), strconv.FormatInt(g.Entries, 10), Bytes(g.Bytes)})
		}
		if err := Table(w, []string{"KEY GROUP", "SUBTASK", "ENTRIES", "BYTES"}, rows); err != nil {
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
			fmt.Fprintf(w, "  subtask %-3d |%-*s| %s\n", s.Index, barWidth, strings.Repeat("#", n), Bytes(s.Bytes))
		}
	}
	return nil
}

func InspectOperatorStates(w io.Writer, rep *report.OperatorStates, values bool) error {
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
		if err := Table(w, []string{"STATE", "MODE", "TYPE", "ELEMENTS PER SUBTASK"}, rows); err != nil {
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
		if err := Table(w, []string{"STATE", "SUBTASK", "VALUE"}, rows); err != nil {
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
