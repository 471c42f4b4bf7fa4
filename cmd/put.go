package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/surgery"
)

type putOptions struct {
	surgeryFlags
	operator  string
	state     string
	key       string
	value     string
	mapKey    string
	namespace string
	delete    bool
	now       string
}

func newPutCommand(e *env) *cobra.Command {
	o := &putOptions{}
	c := &cobra.Command{
		Use:   "put SRC --operator UID --state NAME --key KEY (--value JSON | --delete) --output DST",
		Short: "Write a copy of SRC with one key's value in a keyed state set",
		Long: `Write a copy of SRC with the value of KEY in keyed state NAME of operator UID (uid, id or
name) set to JSON: a value, reducing or aggregating state's value, a list state's whole list
(a JSON array), a map state's whole map (a JSON object). --map-key K sets that one map entry
instead; --delete removes the key's value (or, with --map-key, the one entry). Keys, map
keys and values are written as get prints them. The value is encoded with the state's
serializer, from its serializer snapshot: JSON that does not fit the type exits 1, naming
the field, and nothing is written; so does what a JSON parser would change without a word:
a field given twice in one object, a number or boolean --value where the state holds text
(quote it), a \u escape of half a surrogate pair alone, bytes that are not UTF-8. --namespace names the window of a state with
namespaces. For a state with TTL the entries written count as accessed at --now.

` + surgeryHelp + `

` + exitCodeHelp,
		Example: `  stateutil put ./savepoint-1a2b --operator keyed --state count --key user-3 --value 0 --output ./reset
  stateutil put ./savepoint-1a2b --operator keyed --state events --key user-3 --value '["e1","e2"]' --output ./fixed
  stateutil put ./savepoint-1a2b --operator keyed --state by-bucket --key user-3 --map-key b1 --delete --output ./fixed`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			now, err := parseNow(o.now)
			if err != nil {
				return err
			}
			defer limitHeap()()
			edit := surgery.Edit{Op: surgery.Put, Operator: o.operator, State: o.state, Keys: []string{o.key},
				Value: o.value, Namespace: o.namespace, Delete: o.delete, Now: now.UnixMilli()}
			if c.Flags().Changed("map-key") {
				edit.MapKey = &o.mapKey
			}
			return o.run(c, e, args[0], edit)
		},
		ValidArgsFunction: completeFiles,
	}
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "the operator (uid, id or name)")
	f.StringVar(&o.state, "state", "", "the keyed state")
	f.StringVar(&o.key, "key", "", "the key, as get takes it")
	f.StringVar(&o.value, "value", "", "the new value, as get prints it")
	f.StringVar(&o.mapKey, "map-key", "", "set (or --delete) this one entry of a map state")
	f.StringVar(&o.namespace, "namespace", "", "the namespace (window), as get takes it")
	f.BoolVar(&o.delete, "delete", false, "remove the key's value, or with --map-key the one entry")
	f.StringVar(&o.now, "now", "", "the last access of what is written to a state with TTL: RFC 3339 or Unix milliseconds (default: now)")
	o.add(c, e)
	return c
}

func (o *putOptions) validate(c *cobra.Command) error {
	switch {
	case o.operator == "":
		return usageErrorf("--operator is required")
	case o.state == "":
		return usageErrorf("--state is required")
	case !c.Flags().Changed("key"):
		return usageErrorf("--key is required")
	case o.delete == c.Flags().Changed("value"):
		return usageErrorf("give --value JSON or --delete")
	}
	return o.surgeryFlags.validate(c)
}
