package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/stateutil/stateutil/snapshot/verify"
)

func Verify(w io.Writer, res *verify.Result) error {
	fmt.Fprintf(w, "Snapshot: %s (%s)\n", res.Location, res.Format)
	k := res.Checked
	fmt.Fprintf(w, "Checked:  %d operators, %d subtasks, %d keyed entries, %d operator-state elements\n", k.Operators, k.Subtasks, k.Entries, k.Elements)
	switch {
	case res.OK && len(res.Warnings) == 0:
		fmt.Fprintln(w, "OK: no problems found")
	case res.OK:
		fmt.Fprintln(w, "No problems found, but not everything could be checked")
	default:
		fmt.Fprintf(w, "%d problems:\n", len(res.Findings))
		for _, f := range res.Findings {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintf(w, "%d warnings:\n", len(res.Warnings))
		for _, f := range res.Warnings {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(res.NotDecoded) > 0 {
		if err := notDecoded(w, res); err != nil {
			return err
		}
	}
	if len(res.KeysNotRecorded) > 0 {
		fmt.Fprintln(w, "Hint: "+KeysNotRecordedHint(res.KeysNotRecorded))
	}
	return nil
}

// KeysNotRecordedHint says how to read the keys of the operators ops
// (labels), whose key serializer the snapshot does not record.
func KeysNotRecordedHint(ops []string) string {
	return fmt.Sprintf("the snapshot records no key serializer of %s (a Flink changelog checkpoint not yet materialized), so their keys are not decoded: "+
		"--key-serializers-from SNAPSHOT reads them by the key serializers a savepoint of the same job records.", strings.Join(ops, ", "))
}

// notDecoded prints the values that were not decoded.
func notDecoded(w io.Writer, res *verify.Result) error {
	uncounted := 0
	for _, d := range res.NotDecoded {
		if d.Uncounted {
			uncounted++
		}
	}
	if uncounted == 0 {
		fmt.Fprintf(w, "Not decoded: %d values, written by serializers stateutil does not implement (no damage):\n", res.NotDecodedValues())
	} else {
		fmt.Fprintf(w, "Not decoded: %d values, and those of %d states not counted, whose serializer stateutil does not implement or the snapshot does not record (no damage):\n", res.NotDecodedValues(), uncounted)
	}
	rows := make([][]string, 0, len(res.NotDecoded))
	for _, d := range res.NotDecoded {
		rows = append(rows, []string{d.Operator, d.State, d.Part, d.Values(), d.Serializer, d.ValueClass})
	}
	return Table(w, []string{"OPERATOR", "STATE", "PART", "VALUES", "SERIALIZER", "VALUE CLASS"}, rows)
}
