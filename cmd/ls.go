package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/catalog"
	"github.com/stateutil/stateutil/snapshot"
)

type lsOptions struct {
	source sourceFlags
	output outputFlag
	quiet  bool
	depth  int
}

func newLsCommand(e *env) *cobra.Command {
	o := &lsOptions{}
	c := &cobra.Command{
		Use:   "ls ROOT",
		Short: "List the jobs, checkpoints and savepoints under a checkpoint or savepoint root",
		Long: `List what ROOT holds, on any storage: the jobs of a checkpoint root
(ROOT/<job-id>/chk-<N>, with their shared/ and taskowned/ files), the savepoints of a
savepoint root (savepoint-<id>-<random>), and snapshots of stateutil's own formats
(a chk-<N>.dump, a directory with a _metadata, a memory dump). ROOT may also be one
job directory or one snapshot; --depth says how many directory levels below ROOT
snapshots are looked for (2 reaches ROOT/<job-id>/chk-<N>).

For each snapshot: its location, checkpoint id, kind, format, time (when it was taken,
where the metadata records it, else when its metadata was written), size, operators,
and whether it is complete: its _metadata is there and readable, and every file it
references is present and no shorter than the metadata records. Only metadata is read,
never state: a file's presence and size come from listing its directory. A damaged or
unrecognized _metadata is reported as that snapshot's problem.

Files that several snapshots reference (the shared files of incremental checkpoints)
are counted in each snapshot's size, and once in its job's and in the total; the
SHARED column says how much of a snapshot's size other listed snapshots share and
which. A Flink checkpoint records absolute paths: one that was moved needs --path-map,
as inspect does.

-q prints the locations alone, one a line, of every committed snapshot (complete or
not: verify then says what is wrong), for inspect, verify and the other commands;
-o json prints the whole listing.

The exit code is 2 when a committed snapshot (one with a _metadata) is incomplete or
unreadable; a chk-<N> or savepoint directory without _metadata (being written, failed
or left behind) is listed as incomplete and fails nothing.

` + exitCodeHelp,
		Example: `  stateutil ls hdfs://nn:8020/flink/checkpoints
  stateutil ls s3://bucket/savepoints -o json
  stateutil ls ./checkpoints/5f3c9a1b2d4e6f708192a3b4c5d6e7f8
  stateutil ls ./checkpoints -q | xargs -n1 stateutil verify
  stateutil ls ./checkpoints -o json | jq -r '.snapshots[] | select(.complete) | .location'
  stateutil ls ./moved-checkpoints --path-map file:/flink/checkpoints=./moved-checkpoints`,
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
	o.source.add(c)
	c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only the committed snapshots' locations, one a line")
	c.Flags().IntVar(&o.depth, "depth", catalog.DefaultDepth, "directory levels below ROOT to look for snapshots in")
	return c
}

func (o *lsOptions) validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	if o.quiet && o.output.json() {
		return usageErrorf("-q and -o json are two outputs: choose one")
	}
	if o.depth < 1 || o.depth > 64 {
		return usageErrorf("--depth must be 1 to 64, not %d", o.depth)
	}
	_, err := o.source.openOptions()
	return err
}

func (o *lsOptions) run(c *cobra.Command, e *env, root string) error {
	opts, err := o.source.openOptions()
	if err != nil {
		return err
	}
	l, err := catalog.List(c.Context(), e.reg, root, catalog.Options{Depth: o.depth, Open: opts})
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	switch {
	case o.output.json():
		err = writeJSON(w, l)
	case o.quiet:
		for _, s := range l.Snapshots {
			if !s.Committed {
				continue
			}
			if _, err = fmt.Fprintln(w, s.Location); err != nil {
				break
			}
		}
	default:
		err = printListing(w, l)
	}
	if err != nil {
		return err
	}
	bad := 0
	for _, s := range l.Snapshots {
		if s.Committed && !s.Complete {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%w: %d of %d snapshots under %q are incomplete or unreadable", snapshot.ErrCorrupt, bad, len(l.Snapshots), root)
	}
	return nil
}

func printListing(w io.Writer, l *catalog.Listing) error {
	if len(l.Snapshots) == 0 {
		_, err := fmt.Fprintf(w, "no snapshots under %s\n", l.Root)
		return err
	}
	rows := make([][]string, 0, len(l.Snapshots))
	for _, s := range l.Snapshots {
		rows = append(rows, []string{s.Name, orDash(s.ID), orDash(string(s.Kind)), orDash(s.Format), snapshotTime(s),
			humanBytes(s.Bytes), orDash(s.Operators), sharedCell(s), completeCell(s)})
	}
	if err := table(w, []string{"SNAPSHOT", "ID", "KIND", "FORMAT", "TIME", "SIZE", "OPERATORS", "SHARED", "COMPLETE"}, rows); err != nil {
		return err
	}
	for _, j := range l.Jobs {
		fmt.Fprintf(w, "job %s: %s, %d complete, %s in %s", j.Name, plural(j.Checkpoints, "checkpoint"), j.Complete, humanBytes(j.Bytes), plural(j.Files, "file"))
		if j.SharedFiles > 0 {
			fmt.Fprintf(w, " (of which %s in %s shared by checkpoints, counted once)", humanBytes(j.SharedBytes), plural(j.SharedFiles, "file"))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "total: %s, %s in %s, each counted once\n", plural(len(l.Snapshots), "snapshot"), humanBytes(l.Bytes), plural(l.Files, "file"))
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
	return humanBytes(s.SharedBytes) + " with " + strings.Join(s.SharesWith, " ")
}

func completeCell(s catalog.Snapshot) string {
	switch {
	case s.Complete:
		return "yes"
	case !s.Committed:
		return "no: no _metadata"
	case s.MissingFiles > 0:
		return fmt.Sprintf("no: %s missing", plural(s.MissingFiles, "file"))
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
