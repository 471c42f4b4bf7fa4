// Package lookup answers "what does the state hold for key X?": Get reads
// the one key group a key hashes to (a point read where the format has
// one), Dump streams every key of a snapshot in key-group order, and both
// render a key's entries as one Record: its value decoded by state kind.
package lookup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/stateutil/stateutil/internal/arena"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the Record JSON document.
const SchemaVersion = 1

// ErrKeyNotFound reports a key the state does not hold. It wraps
// snapshot.ErrNotFound.
var ErrKeyNotFound = fmt.Errorf("%w: key", snapshot.ErrNotFound)

// QueryError is a query or filter that asks for what cannot be: a key or
// namespace that is not a value of the state's type, a namespace for a
// state without namespaces, key groups or a subtask that nothing dumped
// has. It is the user's to correct.
type QueryError struct{ err error }

func (e *QueryError) Error() string { return e.err.Error() }
func (e *QueryError) Unwrap() error { return e.err }

func queryErrorf(format string, args ...any) error {
	return &QueryError{fmt.Errorf(format, args...)}
}

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
	// nowText, where set, is Now as AppendJSON writes it.
	nowText []byte
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
		return nil, encodeError("key", st, err)
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
		return nil, encodeError("namespace", st, err)
	}
	// A namespace type without values (VoidNamespace) takes any text and
	// keeps nothing of it.
	if codec, err := codecs.Codec(st.NamespaceType); err == nil && text != "null" {
		if v, err := codec.Decode(b); err == nil && v == nil {
			return nil, queryErrorf("state %q has no namespace (its namespace type is %s), yet namespace %s was given", st.Name, st.NamespaceType, text)
		}
	}
	return b, nil
}

// encodeError is the error of a key or namespace that could not be
// encoded: the user's when the text is no value of the type, else a type
// stateutil cannot write.
func encodeError(what string, st *snapshot.KeyedState, err error) error {
	if errors.Is(err, snapshot.ErrBadValue) {
		return &QueryError{fmt.Errorf("%s of state %q: %w", what, st.Name, err)}
	}
	return fmt.Errorf("%w: %s of state %q: %w", snapshot.ErrUnsupportedVersion, what, st.Name, err)
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
	newRenderer(codecs, op, st, now, owned).render(&rec, subtask, entries)
	return &rec
}

// renderer renders the records of one state, its decoders resolved once.
type renderer struct {
	op                      *snapshot.Operator
	st                      *snapshot.KeyedState
	key, ns, userKey, value func([]byte) any
	now                     time.Time
	// shared renders a map's entries into members, reused from record to
	// record, instead of a map each.
	shared  bool
	members object
	// With scalars, the key, a map's user keys and the values are decoded
	// by the codecs' DecodeScalar where they have one: into slots, a
	// list's values into list, a map's non-string keys' text into text,
	// all reused from record to record, so that a record of scalars
	// allocates nothing. Only AppendJSON and AppendCSV take such records.
	keyS, userKeyS, valueS func([]byte) (snapshot.Scalar, bool)
	slots                  []snapshot.Scalar
	list                   []any
	text                   []byte
	// With scalars, msgpack values are written as JSON into text
	// where msgpackJSON can.
	msgpack *msgpackJSON
	// Shared records point into these rather than box a slice or a TTL
	// in an interface each: bytes-typed values (hex), JSON text, the TTL,
	// and the time the TTL is judged at, as AppendJSON writes it.
	hex     bool
	hexes   []hexBytes
	raws    []json.RawMessage
	ttl     TTL
	nowText []byte
}

// renderMode is what a renderer's records may share.
type renderMode int

const (
	owned   renderMode = iota // values of their own, for any caller
	shared                    // values may alias the entries' bytes
	scalars                   // shared, and scalars are decoded into the renderer's memory
)

// newRenderer resolves st's decoders.
func newRenderer(codecs *snapshot.Codecs, op *snapshot.Operator, st *snapshot.KeyedState, now time.Time, mode renderMode) *renderer {
	if now.IsZero() {
		now = time.Now()
	}
	r := &renderer{op: op, st: st, now: now, shared: mode != owned,
		key: codecs.Decoder(st.KeyType), ns: codecs.Decoder(st.NamespaceType),
		userKey: codecs.Decoder(st.UserKeyType), value: codecs.Decoder(st.ValueType)}
	if mode == scalars {
		r.keyS, r.userKeyS, r.valueS = codecs.ScalarDecoder(st.KeyType), codecs.ScalarDecoder(st.UserKeyType), codecs.ScalarDecoder(st.ValueType)
		if st.ValueType.Name == snapshot.TypeMsgpack {
			r.msgpack = &msgpackJSON{}
		}
	}
	if st.ValueType.Name == snapshot.TypeBytes && r.shared {
		// As Decoder shows them, without building the string.
		r.value, r.valueS, r.hex = func(b []byte) any { return hexBytes(b) }, nil, true
	}
	if r.shared {
		r.nowText = r.now.UTC().AppendFormat(nil, time.RFC3339Nano)
	}
	return r
}

// decode is dec's value of b, or where sd decodes it, a pointer to its
// Scalar in r.slots.
func (r *renderer) decode(sd func([]byte) (snapshot.Scalar, bool), dec func([]byte) any, b []byte) any {
	if sd != nil {
		if s, ok := sd(b); ok {
			// Growing slots leaves the earlier pointers on the old array,
			// which still holds their values.
			r.slots = append(r.slots, s)
			return &r.slots[len(r.slots)-1]
		}
	}
	return dec(b)
}

// decodeValue is a value as decode gives it, or a msgpack value's JSON
// text in r.text.
func (r *renderer) decodeValue(b []byte) any {
	// Growing hexes or raws leaves the earlier pointers on the old
	// array, as with slots.
	if r.hex {
		r.hexes = append(r.hexes, b)
		return &r.hexes[len(r.hexes)-1]
	}
	if r.msgpack != nil {
		start := len(r.text)
		if t, ok := r.msgpack.append(r.text, b); ok {
			r.text = t
			r.raws = append(r.raws, t[start:len(t):len(t)])
			return &r.raws[len(r.raws)-1]
		}
	}
	return r.decode(r.valueS, r.value, b)
}

// memberKey is a map's user key b as a JSON object key (see keyText).
func (r *renderer) memberKey(b []byte) string {
	if r.userKeyS != nil {
		if s, ok := r.userKeyS(b); ok {
			if s.Kind == snapshot.ScalarString {
				return unsafe.String(unsafe.SliceData(s.Str), len(s.Str))
			}
			start := len(r.text)
			r.text = appendScalar(r.text, &s)
			t := r.text[start:]
			return unsafe.String(unsafe.SliceData(t), len(t))
		}
	}
	return keyText(r.userKey(b))
}

func (r *renderer) render(rec *Record, subtask int, entries []snapshot.Entry) {
	e := entries[0]
	r.slots, r.text, r.hexes, r.raws = r.slots[:0], r.text[:0], r.hexes[:0], r.raws[:0]
	*rec = Record{SchemaVersion: SchemaVersion, Operator: r.op.Label(), State: r.st.Name, Kind: r.st.Kind,
		Key: r.decode(r.keyS, r.key, e.Key), KeyGroup: e.KeyGroup, Subtask: subtask}
	if len(e.Namespace) > 0 {
		if ns := r.ns(e.Namespace); ns != nil {
			rec.Namespace = ns
		}
	}
	switch r.st.Kind {
	case snapshot.List:
		if r.shared {
			r.list = r.list[:0]
			for _, x := range entries {
				r.list = append(r.list, r.decodeValue(x.Value))
			}
			rec.Value = &r.list
			break
		}
		values := make([]any, len(entries))
		for i, x := range entries {
			values[i] = r.value(x.Value)
		}
		rec.Value = values
	case snapshot.Map:
		if r.shared {
			r.members = r.members[:0]
			for _, x := range entries {
				r.members = append(r.members, member{r.memberKey(x.UserKey), r.decodeValue(x.Value)})
			}
			r.members.sortKeys()
			rec.Value = &r.members
			break
		}
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
		rec.Value = r.decodeValue(entries[len(entries)-1].Value)
	}
	if r.st.TTL != nil && r.st.TTL.Unknown {
		var last int64
		for _, x := range entries {
			last = max(last, x.ExpiresAt)
		}
		if last != 0 {
			rec.TTL = r.newTTL(TTL{LastAccess: time.UnixMilli(last).UTC(), Now: r.now.UTC()})
		}
	} else if expires := firstExpiry(entries); expires != 0 {
		at := time.UnixMilli(expires).UTC()
		rec.TTL = r.newTTL(TTL{ExpiresAt: at, Expired: !r.now.Before(at), Now: r.now.UTC()})
	}
}

// newTTL is t for a record: the renderer's own for a shared one.
func (r *renderer) newTTL(t TTL) *TTL {
	if !r.shared {
		return &t
	}
	r.ttl, r.ttl.nowText = t, r.nowText
	return &r.ttl
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
	switch x := v.(type) {
	case string:
		return x
	case *snapshot.Scalar:
		if x.Kind == snapshot.ScalarString {
			return string(x.Str)
		}
		return string(appendScalar(nil, x))
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
	jobs, err := plan(r.Snapshot(), &f)
	if err != nil {
		return err
	}
	var g keyGroup
	for _, j := range jobs {
		err := j.run(ctx, r, codecs, f, shared, &g, fn)
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

// plan lists what Dump reads, in the order it reads it, and sets f.Now
// where it is zero: every record is judged at the same time.
func plan(s *snapshot.Snapshot, f *Filter) ([]job, error) {
	if f.Now.IsZero() {
		f.Now = time.Now()
	}
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
	// What the operators dumped have, for a filter that selects nothing of
	// it: a state, key groups or a subtask no operator has is an error,
	// not an empty dump.
	var withState, keyGroups, subtasks []string
	hasKeyGroups, hasSubtask := f.KeyGroups == nil, f.Subtask < 0
	for _, op := range ops {
		states := map[string]*snapshot.KeyedState{}
		for i := range op.KeyedStates {
			if f.State == "" || op.KeyedStates[i].Name == f.State {
				states[op.KeyedStates[i].Name] = &op.KeyedStates[i]
			}
			withState = append(withState, op.Label()+"/"+op.KeyedStates[i].Name)
		}
		if len(states) == 0 {
			if f.State != "" && f.Operator != "" {
				_, _, err := find(s, f.Operator, f.State)
				return nil, err
			}
			continue
		}
		keyGroups = append(keyGroups, fmt.Sprintf("%s: 0-%d", op.Label(), op.MaxParallelism-1))
		subtasks = append(subtasks, fmt.Sprintf("%s: 0-%d", op.Label(), op.Parallelism-1))
		hasKeyGroups = hasKeyGroups || f.KeyGroups.Start < op.MaxParallelism
		hasSubtask = hasSubtask || f.Subtask < op.Parallelism
		for _, sub := range op.Subtasks {
			if sub == nil || (f.Subtask >= 0 && sub.Index != f.Subtask) {
				continue
			}
			kgs := sub.KeyGroups
			if f.KeyGroups != nil {
				kgs = kgs.Intersect(*f.KeyGroups)
			}
			for _, piece := range pieces(sub, kgs) {
				jobs = append(jobs, job{op: op, subtask: sub.Index, kgs: piece, states: states})
			}
		}
	}
	switch {
	case f.State != "" && keyGroups == nil:
		return nil, fmt.Errorf("%w: no operator has keyed state %q (keyed states: %s)", snapshot.ErrNotFound, f.State, strings.Join(withState, ", "))
	case keyGroups != nil && !hasKeyGroups:
		return nil, queryErrorf("key groups %d-%d: no operator dumped has them (key groups: %s)", f.KeyGroups.Start, f.KeyGroups.End, strings.Join(keyGroups, ", "))
	case keyGroups != nil && !hasSubtask:
		return nil, queryErrorf("subtask %d: no operator dumped has it (subtasks: %s)", f.Subtask, strings.Join(subtasks, ", "))
	}
	return jobs, nil
}

// pieceBytes is about how much state one job of a subtask reads where
// the metadata records each key group's size; elsewhere a subtask is cut
// into piecesPerSubtask jobs. Stream reads jobs in parallel, each at most
// chunksAhead chunks ahead of the writer: jobs much larger than that
// would leave all but one goroutine waiting.
const (
	pieceBytes       = 4 << 20
	piecesPerSubtask = 16
)

// pieces cuts the key groups kgs of sub into consecutive ranges, the
// jobs of a dump.
func pieces(sub *snapshot.Subtask, kgs keygroup.Range) []keygroup.Range {
	if kgs.Len() <= 0 {
		return nil
	}
	var out []keygroup.Range
	start := kgs.Start
	if sub.KeyGroupStats != nil {
		var bytes int64
		for _, g := range sub.KeyGroupStats {
			if g.KeyGroup < start || g.KeyGroup >= kgs.End {
				continue
			}
			if bytes += g.Bytes; bytes >= pieceBytes {
				out = append(out, keygroup.Range{Start: start, End: g.KeyGroup})
				start, bytes = g.KeyGroup+1, 0
			}
		}
		return append(out, keygroup.Range{Start: start, End: kgs.End})
	}
	step := max(1, (kgs.Len()+piecesPerSubtask-1)/piecesPerSubtask)
	for ; start <= kgs.End; start += step {
		out = append(out, keygroup.Range{Start: start, End: min(start+step-1, kgs.End)})
	}
	return out
}

// keyGroup holds one key group's entries: their keys and namespaces in
// one arena and, unless the reader holds them (held), their user keys and
// values in another, both reused from key group to key group.
type keyGroup struct {
	keys    arena.Arena // the entries' keys and namespaces
	values  arena.Arena // their user keys and values, unless held
	held    bool        // the entries' bytes stay valid until the key group is flushed
	entries []snapshot.Entry
	states  []string         // the key group's states, by name
	order   []sortKey        // the entries' sort keys, then their order
	radix   []sortKey        // where radixSort's passes put them
	sorted  []snapshot.Entry // the entries in order
	bytes   int              // about the memory the entries take
	spill   *spill           // the sorted runs written, once bytes went over spillBytes
}

// sortKey is what ordering an entry compares first, packed so that most
// comparisons read no more than two of these: its state's rank among the
// key group's states, the first eight bytes of its key as a number
// (zero-padded, so that keys that differ there compare as their bytes
// do), and its index among the entries, which settles the rest.
type sortKey struct {
	prefix uint64
	state  int32
	index  int32
}

func (g *keyGroup) reset() {
	g.clear()
	if g.spill != nil {
		g.spill.close()
		g.spill = nil
	}
}

// clear drops the entries held in memory.
func (g *keyGroup) clear() {
	g.keys.Reset()
	g.values.Reset()
	g.entries = g.entries[:0]
	g.bytes = 0
}

// inOrder returns the entries by (state, key, namespace), in the order
// they were added among equals. Entries that come in that order already
// (RocksDB's column families, one state after another in name order) are
// returned as they are; others (heap state maps, and states in another
// order) are sorted by their packed sort keys, which hold no pointers
// and lie together: comparing entries through their indexes cost a
// cache miss or two at every step.
func (g *keyGroup) inOrder() []snapshot.Entry {
	es := g.entries
	ordered := true
	for i := 1; i < len(es) && ordered; i++ {
		c := strings.Compare(es[i-1].State, es[i].State)
		ordered = c < 0 || c == 0 && compareStored(&es[i-1], &es[i]) <= 0
	}
	if ordered {
		return es
	}
	g.order = slices.Grow(g.order[:0], len(es))
	state := g.rankStates()
	for i := range es {
		if i > 0 && es[i].State != es[i-1].State {
			state = g.rank(es[i].State)
		}
		g.order = append(g.order, sortKey{prefix: prefix8(es[i].Key), state: state, index: int32(i)})
	}
	g.radixSort()
	// Entries whose states and first eight bytes tie are in the order
	// they were added, and are ordered by the rest of their keys and
	// their namespaces, stably.
	for i := 0; i < len(g.order); {
		k := i + 1
		for k < len(g.order) && g.order[k].state == g.order[i].state && g.order[k].prefix == g.order[i].prefix {
			k++
		}
		if k-i > 1 {
			slices.SortStableFunc(g.order[i:k], func(a, b sortKey) int { return compareStored(&es[a.index], &es[b.index]) })
		}
		i = k
	}
	g.sorted = slices.Grow(g.sorted[:0], len(es))
	for _, k := range g.order {
		g.sorted = append(g.sorted, es[k.index])
	}
	return g.sorted
}

// radixSort orders g.order by state, then prefix, stably: a
// least-significant-digit radix sort by byte, which passes over the
// bytes that all keys share (most of a Long's, most of a state's rank).
func (g *keyGroup) radixSort() {
	src := g.order
	g.radix = slices.Grow(g.radix[:0], len(src))
	dst := g.radix[:len(src)]
	digit := func(k sortKey, d int) byte {
		if d < 8 {
			return byte(k.prefix >> (8 * d))
		}
		return byte(uint32(k.state) >> (8 * (d - 8)))
	}
	for d := range 12 {
		var count [256]int
		for _, k := range src {
			count[digit(k, d)]++
		}
		if count[digit(src[0], d)] == len(src) {
			continue
		}
		at := 0
		for b, n := range count {
			count[b] = at
			at += n
		}
		for _, k := range src {
			b := digit(k, d)
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &g.order[0] {
		copy(g.order, src)
	}
}

// rankStates lists the key group's states in g.states, sorted, and
// returns the rank of the first entry's.
func (g *keyGroup) rankStates() int32 {
	g.states = g.states[:0]
	for i := range g.entries {
		if i == 0 || g.entries[i].State != g.entries[i-1].State {
			if !slices.Contains(g.states, g.entries[i].State) {
				g.states = append(g.states, g.entries[i].State)
			}
		}
	}
	slices.Sort(g.states)
	return g.rank(g.entries[0].State)
}

func (g *keyGroup) rank(state string) int32 {
	i, _ := slices.BinarySearch(g.states, state)
	return int32(i)
}

// prefix8 is the first eight bytes of b as a big-endian number, padded
// with zeros.
func prefix8(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var p [8]byte
	copy(p[:], b)
	return binary.BigEndian.Uint64(p[:])
}

// compareStored orders two entries of one state by key, then namespace.
func compareStored(a, b *snapshot.Entry) int {
	if c := compareBytes(a.Key, b.Key); c != 0 {
		return c
	}
	return compareBytes(a.Namespace, b.Namespace)
}

// compareBytes is bytes.Compare, the first eight bytes compared as one
// number: most keys are that long or longer (a Long, a String's length
// and first characters), and ordering a key group compares them many
// times over.
func compareBytes(a, b []byte) int {
	if len(a) >= 8 && len(b) >= 8 {
		if x, y := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b); x != y {
			return cmp.Compare(x, y)
		}
		a, b = a[8:], b[8:]
	}
	return bytes.Compare(a, b)
}

// add keeps e; past spillBytes, the entries kept are written to the
// spill file as a sorted run.
func (g *keyGroup) add(e *snapshot.Entry) error {
	c := *e
	// Keys and namespaces, which ordering compares, lie together apart
	// from the values.
	c.Key, c.Namespace = g.keys.Keep(e.Key), g.keys.Keep(e.Namespace)
	g.bytes += len(e.Key) + len(e.Namespace) + entryFootprint
	if !g.held {
		c.UserKey, c.Value = g.values.Keep(e.UserKey), g.values.Keep(e.Value)
		g.bytes += len(e.UserKey) + len(e.Value)
	}
	g.entries = append(g.entries, c)
	if g.bytes < spillBytes {
		return nil
	}
	return g.spillRun()
}

// spillRun writes the entries kept to the spill file, in order, and
// drops them.
func (g *keyGroup) spillRun() error {
	if g.spill == nil {
		sp, err := newSpill()
		if err != nil {
			return err
		}
		g.spill = sp
	}
	if err := g.spill.write(g.inOrder()); err != nil {
		return err
	}
	g.clear()
	return nil
}

// groups calls emit with the key group's entries in order (see inOrder),
// a group of entries that belong together at a time, then drops them.
func (g *keyGroup) groups(together func(a, b *snapshot.Entry) bool, emit func([]snapshot.Entry) error) error {
	defer g.reset()
	if g.spill != nil {
		if err := g.spillRun(); err != nil {
			return err
		}
		return g.spill.merge(together, emit)
	}
	es := g.inOrder()
	for i := 0; i < len(es); {
		k := i + 1
		for k < len(es) && together(&es[i], &es[k]) {
			k++
		}
		if err := emit(es[i:k]); err != nil {
			return err
		}
		i = k
	}
	return nil
}

// run dumps the job, calling fn with each record; g is scratch space,
// kept from job to job.
func (j job) run(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, mode renderMode, g *keyGroup, fn func(rec *Record) error) error {
	renderers := map[*snapshot.KeyedState]*renderer{}
	for _, st := range j.states {
		renderers[st] = newRenderer(codecs, j.op, st, f.Now, mode)
	}
	// Records come a state at a time: the last state's renderer is
	// looked up once, not per record.
	var lastState *snapshot.KeyedState
	var last *renderer
	var rec Record
	return j.groups(ctx, r, g, func(st *snapshot.KeyedState, run []snapshot.Entry) error {
		if st != lastState {
			lastState, last = st, renderers[st]
		}
		last.render(&rec, j.subtask, run)
		if f.KeyPrefix != "" && !strings.HasPrefix(keyText(rec.Key), f.KeyPrefix) {
			return nil
		}
		return fn(&rec)
	})
}

// groups reads the job a key group at a time and calls emit with each
// record's entries (a key's of one state; a timer's of one time), in
// Dump's order; g is scratch space, kept from job to job. The entries are
// valid until emit returns.
func (j job) groups(ctx context.Context, r snapshot.Reader, g *keyGroup, emit func(st *snapshot.KeyedState, run []snapshot.Entry) error) error {
	// Entries come a state at a time: the last state is looked up once,
	// not per entry.
	var lastState string
	var last *snapshot.KeyedState
	stateOf := func(name string) *snapshot.KeyedState {
		if last == nil || name != lastState {
			lastState, last = name, j.states[name]
		}
		return last
	}
	g.reset()
	defer g.reset()
	cur := -1
	together := func(a, b *snapshot.Entry) bool {
		return sameKey(a, b) && (stateOf(a.State).Kind != snapshot.Timer || bytes.Equal(a.Value, b.Value))
	}
	flush := func() error {
		return g.groups(together, func(run []snapshot.Entry) error { return emit(stateOf(run[0].State), run) })
	}
	entries := r.Entries
	h, held := r.(snapshot.KeyGroupHolder)
	if held {
		entries = h.HeldEntries
	}
	g.held = held
	for e, err := range entries(ctx, j.op, j.subtask, j.kgs) {
		if err != nil {
			return fmt.Errorf("operator %q subtask %d: %w", j.op.Label(), j.subtask, err)
		}
		if held && e.KeyGroup < 0 { // the end: the last key group is valid until this returns
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		if stateOf(e.State) == nil {
			continue
		}
		if e.KeyGroup != cur {
			if err := flush(); err != nil {
				return err
			}
			cur = e.KeyGroup
		}
		if err := g.add(&e); err != nil {
			return err
		}
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

// ParseNow reads a time TTL expiry is judged at: RFC 3339, or Unix
// milliseconds; "" is now.
func ParseNow(s string) (time.Time, error) {
	if s == "" {
		return time.Now(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, queryErrorf("%q: want RFC 3339 (2026-01-02T03:04:05Z) or Unix milliseconds", s)
	}
	return t, nil
}
