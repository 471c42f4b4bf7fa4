package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/statesql"
	"github.com/stateutil/stateutil/storage"
)

type sqlOptions struct {
	source sourceFlags
	output outputFlag
	dest   string
	query  string
	memory sizeFlag
}

func newSQLCommand(e *env) *cobra.Command {
	o := &sqlOptions{output: outputFlag{choices: []string{"table", "json", "csv", "parquet"}}}
	c := &cobra.Command{
		Use:   "sql SNAPSHOT... [-e QUERY] [-o table|json|csv|parquet] [--output FILE]",
		Short: "Query state with SQL (DuckDB): each state a table with typed columns",
		Long: `Run SQL over snapshots on an embedded DuckDB. Each state is a table read from the snapshot
as the query scans it, never copied first: memory stays bounded as in dump, and
sorts and aggregates larger than --memory-limit spill to a temporary directory.

Tables (names are DuckDB identifiers: quote them with "..." when they hold - or .):
  "OPERATOR"."STATE"   keyed state of the operator (its uid, else its name, else its
                       id): key, key_group, subtask, namespace, then value (a list's
                       elements a row each), or map_key and map_value (a row per
                       entry), then ttl_expires_at (ttl_last_access when the snapshot
                       records no TTL duration) for a state with a TTL
  "OPERATOR"."STATE"   operator state: subtask, mode, value (an element a row)
  operators            the columns of Flink's savepoint_metadata (checkpoint_id,
                       operator_name, operator_uid, operator_uid_hash,
                       operator_parallelism, operator_max_parallelism, sizes) and
                       inspect's figures
  states               every state: kind, mode, serializers, TTL, its table, and its
                       entries and bytes (read from the state when selected)
  key_groups           entries and bytes per key group (inspect --key-groups)

Keys and values have the types their serializers record: scalars as themselves,
POJOs, Rows, tuples and Avro records as structs, lists and maps as such; values of
other serializers are JSON. A column whose type some values do not decode to has a
column COLUMN_undecoded beside it, holding such a value as a struct of its class and
bytes (NULL where the value decoded); values of a type stateutil does not decode at
all are that struct in the column itself. Nothing is dropped.

With several snapshots, snapshot N's tables are in catalog sN: s0."op"."state",
s1.operators, and so on, so that two snapshots can be joined. With one, s0 may be
left out.

Only SELECT (and EXPLAIN, DESCRIBE, SHOW, SUMMARIZE) statements run, one at a time:
the engine reads no file, reaches no network and loads no extension. Without -e,
statements are read from standard input, each ended by a semicolon (a prompt is
shown on a terminal). -o parquet writes the result to --output (a new file).

A SQL error is a usage error (exit 1) that names the line and column.

` + exitCodeHelp,
		Example: `  stateutil sql ./savepoint -e 'SELECT key, value FROM "word-counter"."count" ORDER BY value DESC LIMIT 10'
  stateutil sql ./savepoint -e 'SELECT key_group, count(*) FROM "sessions"."state" GROUP BY ALL' -o csv
  stateutil sql ./sp-1 ./sp-2 -e 'SELECT a.key FROM s0."counter"."count" a JOIN s1."counter"."count" b USING (key) WHERE a.value <> b.value'
  stateutil sql ./savepoint -e 'SELECT * FROM states' -o json
  stateutil sql ./savepoint -e 'SELECT * FROM "orders"."by-customer"' -o parquet --output orders.parquet
  stateutil sql ./savepoint          # statements from standard input`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			return o.run(c, e, args)
		},
		ValidArgsFunction: completeFiles,
	}
	o.output.add(c)
	o.source.add(c)
	o.source.addSkip(c)
	f := c.Flags()
	f.StringVarP(&o.query, "execute", "e", "", "the SQL statement to run (default: read statements from standard input)")
	f.StringVar(&o.dest, "output", "", "with -o parquet: the file to write (must not exist)")
	f.Var(&o.memory, "memory-limit", "DuckDB's memory, past which sorts and aggregates spill to disk (default 256MiB)")
	return c
}

func (o *sqlOptions) validate(c *cobra.Command) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	switch {
	case o.output.format == "parquet" && o.dest == "":
		return usageErrorf("-o parquet needs --output FILE")
	case o.output.format != "parquet" && o.dest != "":
		return usageErrorf("--output is where -o parquet writes; the other formats print to standard output")
	case o.output.format == "parquet" && !c.Flags().Changed("execute"):
		return usageErrorf("-o parquet needs the query as -e QUERY")
	case c.Flags().Changed("execute") && strings.TrimSpace(o.query) == "":
		return usageErrorf("-e wants a SQL statement")
	}
	_, err := o.source.openOptions()
	return err
}

// openSnapshots opens each location as dump does (reads checked block by
// block), refusing unreadable state unless --skip-unreadable. The caller
// closes what it returns, also on error.
func openSnapshots(c *cobra.Command, e *env, source *sourceFlags, locations []string) ([]statesql.Snapshot, func(), error) {
	var snaps []statesql.Snapshot
	var readers []snapshot.Reader
	closeAll := func() {
		for _, r := range readers {
			r.Close()
		}
	}
	opts, err := source.openOptions()
	if err != nil {
		return nil, closeAll, err
	}
	opts.ChecksumReads = true
	for _, loc := range locations {
		r, err := e.reg.Open(c.Context(), loc, opts)
		if err != nil {
			return nil, closeAll, err
		}
		readers = append(readers, r)
		if source.skipUnreadable {
			var dropped []snapshot.UnreadablePart
			r, dropped = snapshot.WithoutUnreadable(r)
			warnDropped(c.ErrOrStderr(), dropped)
		} else if err := snapshot.CheckReadable(r.Snapshot()); err != nil {
			return nil, closeAll, fmt.Errorf("%s: %w", loc, err)
		}
		snaps = append(snaps, statesql.Snapshot{Reader: r, Location: loc})
	}
	return snaps, closeAll, nil
}

func (o *sqlOptions) run(c *cobra.Command, e *env, locations []string) error {
	ctx := c.Context()
	snaps, closeAll, err := openSnapshots(c, e, &o.source, locations)
	defer closeAll()
	if err != nil {
		return err
	}
	engine, err := statesql.Open(ctx, snaps, statesql.Options{Codecs: e.reg.Codecs, MemoryLimit: o.memory.bytes})
	if err != nil {
		return err
	}
	defer engine.Close()
	for _, w := range engine.Warnings {
		fmt.Fprintf(c.ErrOrStderr(), "stateutil: warning: %s\n", w)
	}
	if o.output.format == "parquet" {
		return writeNewLocation(ctx, e, o.dest, func(w io.Writer) error {
			_, err := engine.Parquet(ctx, o.query, w)
			return err
		})
	}
	out := bufio.NewWriterSize(c.OutOrStdout(), 64<<10)
	if c.Flags().Changed("execute") {
		if err := runQuery(ctx, engine, o.query, o.output.format, out); err != nil {
			return err
		}
		return out.Flush()
	}
	return o.interactive(ctx, c, e, engine, out)
}

func runQuery(ctx context.Context, engine *statesql.Engine, query, format string, out io.Writer) error {
	w := newResultWriter(format, out)
	if err := engine.Query(ctx, query, w.head, w.row); err != nil {
		return err
	}
	return w.end()
}

// interactive reads statements from standard input, each ended by a
// semicolon at the end of a line, and prints each one's result. An error
// in a statement is printed and the next one read; the exit code is the
// last error's (0 if none).
func (o *sqlOptions) interactive(ctx context.Context, c *cobra.Command, e *env, engine *statesql.Engine, out *bufio.Writer) error {
	in := c.InOrStdin()
	f, isFile := in.(*os.File)
	prompt := isFile && term.IsTerminal(int(f.Fd())) && e.terminal(c.OutOrStdout())
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	var stmt strings.Builder
	var last error
	run, failed := 0, 0
	show := func(p string) {
		if prompt {
			fmt.Fprint(out, p)
			out.Flush()
		}
	}
	show("sql> ")
	for scanner.Scan() {
		line := scanner.Text()
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if !strings.HasSuffix(strings.TrimSpace(line), ";") {
			if strings.TrimSpace(stmt.String()) == "" {
				stmt.Reset()
				show("sql> ")
			} else {
				show("  -> ")
			}
			continue
		}
		err := runQuery(ctx, engine, stmt.String(), o.output.format, out)
		stmt.Reset()
		run++
		if ctx.Err() != nil {
			return err
		}
		if err != nil {
			last = err
			failed++
			out.Flush()
			fmt.Fprintf(c.ErrOrStderr(), "stateutil: %s\n", message(err))
		}
		if err := out.Flush(); err != nil {
			return err
		}
		show("sql> ")
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(stmt.String()) != "" {
		return usageErrorf("the last statement has no closing semicolon: %q", strings.TrimSpace(stmt.String()))
	}
	if err := out.Flush(); err != nil || last == nil {
		return err
	}
	// Each error was printed as it came; the exit code is the last one's.
	return &codedError{code: exitCode(last), err: fmt.Errorf("%d of %d statements failed", failed, run)}
}

// writeNewLocation writes a new file at location (through its storage)
// from what write writes, atomically: nothing appears there unless write
// and the commit succeed, and an existing file is refused.
func writeNewLocation(ctx context.Context, e *env, location string, write func(io.Writer) error) error {
	st, p, err := e.reg.Storage.Resolve(ctx, location)
	if err != nil {
		return err
	}
	claim, err := st.Claim(ctx, p)
	if err != nil {
		return err
	}
	defer claim.Release()
	if _, err := st.Stat(ctx, p); err == nil {
		return fmt.Errorf("%w: %s", storage.ErrExist, st.URI(p))
	} else if !errors.Is(err, snapshot.ErrNotFound) {
		return err
	}
	pending, err := st.Create(ctx, p)
	if err != nil {
		return err
	}
	if err := write(pending); err != nil {
		pending.Abort()
		return err
	}
	return pending.Commit()
}
