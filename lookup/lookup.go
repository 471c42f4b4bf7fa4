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
	if err := unreadable(op, st.Name, sub.Index); err != nil {
		return nil, err
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
		// A state the reader could not read may be missing from the
		// descriptors too: it is unreadable, not absent.
		if err := unreadable(op, state, -1); err != nil {
			return nil, nil, err
		}
		var names []string
		for _, k := range op.KeyedStates {
			names = append(names, k.Name)
		}
		return nil, nil, fmt.Errorf("%w: operator %q has no keyed state %q (keyed states: %s)", snapshot.ErrNotFound, op.Label(), state, strings.Join(names, ", "))
	}
	return op, st, nil
}

// unreadable is the error for keyed state of op that the reader marked
// unreadable in subtask sub (any subtask when sub < 0), or nil: a key of
// such a state is neither found nor not found.
func unreadable(op *snapshot.Operator, state string, sub int) error {
	for _, s := range op.Subtasks {
		if s == nil || (sub >= 0 && s.Index != sub) {
			continue
		}
		for _, u := range s.Unreadable {
			if u.Scope != snapshot.ScopeKeyed || (u.State != "" && u.State != state) {
				continue
			}
			return &snapshot.UnreadableError{Damaged: u.Damaged, Message: fmt.Sprintf("operator %q subtask %d: %s", op.Label(), s.Index, u)}
		}
	}
	return nil
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
	var rec Record
	newRenderer(codecs, op, st, now, false).render(&rec, subtask, entries)
	return &rec
}

// renderer renders the records of one state, its decoders resolved once.
type renderer struct {
	op                      *snapshot.Operator
	st                      *snapshot.KeyedState
	key, ns, userKey, value func([]byte) any
	now                     time.Time
}

// newRenderer resolves st's decoders; shared lets the values it renders
// share the entries' bytes.
func newRenderer(codecs *snapshot.Codecs, op *snapshot.Operator, st *snapshot.KeyedState, now time.Time, shared bool) *renderer {
	if now.IsZero() {
		now = time.Now()
	}
	r := &renderer{op: op, st: st, now: now,
		key: codecs.Decoder(st.KeyType), ns: codecs.Decoder(st.NamespaceType),
		userKey: codecs.Decoder(st.UserKeyType), value: codecs.Decoder(st.ValueType)}
	if st.ValueType.Name == snapshot.TypeBytes && shared {
		// As Decoder shows them, without building the string.
		r.value = func(b []byte) any { return hexBytes(b) }
	}
	return r
}

func (r *renderer) render(rec *Record, subtask int, entries []snapshot.Entry) {
	e := entries[0]
	*rec = Record{SchemaVersion: SchemaVersion, Operator: r.op.Label(), State: r.st.Name, Kind: r.st.Kind,
		Key: r.key(e.Key), KeyGroup: e.KeyGroup, Subtask: subtask}
	if len(e.Namespace) > 0 {
		if ns := r.ns(e.Namespace); ns != nil {
			rec.Namespace = ns
		}
	}
	switch r.st.Kind {
	case snapshot.List:
		values := make([]any, len(entries))
		for i, x := range entries {
			values[i] = r.value(x.Value)
		}
		rec.Value = values
	case snapshot.Map:
		m := make(map[string]any, len(entries))
		for _, x := range entries {
			m[keyText(r.userKey(x.UserKey))] = r.value(x.Value)
		}
		rec.Value = m
	case snapshot.Timer:
		// A key may have several timers: each is an entry of its own.
		if len(entries) == 1 {
			rec.Value = r.value(e.Value)
			break
		}
		values := make([]any, len(entries))
		for i, x := range entries {
			values[i] = r.value(x.Value)
		}
		rec.Value = values
	default:
		rec.Value = r.value(entries[len(entries)-1].Value)
	}
	if r.st.TTL != nil && r.st.TTL.Unknown {
		var last int64
		for _, x := range entries {
			last = max(last, x.ExpiresAt)
		}
		if last != 0 {
			rec.TTL = &TTL{LastAccess: time.UnixMilli(last).UTC(), Now: r.now.UTC()}
		}
	} else if expires := firstExpiry(entries); expires != 0 {
		at := time.UnixMilli(expires).UTC()
		rec.TTL = &TTL{ExpiresAt: at, Expired: !r.now.Before(at), Now: r.now.UTC()}
	}
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
// a key's timers are a record each), operator by
// operator and subtask by subtask, in key-group order, a key group at a
// time: it holds one key group's entries of one subtask at most. The
// record and its values are valid until fn returns.
func Dump(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, fn func(*Record) error) error {
	jobs, err := plan(r.Snapshot(), f)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		err := j.run(ctx, r, codecs, f, fn)
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// job is one subtask of one operator to dump.
type job struct {
	op      *snapshot.Operator
	subtask int
	kgs     keygroup.Range
	states  map[string]*snapshot.KeyedState
}

// plan lists what Dump reads, in the order it reads it.
func plan(s *snapshot.Snapshot, f Filter) ([]job, error) {
	ops := s.Operators
	if f.Operator != "" {
		op, ok := s.Operator(f.Operator)
		if !ok {
			_, _, err := find(s, f.Operator, "")
			return nil, err
		}
		ops = []*snapshot.Operator{op}
	}
	var jobs []job
	for _, op := range ops {
		states := map[string]*snapshot.KeyedState{}
		for i := range op.KeyedStates {
			if f.State == "" || op.KeyedStates[i].Name == f.State {
				states[op.KeyedStates[i].Name] = &op.KeyedStates[i]
			}
		}
		if len(states) == 0 {
			if f.State != "" && f.Operator != "" {
				_, _, err := find(s, f.Operator, f.State)
				return nil, err
			}
			continue
		}
		for _, sub := range op.Subtasks {
			if sub == nil || (f.Subtask >= 0 && sub.Index != f.Subtask) {
				continue
			}
			kgs := sub.KeyGroups
			if f.KeyGroups != nil {
				kgs = kgs.Intersect(*f.KeyGroups)
			}
			if kgs.Len() > 0 {
				jobs = append(jobs, job{op: op, subtask: sub.Index, kgs: kgs, states: states})
			}
		}
	}
	return jobs, nil
}

// keyGroup holds one key group's entries, their bytes in one arena that
// is reused from key group to key group.
type keyGroup struct {
	arena   []byte
	entries []snapshot.Entry
	order   []int // entries by (state, key, namespace), stable
}

func (g *keyGroup) reset() { g.arena, g.entries, g.order = g.arena[:0], g.entries[:0], g.order[:0] }

func (g *keyGroup) add(e *snapshot.Entry) {
	keep := func(b []byte) []byte {
		start := len(g.arena)
		g.arena = append(g.arena, b...)
		return g.arena[start:len(g.arena):len(g.arena)]
	}
	// When the arena grows, earlier entries keep the old one alive.
	c := *e
	c.Key, c.Namespace, c.UserKey, c.Value = keep(e.Key), keep(e.Namespace), keep(e.UserKey), keep(e.Value)
	g.entries = append(g.entries, c)
}

// run dumps the job, calling fn with each record.
func (j job) run(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, fn func(rec *Record) error) error {
	renderers := map[string]*renderer{}
	for name, st := range j.states {
		renderers[name] = newRenderer(codecs, j.op, st, f.Now, true)
	}
	var g keyGroup
	cur := -1
	var rec Record
	flush := func() error {
		es := g.entries
		g.order = g.order[:0]
		for i := range es {
			g.order = append(g.order, i)
		}
		slices.SortStableFunc(g.order, func(a, b int) int {
			return cmp.Or(strings.Compare(es[a].State, es[b].State), bytes.Compare(es[a].Key, es[b].Key), bytes.Compare(es[a].Namespace, es[b].Namespace))
		})
		var run []snapshot.Entry
		for i := 0; i < len(g.order); {
			first := &es[g.order[i]]
			k := i + 1
			timer := renderers[first.State].st.Kind == snapshot.Timer
			for k < len(g.order) && sameKey(first, &es[g.order[k]]) && (!timer || bytes.Equal(first.Value, es[g.order[k]].Value)) {
				k++
			}
			run = run[:0]
			for _, x := range g.order[i:k] {
				run = append(run, es[x])
			}
			i = k
			renderers[first.State].render(&rec, j.subtask, run)
			if f.KeyPrefix != "" && !strings.HasPrefix(keyText(rec.Key), f.KeyPrefix) {
				continue
			}
			if err := fn(&rec); err != nil {
				return err
			}
		}
		g.reset()
		return nil
	}
	for e, err := range r.Entries(ctx, j.op, j.subtask, j.kgs) {
		if err != nil {
			return fmt.Errorf("operator %q subtask %d: %w", j.op.Label(), j.subtask, err)
		}
		if _, ok := j.states[e.State]; !ok {
			continue
		}
		if e.KeyGroup != cur {
			if err := flush(); err != nil {
				return err
			}
			cur = e.KeyGroup
		}
		g.add(&e)
	}
	return flush()
}

func sameKey(a, b *snapshot.Entry) bool {
	return a.State == b.State && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Namespace, b.Namespace)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
