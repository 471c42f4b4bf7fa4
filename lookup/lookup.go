// Package lookup answers "what does the state hold for key X?": Get reads
// the one key group a key hashes to (a point read where the format has
// one), Dump streams every key of a snapshot in key-group order, and both
// render a key's entries as one Record: its value decoded by state kind.
package lookup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the Record JSON document.
const SchemaVersion = 1

// ErrKeyNotFound reports a key the state does not hold. It wraps
// snapshot.ErrNotFound.
var ErrKeyNotFound = fmt.Errorf("%w: key", snapshot.ErrNotFound)

// Record is one key of one state: what `stateutil get` prints and
// `stateutil dump` streams.
type Record struct {
	SchemaVersion int                `json:"schema_version"`
	Operator      string             `json:"operator"`
	State         string             `json:"state"`
	Kind          snapshot.StateKind `json:"kind"`
	Key           any                `json:"key"`
	Namespace     any                `json:"namespace,omitempty"`
	KeyGroup      int                `json:"key_group"`
	Subtask       int                `json:"subtask"`
	// Value is the value of a value, reducing or aggregating state, a
	// list's elements as an array, a map's entries as an object.
	Value any  `json:"value"`
	TTL   *TTL `json:"ttl,omitempty"`
}

// TTL is what a state with time-to-live records for a key.
type TTL struct {
	// ExpiresAt is when the value expires: for a list or a map, whose
	// elements expire one by one, the first of them.
	ExpiresAt time.Time `json:"expires_at"`
	// Expired tells whether it has at Now.
	Expired bool      `json:"expired"`
	Now     time.Time `json:"now"`
	// LastAccess is set instead of ExpiresAt and Expired for a state whose
	// TTL duration the snapshot does not record (snapshot.TTL.Unknown):
	// the last-access time stored with the value (the latest of a list's
	// or map's elements). Whether it expired cannot be told.
	LastAccess time.Time `json:"last_access,omitzero"`
}

// MarshalJSON leaves out expires_at and expired where they are unknown.
func (t TTL) MarshalJSON() ([]byte, error) {
	if !t.LastAccess.IsZero() {
		return json.Marshal(struct {
			LastAccess time.Time `json:"last_access"`
			Now        time.Time `json:"now"`
		}{t.LastAccess, t.Now})
	}
	type plain TTL
	return json.Marshal(plain(t))
}

// KeyReader is implemented by readers that find one key's entries without
// scanning its key group (a RocksDB point read).
type KeyReader interface {
	KeyEntries(ctx context.Context, op *snapshot.Operator, subtask int, kg int, state string, key, namespace []byte) ([]snapshot.Entry, error)
}

// Query names one key of one state.
type Query struct {
	Operator string // uid, name or id
	State    string
	// Key and Namespace are as a user writes them (see
	// snapshot.Codecs.EncodeKey); Namespace "" is the state's default
	// (Flink's VoidNamespace).
	Key, Namespace string
	Now            time.Time
}

// Get finds the entries of one key and renders them.
func Get(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, q Query) (*Record, error) {
	op, st, err := find(r.Snapshot(), q.Operator, q.State)
	if err != nil {
		return nil, err
	}
	key, err := codecs.EncodeKey(st.KeyType, q.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", snapshot.ErrUnsupportedVersion, err)
	}
	ns, err := namespace(codecs, st, q.Namespace)
	if err != nil {
		return nil, err
	}
	kg, err := codecs.KeyGroupOf(st.KeyType, key, op.MaxParallelism)
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", st.Name, err)
	}
	sub := subtaskOf(op, kg)
	if sub == nil {
		return nil, snapshot.Corrupt(op.Label(), -1, "no subtask owns key group %d", kg)
	}
	var entries []snapshot.Entry
	if kr, ok := r.(KeyReader); ok {
		entries, err = kr.KeyEntries(ctx, op, sub.Index, kg, st.Name, key, ns)
	} else {
		entries, err = scanKey(ctx, r, op, sub.Index, kg, st.Name, key, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w %q of state %q of operator %q (key group %d, subtask %d)", ErrKeyNotFound, q.Key, st.Name, op.Label(), kg, sub.Index)
	}
	return Render(codecs, op, st, sub.Index, entries, q.Now), nil
}

// namespace encodes a namespace as a user writes it; "" is the empty (void)
// namespace of states that have no other.
func namespace(codecs *snapshot.Codecs, st *snapshot.KeyedState, text string) ([]byte, error) {
	if text == "" {
		// VoidNamespace: whatever the type writes for no value.
		if b, err := codecs.EncodeKey(st.NamespaceType, "null"); err == nil {
			return b, nil
		}
		return nil, nil
	}
	b, err := codecs.EncodeKey(st.NamespaceType, text)
	if err != nil {
		return nil, fmt.Errorf("%w: namespace: %w", snapshot.ErrUnsupportedVersion, err)
	}
	return b, nil
}

// find resolves an operator label and a state name.
func find(s *snapshot.Snapshot, label, state string) (*snapshot.Operator, *snapshot.KeyedState, error) {
	op, ok := s.Operator(label)
	if !ok {
		var labels []string
		for _, o := range s.Operators {
			labels = append(labels, o.Label())
		}
		return nil, nil, fmt.Errorf("%w: no operator %q (operators: %s)", snapshot.ErrNotFound, label, strings.Join(labels, ", "))
	}
	st, ok := op.KeyedStateByName(state)
	if !ok {
		var names []string
		for _, k := range op.KeyedStates {
			names = append(names, k.Name)
		}
		return nil, nil, fmt.Errorf("%w: operator %q has no keyed state %q (keyed states: %s)", snapshot.ErrNotFound, op.Label(), state, strings.Join(names, ", "))
	}
	return op, st, nil
}

func subtaskOf(op *snapshot.Operator, kg int) *snapshot.Subtask {
	for _, sub := range op.Subtasks {
		if sub != nil && sub.KeyGroups.Contains(kg) {
			return sub
		}
	}
	return nil
}

// scanKey reads key group kg of a subtask for one key's entries.
func scanKey(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, subtask, kg int, state string, key, ns []byte) ([]snapshot.Entry, error) {
	var out []snapshot.Entry
	for e, err := range r.Entries(ctx, op, subtask, keygroup.Range{Start: kg, End: kg}) {
		if err != nil {
			return nil, err
		}
		if e.State == state && bytes.Equal(e.Key, key) && bytes.Equal(e.Namespace, ns) {
			out = append(out, e.Clone())
		}
	}
	return out, nil
}

// Render makes one key's entries (of one state and namespace, in the
// order the format stores them) a Record.
func Render(codecs *snapshot.Codecs, op *snapshot.Operator, st *snapshot.KeyedState, subtask int, entries []snapshot.Entry, now time.Time) *Record {
	e := entries[0]
	rec := &Record{SchemaVersion: SchemaVersion, Operator: op.Label(), State: st.Name, Kind: st.Kind,
		Key: codecs.Decode(st.KeyType, e.Key), KeyGroup: e.KeyGroup, Subtask: subtask}
	if len(e.Namespace) > 0 {
		if ns := codecs.Decode(st.NamespaceType, e.Namespace); ns != nil {
			rec.Namespace = ns
		}
	}
	switch st.Kind {
	case snapshot.List:
		values := make([]any, len(entries))
		for i, x := range entries {
			values[i] = codecs.Decode(st.ValueType, x.Value)
		}
		rec.Value = values
	case snapshot.Map:
		m := make(map[string]any, len(entries))
		for _, x := range entries {
			m[keyText(codecs.Decode(st.UserKeyType, x.UserKey))] = codecs.Decode(st.ValueType, x.Value)
		}
		rec.Value = m
	case snapshot.Timer:
		// A key may have several timers: each is an entry of its own.
		if len(entries) == 1 {
			rec.Value = codecs.Decode(st.ValueType, e.Value)
			break
		}
		values := make([]any, len(entries))
		for i, x := range entries {
			values[i] = codecs.Decode(st.ValueType, x.Value)
		}
		rec.Value = values
	default:
		rec.Value = codecs.Decode(st.ValueType, entries[len(entries)-1].Value)
	}
	if now.IsZero() {
		now = time.Now()
	}
	if st.TTL != nil && st.TTL.Unknown {
		var last int64
		for _, e := range entries {
			last = max(last, e.ExpiresAt)
		}
		if last != 0 {
			rec.TTL = &TTL{LastAccess: time.UnixMilli(last).UTC(), Now: now.UTC()}
		}
	} else if expires := firstExpiry(entries); expires != 0 {
		at := time.UnixMilli(expires).UTC()
		rec.TTL = &TTL{ExpiresAt: at, Expired: !now.Before(at), Now: now.UTC()}
	}
	return rec
}

func firstExpiry(entries []snapshot.Entry) int64 {
	var first int64
	for _, e := range entries {
		if e.ExpiresAt != 0 && (first == 0 || e.ExpiresAt < first) {
			first = e.ExpiresAt
		}
	}
	return first
}

// keyText renders a map key as a JSON object key: strings as they are,
// anything else as its JSON text.
func keyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return jsonText(v)
}

// Filter selects what Dump streams; zero fields select everything.
type Filter struct {
	Operator string // uid, name or id
	State    string
	// KeyGroups limits the key groups read; nil is all.
	KeyGroups *keygroup.Range
	// Subtask, when not negative, limits Dump to that subtask.
	Subtask int
	// KeyPrefix keeps keys whose text (a string key, or a key's JSON)
	// starts with it.
	KeyPrefix string
	Now       time.Time
}

// ErrStop, returned by Dump's callback, ends Dump early without error.
var ErrStop = errors.New("stop")

// Dump calls fn with every key of the selected states (and every timer:
// a key's timers are a record each), operator by operator and subtask by
// subtask, in key-group order, a key group at a time: it holds one key
// group's entries of one subtask at most.
func Dump(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, fn func(*Record) error) error {
	s := r.Snapshot()
	ops := s.Operators
	if f.Operator != "" {
		op, ok := s.Operator(f.Operator)
		if !ok {
			_, _, err := find(s, f.Operator, "")
			return err
		}
		ops = []*snapshot.Operator{op}
	}
	for _, op := range ops {
		states := map[string]*snapshot.KeyedState{}
		for i := range op.KeyedStates {
			if f.State == "" || op.KeyedStates[i].Name == f.State {
				states[op.KeyedStates[i].Name] = &op.KeyedStates[i]
			}
		}
		if f.State != "" && len(states) == 0 {
			if f.Operator != "" {
				_, _, err := find(s, f.Operator, f.State)
				return err
			}
			continue
		}
		for _, sub := range op.Subtasks {
			if sub == nil || (f.Subtask >= 0 && sub.Index != f.Subtask) || len(states) == 0 {
				continue
			}
			kgs := sub.KeyGroups
			if f.KeyGroups != nil {
				kgs = kgs.Intersect(*f.KeyGroups)
			}
			if kgs.Len() == 0 {
				continue
			}
			if err := dumpSubtask(ctx, r, codecs, op, sub.Index, kgs, states, f, fn); err != nil {
				if errors.Is(err, ErrStop) {
					return nil
				}
				return err
			}
		}
	}
	return nil
}

// group is one key's entries within a key group.
type group struct {
	st             *snapshot.KeyedState
	key, namespace []byte
	entries        []snapshot.Entry
}

func dumpSubtask(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, op *snapshot.Operator, subtask int, kgs keygroup.Range,
	states map[string]*snapshot.KeyedState, f Filter, fn func(*Record) error) error {
	cur := -1
	var groups []*group
	index := map[string]*group{}
	flush := func() error {
		slices.SortStableFunc(groups, func(a, b *group) int {
			return cmp.Or(strings.Compare(a.st.Name, b.st.Name), bytes.Compare(a.key, b.key), bytes.Compare(a.namespace, b.namespace))
		})
		for _, g := range groups {
			rec := Render(codecs, op, g.st, subtask, g.entries, f.Now)
			if f.KeyPrefix != "" && !strings.HasPrefix(keyText(rec.Key), f.KeyPrefix) {
				continue
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		groups, index = groups[:0], map[string]*group{}
		return nil
	}
	for e, err := range r.Entries(ctx, op, subtask, kgs) {
		if err != nil {
			return fmt.Errorf("operator %q subtask %d: %w", op.Label(), subtask, err)
		}
		st, ok := states[e.State]
		if !ok {
			continue
		}
		if e.KeyGroup != cur {
			if err := flush(); err != nil {
				return err
			}
			cur = e.KeyGroup
		}
		id := e.State + "\x00" + string(e.Key) + "\x00" + string(e.Namespace)
		if st.Kind == snapshot.Timer {
			id += "\x00" + string(e.Value) // one record per timer
		}
		g := index[id]
		if g == nil {
			c := e.Clone()
			g = &group{st: st, key: c.Key, namespace: c.Namespace}
			index[id] = g
			groups = append(groups, g)
		}
		g.entries = append(g.entries, e.Clone())
	}
	return flush()
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
