package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/diff"
)

func Diff(w io.Writer, res *diff.Result, values bool) error {
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n", res.A, res.FormatA, res.B, res.FormatB)
	for _, ch := range res.Changes {
		fmt.Fprintf(w, "%s: %s -> %s\n", ch.Field, ch.A, ch.B)
	}
	for _, op := range res.OperatorsRemoved {
		fmt.Fprintf(w, "operator removed: %s\n", operatorLabel(op.ID, op.UID, op.Name))
	}
	for _, op := range res.OperatorsAdded {
		fmt.Fprintf(w, "operator added: %s\n", operatorLabel(op.ID, op.UID, op.Name))
	}
	for _, op := range res.Operators {
		if op.Equal {
			continue
		}
		fmt.Fprintf(w, "\nOperator %s:\n", operatorLabel(op.ID, op.UID, op.Name))
		for _, ch := range op.Changes {
			fmt.Fprintf(w, "  %s: %s -> %s\n", ch.Field, ch.A, ch.B)
		}
		for _, s := range op.StatesRemoved {
			fmt.Fprintf(w, "  %s state removed: %s\n", s.Scope, s.Name)
		}
		for _, s := range op.StatesAdded {
			fmt.Fprintf(w, "  %s state added: %s\n", s.Scope, s.Name)
		}
		for _, s := range op.StatesChanged {
			fmt.Fprintf(w, "  %s state %s: %s %s -> %s\n", s.Scope, s.Name, s.Field, s.A, s.B)
		}
		var rows [][]string
		for _, n := range op.Counts {
			rows = append(rows, []string{n.Name, n.Scope, strconv.FormatInt(n.A, 10), strconv.FormatInt(n.B, 10), strconv.FormatInt(n.B-n.A, 10)})
		}
		if len(rows) > 0 {
			if err := Table(w, []string{"STATE", "SCOPE", "A", "B", "B-A"}, rows); err != nil {
				return err
			}
		}
		if op.EntriesNotCompared != "" {
			fmt.Fprintf(w, "  entries not compared: %s\n", op.EntriesNotCompared)
		}
		if len(op.ElementsDiffer) > 0 {
			fmt.Fprintf(w, "  operator-state elements differ: %s\n", strings.Join(op.ElementsDiffer, ", "))
		}
		rows = nil
		header := []string{"STATE", "KEY GROUP", "KEY", "CHANGE"}
		if values {
			header = append(header, "OLD", "NEW")
		}
		for _, k := range op.Keys {
			row := []string{k.State, strconv.Itoa(k.KeyGroup), JSONText(k.Key), k.Change}
			if values {
				row = append(row, valueText(k.Old), valueText(k.New))
			}
			rows = append(rows, row)
		}
		if len(rows) > 0 {
			if err := Table(w, header, rows); err != nil {
				return err
			}
		}
		if op.KeysOmitted > 0 {
			fmt.Fprintf(w, "  ... and %d more keys (raise --max-keys)\n", op.KeysOmitted)
		}
	}
	if res.Equal {
		fmt.Fprintln(w, "equal")
	} else {
		fmt.Fprintln(w, "\ndifferent")
	}
	return nil
}

// valueText is a value for a table cell; "-" where there is none.
func valueText(v any) string {
	if v == nil {
		return "-"
	}
	return JSONText(v)
}
