package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/statesql"
)

type dumpOptions struct {
	source    sourceFlags
	output    outputFlag
	operator  string
	state     string
	keyGroups string
	subtask   int
	keyPrefix string
	limit     int64
	now       string
	quiet     bool
	dest      string
}

func newDumpCommand(e *env) *cobra.Command {
	o := &dumpOptions{output: outputFlag{choices: []string{"jsonl", "csv", "table", "parquet"}}}
	c := &cobra.Command{
		Use:   "dump SNAPSHOT [--operator UID] [--state NAME] [--key-group N|A-B] [--subtask N] [--key-prefix P] [--limit N]",
		Short: "Stream every key's state, one line each",
		Long: `Stream the keyed state of a snapshot, one key of one state per line, in key-group order,
operator by operator: the fields of stateutil get (operator, state, kind, key, namespace,
key group, subtask, value, ttl). Values are decoded by state kind: a list's elements as
an array, a map's entries as an object.

-o jsonl (default) writes one JSON document per line; csv a header and one row per key,
key, namespace and value as JSON; table an ASCII table, which holds every row until the
end (give it a --limit). Memory is otherwise bounded by one key group per subtask read at
once.

-o parquet writes one keyed state (name it with --operator and --state unless the
snapshot has only one) to the new file --output, in the typed columns of stateutil sql's
table of the state: key, key_group, subtask, namespace, value (a list's elements a row
each) or map_key and map_value (a map's entries a row each), the TTL as a timestamp, and
a COLUMN_undecoded struct beside columns some values do not decode to; in dump's order.
--key-group, --subtask and --limit (rows) apply; --key-prefix and --now do not. Piped into head, dump stops when the reader does, with exit code 0. A progress bar
is shown on stderr when it is a terminal, unless --quiet.

Checksums are checked as state is read, before any of it is written, so a damaged part
fails the dump: each key group's in the memory and filesystem formats, each block's in
RocksDB (Flink's other files carry none). To check whole files as well, including parts
no read touches, run stateutil verify.

` + exitCodeHelp,
		Example: `  stateutil dump ./snapshot.dump --operator word-counter --state count | head
  stateutil dump ./savepoint --key-group 10-20 -o csv > keys.csv
  stateutil dump ./chk-7 --operator sessions --key-prefix user-1 --limit 100 -o table
  stateutil dump ./savepoint --operator sessions --state events -o parquet --output events.parquet
  stateutil dump ./chk-3 --key-serializers-from ./savepoint-1a2b3c   # a changelog checkpoint not yet materialized`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			kgs, now, err := o.validate(c)
			if err != nil {
				return err
			}
			return o.run(c, e, args[0], kgs, now)
		},
		ValidArgsFunction: completeFiles,
	}
	o.output.add(c)
	o.source.add(c)
	o.source.addSkip(c)
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "only this operator: uid, name or id")
	f.StringVar(&o.state, "state", "", "only this keyed state")
	f.StringVar(&o.keyGroups, "key-group", "", "only key group N, or key groups A-B")
	f.IntVar(&o.subtask, "subtask", -1, "only this subtask")
	f.StringVar(&o.keyPrefix, "key-prefix", "", "only keys whose text (a string key, else the key's JSON) starts with this")
	f.Int64Var(&o.limit, "limit", 0, "stop after this many lines (0: no limit)")
	f.StringVar(&o.now, "now", "", "the time TTL expiry is judged at: RFC 3339 or Unix milliseconds (default: now)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&o.dest, "output", "", "with -o parquet: the file to write (must not exist)")
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	return c
}

func (o *dumpOptions) validate(c *cobra.Command) (*keygroup.Range, time.Time, error) {
	if err := o.output.validate(); err != nil {
		return nil, time.Time{}, err
	}
	if o.limit < 0 {
		return nil, time.Time{}, usageErrorf("--limit cannot be negative")
	}
	switch parquet := o.output.format == "parquet"; {
	case parquet && o.dest == "":
		return nil, time.Time{}, usageErrorf("-o parquet needs --output FILE")
	case !parquet && o.dest != "":
		return nil, time.Time{}, usageErrorf("--output is where -o parquet writes; the other formats print to standard output")
	case parquet && (o.keyPrefix != "" || o.now != ""):
		return nil, time.Time{}, usageErrorf("-o parquet takes no --key-prefix or --now (its TTL columns are timestamps); filter the file, or use stateutil sql")
	}
	if c.Flags().Changed("subtask") && o.subtask < 0 {
		return nil, time.Time{}, usageErrorf("--subtask cannot be negative")
	}
	var kgs *keygroup.Range
	if o.keyGroups != "" {
		r, err := parseKeyGroups(o.keyGroups)
		if err != nil {
			return nil, time.Time{}, err
		}
		kgs = &r
	}
	now, err := parseNow(o.now)
	return kgs, now, err
}

// parseKeyGroups reads N or A-B.
func parseKeyGroups(s string) (keygroup.Range, error) {
	a, b, isRange := strings.Cut(s, "-")
	start, err1 := strconv.Atoi(a)
	end, err2 := start, error(nil)
	if isRange {
		end, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || start < 0 || end < start {
		return keygroup.Range{}, usageErrorf("--key-group wants N or A-B with 0 <= A <= B, not %q", s)
	}
	return keygroup.Range{Start: start, End: end}, nil
}

func (o *dumpOptions) run(c *cobra.Command, e *env, location string, kgs *keygroup.Range, now time.Time) error {
	ctx := c.Context()
	opts, err := o.source.openOptions()
	if err != nil {
		return err
	}
	// What dump shows is checked block by block as it is read (see
	// snapshot.OpenOptions.ChecksumReads); verify checks whole files.
	opts.ChecksumReads = true
	opened, err := e.reg.Open(ctx, location, opts)
	if err != nil {
		return err
	}
	defer opened.Close()
	r := opened
	if o.source.skipUnreadable {
		var dropped []snapshot.UnreadablePart
		r, dropped = snapshot.WithoutUnreadable(r)
		warnDropped(c.ErrOrStderr(), dropped)
	} else if err := snapshot.CheckReadable(r.Snapshot()); err != nil {
		return err
	}
	if o.output.format == "parquet" {
		return o.parquet(c, e, location, r, kgs)
	}
	bar := e.newProgress(c.ErrOrStderr(), o.quiet, "dumping")
	bar.start(-1)
	defer bar.finish()
	out := bufio.NewWriterSize(c.OutOrStdout(), 64<<10)
	f := lookup.Filter{Operator: o.operator, State: o.state, KeyGroups: kgs, Subtask: o.subtask, KeyPrefix: o.keyPrefix, Now: now}
	if o.output.format == "table" {
		err = o.table(ctx, r, e.reg.Codecs, f, out, bar)
	} else {
		restore := func() {}
		if opensRocksDB(r.Snapshot()) {
			restore = moreProcs()
		}
		err = o.stream(ctx, r, e.reg.Codecs, f, out, bar)
		restore()
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// stream writes jsonl or csv, records encoded on several goroutines.
func (o *dumpOptions) stream(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f lookup.Filter, out io.Writer, bar *progress) error {
	enc := lookup.AppendJSON
	if o.output.format == "csv" {
		enc = lookup.AppendCSV
		if _, err := out.Write(lookup.AppendCSVRow(nil, lookup.CSVColumns)); err != nil {
			return err
		}
	}
	return lookup.Stream(ctx, r, codecs, f, o.limit, enc, func(b []byte, n int) error {
		_, err := out.Write(b)
		bar.add(int64(n))
		return err
	})
}

// table holds every row, then prints them as one table.
func (o *dumpOptions) table(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f lookup.Filter, out io.Writer, bar *progress) error {
	var rows [][]string
	err := lookup.Dump(ctx, r, codecs, f, func(rec *lookup.Record) error {
		rows = append(rows, rec.Fields())
		bar.add(1)
		if o.limit > 0 && int64(len(rows)) >= o.limit {
			return lookup.ErrStop
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "No keys.")
		return err
	}
	return render.Table(out, []string{"OPERATOR", "STATE", "KIND", "KEY", "NAMESPACE", "KEY GROUP", "SUBTASK", "VALUE", "TTL EXPIRES", "EXPIRED", "LAST ACCESS"}, rows)
}

// parquet writes the one keyed state the filters select to --output, as
// stateutil sql's table of it, in dump's order.
func (o *dumpOptions) parquet(c *cobra.Command, e *env, location string, r snapshot.Reader, kgs *keygroup.Range) error {
	op, st, err := o.oneState(r.Snapshot())
	if err != nil {
		return err
	}
	ctx := c.Context()
	engine, err := statesql.Open(ctx, []statesql.Snapshot{{Reader: r, Location: location}}, statesql.Options{Codecs: e.reg.Codecs, Ordered: true})
	if err != nil {
		return err
	}
	defer engine.Close()
	query := "SELECT * FROM " + engine.From(0, op, st.Name, false)
	var where []string
	if kgs != nil {
		where = append(where, fmt.Sprintf("key_group BETWEEN %d AND %d", kgs.Start, kgs.End))
	}
	if o.subtask >= 0 {
		where = append(where, fmt.Sprintf("subtask = %d", o.subtask))
	}
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if o.limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", o.limit)
	}
	return writeNewLocation(ctx, e, o.dest, func(w io.Writer) error {
		_, err := engine.Parquet(ctx, query, w)
		return err
	})
}

// oneState is the keyed state --operator and --state select, which must
// be one.
func (o *dumpOptions) oneState(s *snapshot.Snapshot) (*snapshot.Operator, *snapshot.KeyedState, error) {
	var found []string
	var op *snapshot.Operator
	var st *snapshot.KeyedState
	ops := s.Operators
	if o.operator != "" {
		one, ok := s.Operator(o.operator)
		if !ok {
			return nil, nil, fmt.Errorf("%w: no operator %q", snapshot.ErrNotFound, o.operator)
		}
		ops = []*snapshot.Operator{one}
	}
	for _, candidate := range ops {
		for i := range candidate.KeyedStates {
			k := &candidate.KeyedStates[i]
			if o.state == "" || k.Name == o.state {
				op, st = candidate, k
				found = append(found, fmt.Sprintf("--operator %s --state %s", candidate.Label(), k.Name))
			}
		}
	}
	switch {
	case len(found) == 0 && o.state != "":
		return nil, nil, fmt.Errorf("%w: no keyed state %q", snapshot.ErrNotFound, o.state)
	case len(found) == 0:
		return nil, nil, usageErrorf("-o parquet writes one keyed state, and none is selected")
	case len(found) > 1:
		return nil, nil, usageErrorf("-o parquet writes one keyed state: choose one of\n  %s", strings.Join(found, "\n  "))
	}
	return op, st, nil
}
