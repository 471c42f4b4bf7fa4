package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/surgery"
)

// Surgery prints what the edits did, per state and per deletion.
func Surgery(w io.Writer, rep *surgery.Report, verified bool) error {
	var rows [][]string
	for _, st := range rep.States {
		edit := st.Edit
		if st.To != "" {
			edit += fmt.Sprintf(" (now %q)", st.To)
		}
		put, deleted := "-", "-"
		switch st.Edit {
		case "put", "loaded":
			put, deleted = strconv.Itoa(st.KeysPut), strconv.Itoa(st.KeysDeleted)
		case "keys deleted":
			deleted = strconv.Itoa(st.KeysDeleted)
		}
		rows = append(rows, []string{st.Operator, st.Scope, st.State, edit, put, deleted,
			strconv.FormatInt(st.Before.Entries, 10), strconv.FormatInt(st.After.Entries, 10),
			Bytes(st.Before.Bytes), Bytes(st.After.Bytes)})
	}
	if err := Table(w, []string{"OPERATOR", "SCOPE", "STATE", "EDIT", "KEYS PUT", "KEYS DELETED", "ENTRIES BEFORE", "ENTRIES AFTER", "BYTES BEFORE", "BYTES AFTER"}, rows); err != nil {
		return err
	}
	for _, d := range rep.Deletions {
		fmt.Fprintf(w, "operator %s: %d keys given, %d deleted, %d in no state", d.Operator, d.Keys, d.Deleted, d.Missing)
		if d.Missing > 0 {
			fmt.Fprintf(w, ", first: %s", strings.Join(d.FirstMissing, ", "))
			if d.Missing > len(d.FirstMissing) {
				fmt.Fprintf(w, " and %d more", d.Missing-len(d.FirstMissing))
			}
		}
		fmt.Fprintln(w)
	}
	for _, l := range rep.Loads {
		fmt.Fprintf(w, "load %q: %d records: %d keys put, %d deleted", l.From, l.Records, l.Puts, l.Deletes)
		if l.TimersSkipped > 0 {
			fmt.Fprintf(w, ", %d of timer states skipped (load does not set timers)", l.TimersSkipped)
		}
		fmt.Fprintln(w)
	}
	if verified {
		fmt.Fprintln(w, "verified: the copy reads back as SRC with the edits made")
	}
	return nil
}
