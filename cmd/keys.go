package cmd

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/surgery"
)

type keysDeleteOptions struct {
	surgeryFlags
	operator       string
	keys           []string
	keysFrom       string
	namespace      string
	requirePresent bool
}

// maxKeysFile bounds the file of keys keys delete reads.
const maxKeysFile = 256 << 20

func newKeysCommand(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "keys",
		Short: "Delete keys in a copy of a snapshot",
		Long:  "Write a copy of a snapshot with keys removed from every keyed state of an operator.\n\n" + exitCodeHelp,
		Example: `  stateutil keys delete ./savepoint-1a2b --operator word-counter --key word-10 --output ./without-word-10
  stateutil keys delete ./savepoint-1a2b --operator sessions --keys-from poisoned.txt --output ./fixed`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageErrorf("keys needs a subcommand: delete")
		},
	}
	c.AddCommand(newKeysDeleteCommand(e))
	return c
}

func newKeysDeleteCommand(e *env) *cobra.Command {
	o := &keysDeleteOptions{}
	c := &cobra.Command{
		Use:   "delete SRC --operator UID (--key KEY ... | --keys-from FILE) --output DST",
		Short: "Write a copy of SRC without some keys of operator UID",
		Long: `Write a copy of SRC with the given keys removed from every keyed state of operator UID
(uid, id or name): values, lists, maps, reducing and aggregating state, TTL'd state, and
the keys' timers. A key goes in every namespace (window), unless --namespace narrows the
deletion to one; states without namespaces are then left alone.

Keys are written as get and dump print them: JSON ('"user-1"', 42, '["eu",42]' for a
Tuple2), or the plain text of a string key. --keys-from FILE (a path or URI) holds one
key per line, blank lines aside: the "key" field of dump's lines, for example
(stateutil dump SNAP --operator UID --state S | jq -c .key > keys.txt). Each key is
encoded with the key serializer of each state; a key that is not a value of the key type
exits 1 before anything is written.

Keys that no state holds are reported at the end: how many, and the first of them.
--require-present makes them an error (exit 3), and nothing is written; it needs the
copy in one process (no --plan-only or --yarn).

` + surgeryHelp + `

` + exitCodeHelp,
		Example: `  stateutil keys delete ./savepoint-1a2b --operator word-counter --key word-10 --key word-18 --output ./without-poison
  stateutil keys delete ./savepoint-1a2b --operator sessions --keys-from poisoned.txt --require-present --output ./fixed
  stateutil keys delete ./savepoint-1a2b --operator windows --key '"user-1"' --namespace '{"start":0,"end":60000}' --dry-run
  stateutil keys delete ./job/chk-3 --key-serializers-from ./savepoint-9f89f7 --operator 17_group-aggregate --key '["k1"]' --output ./without-k1`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			defer limitHeap()()
			keys := o.keys
			if o.keysFrom != "" {
				var err error
				if keys, err = readKeys(c, e, o.keysFrom); err != nil {
					return err
				}
			}
			return o.run(c, e, args[0], surgery.Edit{Op: surgery.DeleteKeys, Operator: o.operator, Keys: keys,
				Namespace: o.namespace, RequirePresent: o.requirePresent})
		},
		ValidArgsFunction: completeFiles,
	}
	f := c.Flags()
	f.StringVar(&o.operator, "operator", "", "the operator (uid, id or name)")
	f.StringArrayVar(&o.keys, "key", nil, "a key to delete, as get takes it (repeatable)")
	f.StringVar(&o.keysFrom, "keys-from", "", "a file of keys to delete, one per line")
	f.StringVar(&o.namespace, "namespace", "", "delete the keys in this namespace only, as get takes it")
	f.BoolVar(&o.requirePresent, "require-present", false, "fail (exit 3) and write nothing if a key is in no state")
	o.add(c, e)
	return c
}

func (o *keysDeleteOptions) validate(c *cobra.Command) error {
	switch {
	case o.operator == "":
		return usageErrorf("--operator is required")
	case len(o.keys) == 0 && o.keysFrom == "":
		return usageErrorf("give the keys to delete: --key KEY (repeatable) or --keys-from FILE")
	case len(o.keys) > 0 && o.keysFrom != "":
		return usageErrorf("--key and --keys-from exclude each other")
	case o.requirePresent && o.shard.active():
		return usageErrorf("--require-present needs the copy in one process: each shard reads only its part")
	}
	return o.surgeryFlags.validate(c)
}

// readKeys reads a file of keys, one per line; a line that is not UTF-8
// text is refused, naming the file and the line's offset.
func readKeys(c *cobra.Command, e *env, location string) ([]string, error) {
	st, p, err := e.reg.Storage.Resolve(c.Context(), location)
	if err != nil {
		return nil, err
	}
	data, err := storage.ReadAll(c.Context(), st, p, maxKeysFile)
	if err != nil {
		return nil, fmt.Errorf("--keys-from: %w", err)
	}
	var keys []string
	offset := 0
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		text := bytes.TrimSpace(line)
		if !utf8.Valid(text) {
			return nil, usageErrorf("--keys-from %q at offset %d: the line is not UTF-8 text", location, offset)
		}
		if len(text) > 0 {
			keys = append(keys, string(text))
		}
		offset += len(line) + 1
		data = rest
	}
	if len(keys) == 0 {
		return nil, usageErrorf("--keys-from %q holds no keys", location)
	}
	return keys, nil
}
