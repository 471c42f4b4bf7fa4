package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/lookup"
)

type getOptions struct {
	source    sourceFlags
	output    outputFlag
	operator  string
	state     string
	key       string
	namespace string
	now       string
}

func newGetCommand(e *env) *cobra.Command {
	o := &getOptions{}
	c := &cobra.Command{
		Use:   "get SNAPSHOT --operator UID --state NAME --key KEY",
		Short: "Print the state of one key",
		Long: `Print what one keyed state holds for one key: the value of a value, reducing or
aggregating state, a list's elements, a map's entries, with the key's key group and
subtask and, for a state with TTL, when the value expires and whether it has at --now.

Only the key group the key hashes to is read; in RocksDB snapshots it is a point lookup.

KEY is encoded with the state's key serializer. Write composite keys as JSON: '["a",1]'
for a Tuple2 of a String and an Integer; quote a string key that looks like JSON:
'"42"'; --key '' is the empty string. --namespace takes a window as
'{"start":0,"end":60000}', for states that have namespaces. --operator takes a uid, a
name or an operator id.

` + exitCodeHelp,
		Example: `  stateutil get ./snapshot.dump --operator word-counter --state count --key hello
  stateutil get ./savepoint --operator orders --state totals --key '["eu",42]' -o json
  stateutil get ./chk-7 --operator sessions --state recent --key user-1 --now 2026-01-02T00:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			now, err := o.validate(c)
			if err != nil {
				return err
			}
			return o.run(c, e, args[0], now)
		},
		ValidArgsFunction: completeFiles,
	}
	o.output.add(c)
	o.source.add(c)
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "the operator: uid, name or id")
	f.StringVar(&o.state, "state", "", "the keyed state's name")
	f.StringVar(&o.key, "key", "", "the key, as text or JSON")
	f.StringVar(&o.namespace, "namespace", "", "the namespace, as JSON (default: none, Flink's VoidNamespace)")
	f.StringVar(&o.now, "now", "", "the time TTL expiry is judged at: RFC 3339 or Unix milliseconds (default: now)")
	_ = c.RegisterFlagCompletionFunc("operator", e.completeOperators)
	return c
}

func (o *getOptions) validate(c *cobra.Command) (time.Time, error) {
	if err := o.output.validate(); err != nil {
		return time.Time{}, err
	}
	for flag, v := range map[string]string{"--operator": o.operator, "--state": o.state} {
		if v == "" {
			return time.Time{}, usageErrorf("%s is required", flag)
		}
	}
	// --key "" is a key: the empty string.
	if !c.Flags().Changed("key") {
		return time.Time{}, usageErrorf("--key is required")
	}
	return parseNow(o.now)
}

// parseNow reads --now: RFC 3339, or Unix milliseconds; "" is now.
func parseNow(s string) (time.Time, error) {
	t, err := lookup.ParseNow(s)
	if err != nil {
		return t, usageErrorf("--now %v", err)
	}
	return t, nil
}

func (o *getOptions) run(c *cobra.Command, e *env, location string, now time.Time) error {
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
	rec, err := lookup.Get(ctx, r, e.reg.Codecs, lookup.Query{Operator: o.operator, State: o.state, Key: o.key, Namespace: o.namespace, Now: now})
	if err != nil {
		return err
	}
	if o.output.json() {
		return writeJSON(c.OutOrStdout(), rec)
	}
	return printRecord(c.OutOrStdout(), rec)
}

func printRecord(w io.Writer, r *lookup.Record) error {
	fmt.Fprintf(w, "operator:   %s\n", r.Operator)
	fmt.Fprintf(w, "state:      %s (%s)\n", r.State, r.Kind)
	fmt.Fprintf(w, "key:        %s\n", jsonText(r.Key))
	if r.Namespace != nil {
		fmt.Fprintf(w, "namespace:  %s\n", jsonText(r.Namespace))
	}
	fmt.Fprintf(w, "key group:  %d (subtask %d)\n", r.KeyGroup, r.Subtask)
	if r.TTL != nil && !r.TTL.LastAccess.IsZero() {
		fmt.Fprintf(w, "ttl:        last access %s (the snapshot does not record the TTL duration)\n", r.TTL.LastAccess.Format(time.RFC3339Nano))
	} else if r.TTL != nil {
		state := "alive"
		if r.TTL.Expired {
			state = "expired"
		}
		fmt.Fprintf(w, "ttl:        expires %s: %s at %s\n", r.TTL.ExpiresAt.Format(time.RFC3339Nano), state, r.TTL.Now.Format(time.RFC3339))
	}
	switch v := r.Value.(type) {
	case []any:
		fmt.Fprintf(w, "value:      %s\n", plural(len(v), "element"))
		rows := make([][]string, len(v))
		for i, x := range v {
			rows[i] = []string{strconv.Itoa(i), jsonText(x)}
		}
		return table(w, []string{"#", "ELEMENT"}, rows)
	case map[string]any:
		entries := fmt.Sprintf("%d entries", len(v))
		if len(v) == 1 {
			entries = "1 entry"
		}
		fmt.Fprintf(w, "value:      %s\n", entries)
		var rows [][]string
		for _, k := range sortedKeys(v) {
			rows = append(rows, []string{k, jsonText(v[k])})
		}
		return table(w, []string{"KEY", "VALUE"}, rows)
	}
	fmt.Fprintf(w, "value:      %s\n", jsonText(r.Value))
	return nil
}

func jsonText(v any) string {
	var b strings.Builder
	if err := writeCompactJSON(&b, v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
