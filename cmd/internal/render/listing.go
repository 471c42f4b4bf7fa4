package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/stateutil/stateutil/catalog"
)

func Listing(w io.Writer, l *catalog.Listing) error {
	if len(l.Snapshots) == 0 {
		_, err := fmt.Fprintf(w, "no snapshots under %s\n", l.Root)
		return err
	}
	rows := make([][]string, 0, len(l.Snapshots))
	for _, s := range l.Snapshots {
		rows = append(rows, []string{s.Name, orDash(s.ID), orDash(string(s.Kind)), orDash(s.Format), snapshotTime(s),
			Bytes(s.Bytes), orDash(s.Operators), sharedCell(s), completeCell(s)})
	}
	if err := Table(w, []string{"SNAPSHOT", "ID", "KIND", "FORMAT", "TIME", "SIZE", "OPERATORS", "SHARED", "COMPLETE"}, rows); err != nil {
		return err
	}
	for _, j := range l.Jobs {
		fmt.Fprintf(w, "job %s: %s, %d complete, %s in %s", j.Name, Plural(j.Checkpoints, "checkpoint"), j.Complete, Bytes(j.Bytes), Plural(j.Files, "file"))
		if j.SharedFiles > 0 {
			fmt.Fprintf(w, " (of which %s in %s shared by checkpoints, counted once)", Bytes(j.SharedBytes), Plural(j.SharedFiles, "file"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "total: %s, %s in %s, each counted once\n", Plural(len(l.Snapshots), "snapshot"), Bytes(l.Bytes), Plural(l.Files, "file"))
	for _, s := range l.Snapshots {
		for _, p := range s.Problems {
			fmt.Fprintf(w, "%s: %s\n", s.Name, p)
		}
	}
	return nil
}

// snapshotTime is when the snapshot was taken, else when its metadata was
// written, as UTC to the second.
func snapshotTime(s catalog.Snapshot) string {
	t := s.Modified
	if s.Created != nil {
		t = *s.Created
	}
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

func sharedCell(s catalog.Snapshot) string {
	if s.SharedFiles == 0 {
		return "-"
	}
	return Bytes(s.SharedBytes) + " with " + strings.Join(s.SharesWith, " ")
}

func completeCell(s catalog.Snapshot) string {
	switch {
	case s.Complete:
		return "yes"
	case !s.Committed:
		return "no: no _metadata"
	case s.MissingFiles > 0:
		return fmt.Sprintf("no: %s missing", Plural(s.MissingFiles, "file"))
	}
	return "no: unreadable"
}

// orDash renders a figure that may be unknown (nil), or a name that may
// be empty.
func orDash(v any) string {
	switch v := v.(type) {
	case *int:
		if v != nil {
			return strconv.Itoa(*v)
		}
	case *int64:
		if v != nil {
			return strconv.FormatInt(*v, 10)
		}
	case string:
		if v != "" {
			return v
		}
	}
	return "-"
}
