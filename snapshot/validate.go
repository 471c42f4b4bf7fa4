package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/stateutil/stateutil/keygroup"
)

// MaxStringBytes bounds every string a snapshot's metadata holds: operator
// ids, names and uids, state names, type names and classes, the job id and
// each property. Flink writes names with Java's writeUTF, whose length is
// 16 bits; a longer one is damage, and readers that decode strings refuse
// it before allocating for it.
const MaxStringBytes = 64 << 10

// Validate checks what every reader relies on and no reader, command or
// writer can make sense of otherwise, so that all of them refuse the same
// snapshots, as damage in file (its metadata):
//
//   - 0 < parallelism <= max parallelism <= 32768;
//   - one subtask per index 0..parallelism-1, in index order, each with the
//     key-group range Flink assigns it (keygroup.RangeOf);
//   - operator ids, and state names within an operator's keyed states and
//     within its operator states, that are unique;
//   - state kinds and operator-state modes that are known;
//   - strings of at most MaxStringBytes.
//
// Formats call it when they open a snapshot, before anything computes with
// its figures.
func Validate(s *Snapshot, file string) error {
	bad := func(format string, args ...any) error { return Corrupt(file, -1, format, args...) }
	if s == nil {
		return bad("no snapshot metadata")
	}
	if err := checkStrings("job id", s.JobID, "format", s.Format, "kind", string(s.Kind)); err != nil {
		return bad("%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if err := checkStrings("property name", k, fmt.Sprintf("property %q", short(k)), s.Properties[k]); err != nil {
			return bad("%v", err)
		}
	}
	ids := map[string]int{}
	for i, op := range s.Operators {
		if op == nil {
			return bad("operator %d is null", i)
		}
		if err := checkStrings("id", op.ID, "uid", op.UID, "name", op.Name); err != nil {
			return bad("operator %d: %v", i, err)
		}
		where := fmt.Sprintf("operator %q", short(op.Label()))
		if j, dup := ids[op.ID]; dup && op.ID != "" {
			return bad("%s: id %s is also operator %d's", where, op.ID, j)
		}
		ids[op.ID] = i
		if err := validateOperator(op); err != nil {
			return bad("%s: %v", where, err)
		}
	}
	return nil
}

func validateOperator(op *Operator) error {
	if err := keygroup.Check(op.Parallelism, op.MaxParallelism); err != nil {
		return err
	}
	if len(op.Subtasks) != op.Parallelism {
		return fmt.Errorf("parallelism %d but %d subtasks", op.Parallelism, len(op.Subtasks))
	}
	for i, sub := range op.Subtasks {
		switch {
		case sub == nil:
			return fmt.Errorf("subtask %d is null", i)
		case sub.Index != i:
			return fmt.Errorf("subtask %d is stored at position %d", sub.Index, i)
		}
		if want := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i); sub.KeyGroups != want {
			return fmt.Errorf("subtask %d has key groups %v, but Flink assigns it %v at parallelism %d of %d", i, sub.KeyGroups, want, op.Parallelism, op.MaxParallelism)
		}
	}
	keyed := map[string]bool{}
	for _, st := range op.KeyedStates {
		if err := checkStrings("keyed state name", st.Name); err != nil {
			return err
		}
		if keyed[st.Name] {
			return fmt.Errorf("keyed state %q declared twice", st.Name)
		}
		keyed[st.Name] = true
		if !st.Kind.Known() {
			return fmt.Errorf("keyed state %q: unknown kind %q", st.Name, short(string(st.Kind)))
		}
		for i, t := range []Type{st.KeyType, st.NamespaceType, st.UserKeyType, st.ValueType} {
			if err := checkType(t); err != nil {
				return fmt.Errorf("keyed state %q: %s: %w", st.Name, []string{"key type", "namespace type", "user key type", "value type"}[i], err)
			}
		}
	}
	oper := map[string]bool{}
	for _, st := range op.OperatorStates {
		if err := checkStrings("operator state name", st.Name); err != nil {
			return err
		}
		if oper[st.Name] {
			return fmt.Errorf("operator state %q declared twice", st.Name)
		}
		oper[st.Name] = true
		if !st.Mode.Known() {
			return fmt.Errorf("operator state %q: unknown mode %q", st.Name, short(string(st.Mode)))
		}
		if err := checkType(st.ElementType); err != nil {
			return fmt.Errorf("operator state %q: element type: %w", st.Name, err)
		}
	}
	return nil
}

func checkType(t Type) error {
	return checkStrings("name", t.Name, "class", t.Class)
}

// checkStrings takes pairs of what a string is and the string, and
// refuses the first longer than MaxStringBytes, naming it by what it is
// and its first bytes, never in full.
func checkStrings(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if s := pairs[i+1]; len(s) > MaxStringBytes {
			return fmt.Errorf("%s of %d bytes (%q) exceeds %d bytes", pairs[i], len(s), short(s), MaxStringBytes)
		}
	}
	return nil
}

// short is s for messages: cut to its first 64 bytes (at a rune
// boundary) and "..." when longer.
func short(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Known reports whether k is a state kind stateutil knows.
func (k StateKind) Known() bool {
	switch k {
	case Value, List, Map, Reducing, Aggregating, Folding, Timer:
		return true
	}
	return false
}

// Known reports whether m is one of Flink's operator-state modes.
func (m Mode) Known() bool {
	switch m {
	case Split, Union, Broadcast:
		return true
	}
	return false
}
