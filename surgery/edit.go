// Package surgery edits the state of a snapshot as it is copied: it drops
// and renames states and deletes keys. Apply wraps a snapshot.Reader, as
// snapshot.WithoutExpired does, so that the edit goes through the one
// copy pipeline (migrate) and works for every format written, with a
// rescale in the same run, in shards, on every storage.
package surgery

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadEdit reports an edit that cannot be made as asked: a key or
// namespace that is no value of the state's type, a state named for an
// edit of a kind it is not, an edit that changes nothing, a line of a
// load that is no record or does not fit the key it names. It is the
// user's to correct.
var ErrBadEdit = errors.New("bad edit")

// ErrConflict reports an edit that would give two states of an operator
// one name.
var ErrConflict = errors.New("conflicting state name")

// Op is what an edit does.
type Op string

// The edits.
const (
	// DropState removes a keyed or operator state: its descriptor and
	// every entry or element.
	DropState Op = "drop-state"
	// RenameState gives a keyed or operator state another name, keeping
	// its content.
	RenameState Op = "rename-state"
	// DeleteKeys removes keys from every keyed state of an operator
	// (values, lists, maps, timers), in every namespace or in one.
	DeleteKeys Op = "delete-keys"
	// Put sets one key's value in a keyed state: a value, a list's whole
	// list, a map's whole map or one map entry; or removes it.
	Put Op = "put"
	// Load puts or deletes the keys of records in dump's schema, each
	// key's whole value, in keyed states of any operator.
	Load Op = "load"
)

// Edit is one change to the state of an operator, as data (it travels in
// plan files).
type Edit struct {
	Op Op `json:"op"`
	// Operator is the operator's uid, id or name; none for Load, whose
	// records name theirs.
	Operator string `json:"operator,omitempty"`
	// State is the state to drop or rename; To its new name.
	State string `json:"state,omitempty"`
	To    string `json:"to,omitempty"`
	// Keys are the keys to delete, as get and dump print them (JSON, or
	// the text of a string key).
	Keys []string `json:"keys,omitempty"`
	// Namespace, when set, limits the deletion to that namespace, as get
	// takes it; states without namespaces are then left alone.
	Namespace string `json:"namespace,omitempty"`
	// RequirePresent makes keys that no state holds an error
	// (snapshot.ErrNotFound) rather than a finding of the report.
	RequirePresent bool `json:"require_present,omitempty"`
	// Value is what Put sets, as get prints it (JSON, or the text of a
	// string); MapKey, when set, names the one map entry it sets. Delete
	// removes the entry, or the key's whole value, instead.
	Value  string  `json:"value,omitempty"`
	MapKey *string `json:"map_key,omitempty"`
	Delete bool    `json:"delete,omitempty"`
	// Now is the last access Put and Load give a state with TTL, in Unix
	// milliseconds.
	Now int64 `json:"now,omitempty"`
	// From is where Load's records were read; Records are them, every
	// one (a plan file carries them: it is about the size of the file).
	From    string   `json:"from,omitempty"`
	Records []Record `json:"records,omitempty"`
}

func (e Edit) String() string {
	switch e.Op {
	case DropState:
		return fmt.Sprintf("drop state %q of operator %q", e.State, e.Operator)
	case RenameState:
		return fmt.Sprintf("rename state %q of operator %q to %q", e.State, e.Operator, e.To)
	case Put:
		what := "value"
		if e.MapKey != nil {
			what = fmt.Sprintf("map entry %s", *e.MapKey)
		}
		verb := "put"
		if e.Delete {
			verb = "delete"
		}
		return fmt.Sprintf("%s the %s of key %s in state %q of operator %q", verb, what, strings.Join(e.Keys, ""), e.State, e.Operator)
	case Load:
		if len(e.Records) == 1 {
			return fmt.Sprintf("load 1 record from %q", e.From)
		}
		return fmt.Sprintf("load %d records from %q", len(e.Records), e.From)
	case DeleteKeys:
		if len(e.Keys) == 1 {
			return fmt.Sprintf("delete key %s of operator %q", e.Keys[0], e.Operator)
		}
		return fmt.Sprintf("delete %d keys of operator %q", len(e.Keys), e.Operator)
	}
	return fmt.Sprintf("edit %q of operator %q", e.Op, e.Operator)
}

func badEditf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadEdit, fmt.Sprintf(format, args...))
}
