package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
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
	r, err := o.source.open(ctx, e, location)
	if err != nil {
		return err
	}
	defer r.Close()
	rec, err := lookup.Get(ctx, r, e.reg.Codecs, lookup.Query{Operator: o.operator, State: o.state, Key: o.key, Namespace: o.namespace, Now: now})
	if err != nil {
		return err
	}
	if o.output.json() {
		return render.JSON(c.OutOrStdout(), rec)
	}
	return render.Record(c.OutOrStdout(), rec)
}
