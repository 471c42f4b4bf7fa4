package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/surgery"
)

type loadOptions struct {
	surgeryFlags
	from string
	now  string
}

func newLoadCommand(e *env) *cobra.Command {
	o := &loadOptions{}
	c := &cobra.Command{
		Use:   "load SRC --from FILE.jsonl --output DST",
		Short: "Write a copy of SRC with keyed state set from records in dump's schema",
		Long: `Write a copy of SRC with the records of FILE applied: each line a JSON object as dump
prints it (-o jsonl), one key of one keyed state, which sets that key's whole value, as
put does: a value, reducing or aggregating state's value, a list state's whole list (a
JSON array), a map state's whole map (a JSON object: entries the object leaves out are
removed). A record with "delete": true removes the key's value instead, and must have
no "value". Keys the records do not name are left as SRC holds them, so that
"dump SRC | jq ... | load SRC --from - --output DST" is a round trip: an unedited dump
loaded back gives a copy that diff --entries --values finds equal to SRC.

A record names "operator" (uid, id or name), "state" and "key", and "namespace" for the
window of a state with namespaces. "kind", "key_group", "subtask" and "schema_version"
are optional, but when given must be what SRC has: a key_group or subtask that is not
the key's (under SRC's max parallelism) is refused, which catches a key edited into
another. "ttl" is ignored. Records of timer states are checked and skipped: load does
not set timers, which stay as SRC holds them. A key given twice is refused.

For a state with TTL, entries a record leaves as SRC holds them (a map entry with the
same value, a list element with the same value at the same position) keep their expiry;
those it changes count as accessed at --now (default: now).

Every record is checked before anything is written: its operator and state, its key,
namespace and value against the state's types (each encoded with the state's
serializer, from its serializer snapshot), its key group; and what a JSON parser would
take and change without a word is refused: a field given twice in one object, a JSON
number or boolean where the state holds text ("key":10 for a String key; "1" for a Long
is fine), a \u escape of half a surrogate pair alone, bytes that are not UTF-8. A line
that is no record, or does not fit, exits 1 (an unknown operator or state exits 3, a
type stateutil cannot write exits 4), naming the line, and nothing is written; so does
a line over 64 MiB.
--from - reads stdin.

Memory: FILE is read once, and every record is held until the copy ends, with its key
and value encoded, indexed by key group and key, so that each entry of SRC is matched in
constant time: about 1 KiB a record beside the copy's own working set (200,000 records
of 27 MiB took 290 MiB). Give larger edits in several loads. A --plan-only plan carries
the records (about twice FILE's size), so that every shard applies them.

` + surgeryHelp + `

` + exitCodeHelp,
		Example: `  stateutil dump ./savepoint-1a2b --operator keyed --state count > count.jsonl
  jq -c 'select(.key == "user-3").value = 0' count.jsonl | stateutil load ./savepoint-1a2b --from - --output ./fixed
  jq -c 'select(.value > 1000) | .delete = true' count.jsonl > drop.jsonl
  stateutil load ./savepoint-1a2b --from drop.jsonl --dry-run
  stateutil load ./savepoint-1a2b --from drop.jsonl --format rocksdb --parallelism 4 --output ./fixed`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			now, err := parseNow(o.now)
			if err != nil {
				return err
			}
			edit := surgery.Edit{Op: surgery.Load, From: o.from, Now: now.UnixMilli()}
			if edit.Records, err = readLoadRecords(c, e, o.from); err != nil {
				return err
			}
			defer limitHeapAbove(heldBytes(edit.Records))()
			return o.run(c, e, args[0], edit)
		},
		ValidArgsFunction: completeFiles,
	}
	f := c.Flags()
	f.StringVar(&o.from, "from", "", "the records: a path or URI of JSON lines as dump prints them, - for stdin")
	f.StringVar(&o.now, "now", "", "the last access of what is changed in a state with TTL: RFC 3339 or Unix milliseconds (default: now)")
	o.add(c, e)
	return c
}

func (o *loadOptions) validate(c *cobra.Command) error {
	if o.from == "" {
		return usageErrorf("--from is required (- for stdin)")
	}
	return o.surgeryFlags.validate(c)
}

// readLoadRecords reads the records of a load from a path, a URI, or stdin.
func readLoadRecords(c *cobra.Command, e *env, location string) ([]surgery.Record, error) {
	var r io.Reader = c.InOrStdin()
	if location != "-" {
		st, p, err := e.reg.Storage.Resolve(c.Context(), location)
		if err != nil {
			return nil, err
		}
		f, err := st.Open(c.Context(), p)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		defer f.Close()
		r = f
	}
	recs, err := surgery.ReadRecords(r, lookup.SchemaVersion)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--from %q: %w", location, err)
	case len(recs) == 0:
		return nil, usageErrorf("--from %q holds no records", location)
	}
	return recs, nil
}

// heldBytes is a generous estimate of the heap records take while a load
// holds them: the records, and their puts with keys and values encoded.
func heldBytes(recs []surgery.Record) int64 {
	n := int64(0)
	for _, r := range recs {
		n += 512 + 4*int64(len(r.Operator)+len(r.State)+len(r.Key)+len(r.Namespace)+len(r.Value))
	}
	return n
}
