// Package diff compares two snapshots: operators added and removed,
// parallelism and max-parallelism changes, state descriptors added,
// removed and changed, per-state entry counts and, on request, the keys
// whose entries differ, streamed one key group at a time.
package diff

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the Result JSON document.
const SchemaVersion = 1

// Options choose how deep to compare.
type Options struct {
	// Entries compares keyed entries key by key and operator-state
	// elements value by value.
	Entries bool
	// MaxKeys bounds the keys listed per operator; 0 means 1000.
	MaxKeys int
	// TempDir is for re-hashing when max parallelism differs.
	TempDir string
	// Codecs decode the keys listed and re-hash them when max
	// parallelism differs.
	Codecs *snapshot.Codecs
	// Renamed pairs operators whose uid changed: a uid in A (or the id of
	// an operator without one) to its uid in B.
	Renamed map[string]string
	// Values adds the old and new values of every key listed (with
	// Entries); Now is when TTL expiry is judged (zero: now).
	Values bool
	Now    time.Time
	// SkipUnreadable compares without the state either snapshot has but
	// stateutil cannot read (listed in Result.Dropped); without it such a
	// snapshot is refused.
	SkipUnreadable bool
}

// Result is the comparison of snapshot A with snapshot B.
type Result struct {
	SchemaVersion    int            `json:"schema_version"`
	A                string         `json:"a"`
	B                string         `json:"b"`
	FormatA          string         `json:"format_a"`
	FormatB          string         `json:"format_b"`
	Equal            bool           `json:"equal"`
	Changes          []Change       `json:"changes"`
	OperatorsAdded   []OperatorRef  `json:"operators_added"`
	OperatorsRemoved []OperatorRef  `json:"operators_removed"`
	Operators        []OperatorDiff `json:"operators"`
	// DroppedA and DroppedB are the unreadable state left out of the
	// comparison (Options.SkipUnreadable).
	DroppedA []snapshot.UnreadablePart `json:"dropped_a"`
	DroppedB []snapshot.UnreadablePart `json:"dropped_b"`
}

// Change is one field whose value differs.
type Change struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// OperatorRef names an operator.
type OperatorRef struct {
	ID   string `json:"id"`
	UID  string `json:"uid"`
	Name string `json:"name"`
}

// Label is the uid, else the name, else the id.
func (o OperatorRef) Label() string {
	return (&snapshot.Operator{ID: o.ID, UID: o.UID, Name: o.Name}).Label()
}

// OperatorDiff compares one operator present in both snapshots.
type OperatorDiff struct {
	OperatorRef
	Equal         bool          `json:"equal"`
	Changes       []Change      `json:"changes"`
	StatesAdded   []StateRef    `json:"states_added"`
	StatesRemoved []StateRef    `json:"states_removed"`
	StatesChanged []StateChange `json:"states_changed"`
	Counts        []StateCount  `json:"counts"`
	// Keys and ElementsDiffer are filled with Options.Entries.
	Keys           []KeyDiff `json:"keys,omitempty"`
	KeysOmitted    int64     `json:"keys_omitted,omitempty"`
	ElementsDiffer []string  `json:"elements_differ,omitempty"`
	// EntriesNotCompared says why keys were not compared, if they were not.
	EntriesNotCompared string `json:"entries_not_compared,omitempty"`
}

// Scopes of a state.
const (
	Keyed         = "keyed"
	OperatorScope = "operator"
)

// StateRef names a state and says whether it is keyed or operator state.
type StateRef struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
}

// StateChange is one changed field of a state descriptor.
type StateChange struct {
	StateRef
	Change
}

// StateCount is a state's entries (keyed) or elements (operator) in each.
type StateCount struct {
	StateRef
	A int64 `json:"a"`
	B int64 `json:"b"`
}

// Key changes.
const (
	KeyAdded   = "added"   // only in B
	KeyRemoved = "removed" // only in A
	KeyChanged = "changed" // in both, with different entries
)

// KeyDiff is one key of one state whose entries differ.
type KeyDiff struct {
	State     string `json:"state"`
	KeyGroup  int    `json:"key_group"`
	Key       any    `json:"key"`
	Namespace any    `json:"namespace,omitempty"`
	Change    string `json:"change"`
	// Old and New are the key's values in A and B (Options.Values),
	// decoded as stateutil get shows them; absent where the key is.
	Old any `json:"old,omitempty"`
	New any `json:"new,omitempty"`
}

// Compare compares snapshot a (at location la) with b.
func Compare(ctx context.Context, la string, a snapshot.Reader, lb string, b snapshot.Reader, opts Options) (*Result, error) {
	var droppedA, droppedB []snapshot.UnreadablePart
	if opts.SkipUnreadable {
		a, droppedA = snapshot.WithoutUnreadable(a)
		b, droppedB = snapshot.WithoutUnreadable(b)
	} else {
		if err := snapshot.CheckReadable(a.Snapshot()); err != nil {
			return nil, fmt.Errorf("%s: %w", la, err)
		}
		if err := snapshot.CheckReadable(b.Snapshot()); err != nil {
			return nil, fmt.Errorf("%s: %w", lb, err)
		}
	}
	res, err := compare(ctx, la, a, lb, b, opts)
	if err != nil {
		return nil, err
	}
	res.DroppedA, res.DroppedB = nonNil(droppedA), nonNil(droppedB)
	return res, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func compare(ctx context.Context, la string, a snapshot.Reader, lb string, b snapshot.Reader, opts Options) (*Result, error) {
	sa, sb := a.Snapshot(), b.Snapshot()
	res := &Result{SchemaVersion: SchemaVersion, A: la, B: lb, FormatA: sa.Format, FormatB: sb.Format,
		Changes: []Change{}, OperatorsAdded: []OperatorRef{}, OperatorsRemoved: []OperatorRef{}, Operators: []OperatorDiff{}}
	changed(&res.Changes, "job_id", sa.JobID, sb.JobID)
	changed(&res.Changes, "checkpoint_id", strconv.FormatInt(sa.CheckpointID, 10), strconv.FormatInt(sb.CheckpointID, 10))
	changed(&res.Changes, "kind", string(sa.Kind), string(sb.Kind))
	for _, opA := range sa.Operators {
		opB := match(sb, opA, opts.Renamed)
		if opB == nil {
			res.OperatorsRemoved = append(res.OperatorsRemoved, ref(opA))
			continue
		}
		d, err := compareOperator(ctx, a, opA, b, opB, opts)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", opA.Label(), err)
		}
		res.Operators = append(res.Operators, *d)
	}
	back := map[string]string{}
	for a, b := range opts.Renamed {
		back[b] = a
	}
	for _, opB := range sb.Operators {
		if match(sa, opB, back) == nil {
			res.OperatorsAdded = append(res.OperatorsAdded, ref(opB))
		}
	}
	res.Equal = len(res.Changes) == 0 && len(res.OperatorsAdded) == 0 && len(res.OperatorsRemoved) == 0
	for _, d := range res.Operators {
		res.Equal = res.Equal && d.Equal
	}
	return res, nil
}

// match finds op's counterpart in s: by uid (renamed as renamed says)
// when op has one, else by id.
func match(s *snapshot.Snapshot, op *snapshot.Operator, renamed map[string]string) *snapshot.Operator {
	if to, ok := renamed[cmp.Or(op.UID, op.ID)]; ok {
		for _, o := range s.Operators {
			if o.UID == to || (o.UID == "" && o.ID == to) {
				return o
			}
		}
		return nil
	}
	for _, o := range s.Operators {
		if (op.UID != "" && o.UID == op.UID) || (op.UID == "" && o.UID == "" && o.ID == op.ID) {
			return o
		}
	}
	return nil
}

func ref(op *snapshot.Operator) OperatorRef {
	return OperatorRef{ID: op.ID, UID: op.UID, Name: op.Name}
}

func changed(out *[]Change, field, a, b string) {
	if a != b {
		*out = append(*out, Change{Field: field, A: a, B: b})
	}
}

func compareOperator(ctx context.Context, a snapshot.Reader, opA *snapshot.Operator, b snapshot.Reader, opB *snapshot.Operator, opts Options) (*OperatorDiff, error) {
	d := &OperatorDiff{OperatorRef: ref(opA), Changes: []Change{}, StatesAdded: []StateRef{}, StatesRemoved: []StateRef{},
		StatesChanged: []StateChange{}, Counts: []StateCount{}}
	changed(&d.Changes, "id", opA.ID, opB.ID)
	changed(&d.Changes, "name", opA.Name, opB.Name)
	changed(&d.Changes, "parallelism", strconv.Itoa(opA.Parallelism), strconv.Itoa(opB.Parallelism))
	changed(&d.Changes, "max_parallelism", strconv.Itoa(opA.MaxParallelism), strconv.Itoa(opB.MaxParallelism))
	compareDescriptors(d, opA, opB)
	if err := countStates(ctx, d, a, opA, b, opB); err != nil {
		return nil, err
	}
	if opts.Entries {
		if err := compareEntries(ctx, d, a, opA, b, opB, opts); err != nil {
			return nil, err
		}
		if err := compareElements(ctx, d, a, opA, b, opB); err != nil {
			return nil, err
		}
	}
	d.Equal = len(d.Changes) == 0 && len(d.StatesAdded) == 0 && len(d.StatesRemoved) == 0 && len(d.StatesChanged) == 0 &&
		len(d.Keys) == 0 && d.KeysOmitted == 0 && len(d.ElementsDiffer) == 0
	for _, c := range d.Counts {
		d.Equal = d.Equal && c.A == c.B
	}
	return d, nil
}

func compareDescriptors(d *OperatorDiff, opA, opB *snapshot.Operator) {
	for _, s := range opA.KeyedStates {
		t, ok := opB.KeyedStateByName(s.Name)
		if !ok {
			d.StatesRemoved = append(d.StatesRemoved, StateRef{s.Name, Keyed})
			continue
		}
		var cs []Change
		changed(&cs, "kind", string(s.Kind), string(t.Kind))
		changed(&cs, "key_type", s.KeyType.String(), t.KeyType.String())
		changed(&cs, "namespace_type", s.NamespaceType.String(), t.NamespaceType.String())
		changed(&cs, "user_key_type", s.UserKeyType.String(), t.UserKeyType.String())
		changed(&cs, "value_type", s.ValueType.String(), t.ValueType.String())
		changed(&cs, "ttl", ttl(s.TTL), ttl(t.TTL))
		for _, c := range cs {
			d.StatesChanged = append(d.StatesChanged, StateChange{StateRef{s.Name, Keyed}, c})
		}
	}
	for _, t := range opB.KeyedStates {
		if _, ok := opA.KeyedStateByName(t.Name); !ok {
			d.StatesAdded = append(d.StatesAdded, StateRef{t.Name, Keyed})
		}
	}
	for _, s := range opA.OperatorStates {
		t, ok := opB.OperatorStateByName(s.Name)
		if !ok {
			d.StatesRemoved = append(d.StatesRemoved, StateRef{s.Name, OperatorScope})
			continue
		}
		var cs []Change
		changed(&cs, "mode", string(s.Mode), string(t.Mode))
		changed(&cs, "element_type", s.ElementType.String(), t.ElementType.String())
		for _, c := range cs {
			d.StatesChanged = append(d.StatesChanged, StateChange{StateRef{s.Name, OperatorScope}, c})
		}
	}
	for _, t := range opB.OperatorStates {
		if _, ok := opA.OperatorStateByName(t.Name); !ok {
			d.StatesAdded = append(d.StatesAdded, StateRef{t.Name, OperatorScope})
		}
	}
}

func ttl(t *snapshot.TTL) string {
	if t == nil {
		return "none"
	}
	if t.Unknown {
		return "unknown"
	}
	return fmt.Sprintf("%dms %s %s", t.TTLMillis, t.Update, t.Visibility)
}
