package flink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// The changelog state backend checkpoints a subtask's keyed state as a
// materialized part (a heap or RocksDB snapshot, possibly none) plus the
// state changes logged since, in order. Reading it means what Flink's
// restore does: load the materialized part, then apply every change.
//
// A change is one record, tagged with its key group: an operation byte, then
// either a state's meta info (METADATA, registering the short id the data
// records use) or a short state id, the scope (key and namespace, for keyed
// value states) and the operation's data. Changelog files (handle types 10
// and 13) hold change sets at the offsets the handle lists; a file is one
// flag byte (1: the rest is Snappy framed) and the change sets. A change set
// is an int group count, then per group an int change count, an int key
// group and that many length-prefixed records.

// Change operations by their stored code (StateChangeOperation, Flink 1.15+).
const (
	opClear              = 0
	opSet                = 1
	opSetInternal        = 2
	opAdd                = 3
	opMergeNamespaces    = 4
	opAddElement         = 5
	opAddOrUpdateElement = 6
	opRemoveElement      = 7
	opMetadata           = 8
)

var opNames = []string{"CLEAR", "SET", "SET_INTERNAL", "ADD", "MERGE_NS", "ADD_ELEMENT", "ADD_OR_UPDATE_ELEMENT", "REMOVE_ELEMENT", "METADATA"}

// stateChange is one logged change and where its bytes are.
type stateChange struct {
	kg   int
	data []byte
	file string
	base int64
}

// pendingChanges says whether a keyed handle carries changes not yet
// materialized.
func pendingChanges(h *KeyedHandle) bool {
	return h != nil && h.Changelog != nil && len(h.Changelog.NonMaterialized) > 0
}

// listChanges lists a changelog handle's non-materialized changes in the order
// Flink applies them.
func listChanges(ctx context.Context, res *Resolver, h *ChangelogHandle) ([]stateChange, error) {
	var out []stateChange
	files := map[string]*changelogFile{}
	for _, nm := range h.NonMaterialized {
		switch {
		case nm.ChangelogBytes != nil:
			for i, c := range nm.ChangelogBytes.Changes {
				out = append(out, stateChange{kg: int(c.KeyGroup), data: c.Data, file: fmt.Sprintf("%s (inline change %d)", res.MetadataFile, i)})
			}
		case nm.ChangelogFiles != nil:
			for _, oh := range nm.ChangelogFiles.Handles {
				f, err := readChangelogFile(ctx, res, oh.Handle, files)
				if err != nil {
					return nil, err
				}
				cs, ok := f.sets[oh.Offset]
				if !ok {
					return nil, &CorruptError{File: f.file, Offset: f.base + max(0, min(oh.Offset, int64(len(f.data)))),
						Reason: fmt.Sprintf("_metadata lists a change set at offset %d, where none starts", oh.Offset)}
				}
				out = append(out, cs...)
			}
		default:
			return nil, fmt.Errorf("%s handle inside a changelog handle: %w", nm.Type, ErrUnsupportedVersion)
		}
	}
	return out, nil
}

// changelogFile is a changelog file's stream, decompressed, and its
// change sets by offset: the stream is change sets end to end.
type changelogFile struct {
	data []byte
	file string
	base int64 // offset of data[0] in the file (0 when decompressed)
	sets map[int64][]stateChange
}

// readChangelogFile reads the changelog file of h once per cache.
func readChangelogFile(ctx context.Context, res *Resolver, h *StreamHandle, cache map[string]*changelogFile) (*changelogFile, error) {
	if h == nil {
		return nil, fmt.Errorf("changelog handle without a stream: %w", ErrCorrupt)
	}
	key := h.Path
	if key == "" {
		key = fmt.Sprintf("inline@%d", h.DataOffset)
	}
	if f, ok := cache[key]; ok {
		return f, nil
	}
	// A file handle's size counts the stream after the flag byte, as
	// written before compression: it is checked below, not against the file.
	declared := *h
	if h.Type == HandleFile || h.Type == HandleRelativeFile {
		declared.Size = 0
	}
	data, file, base, err := res.Bytes(ctx, &declared)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, &CorruptError{File: file, Offset: base, Reason: "empty changelog file (no compression flag)"}
	}
	f := &changelogFile{data: data[1:], file: file, base: base + 1}
	switch data[0] {
	case 0:
	case 1:
		if f.data, err = unsnappy(data[1:], file, base+1); err != nil {
			return nil, err
		}
		f.file, f.base = file+" (Snappy-decompressed stream)", 0
	default:
		return nil, &CorruptError{File: file, Offset: base, Reason: fmt.Sprintf("changelog compression flag %d, want 0 or 1", data[0])}
	}
	if (h.Type == HandleFile || h.Type == HandleRelativeFile) && h.Size > 0 && int64(len(f.data)) != h.Size {
		return nil, &CorruptError{File: file, Offset: base + 1, Reason: fmt.Sprintf("changelog stream is %d bytes, _metadata says %d", len(f.data), h.Size)}
	}
	if err := f.split(); err != nil {
		return nil, err
	}
	cache[key] = f
	return f, nil
}

// split reads the stream's change sets, end to end.
func (f *changelogFile) split() error {
	f.sets = map[int64][]stateChange{}
	for off := int64(0); off < int64(len(f.data)); {
		cs, n, err := f.changeSet(off)
		if err != nil {
			return err
		}
		f.sets[off] = cs
		off += n
	}
	return nil
}

// changeSet reads the change set at offset of the (decompressed) stream
// and says how long it is.
func (f *changelogFile) changeSet(offset int64) ([]stateChange, int64, error) {
	r := newReader(f.data[offset:], f.file, f.base+offset)
	var out []stateChange
	groups := r.count32(8, "change set group count")
	for g := 0; g < groups && r.err == nil; g++ {
		n := r.count32(4, "change count")
		kg := int(r.i32("change key group"))
		for i := 0; i < n && r.err == nil; i++ {
			at := r.pos() + 4
			if b := r.bytes32("state change"); r.err == nil {
				out = append(out, stateChange{kg: kg, data: b, file: f.file, base: at})
			}
		}
	}
	return out, int64(r.off), r.err
}

// changelogState is a subtask's keyed state with its changes applied.
type changelogState struct {
	// kryo5 says the Kryo values are Kryo 5's.
	kryo5 bool
	// table holds the serializer families the state is read with.
	table  *serializerTable
	header *KeyedHeader
	rng    KeyGroupRange
	groups map[int]*changedGroup
	// broken holds, per state, why its changes could not be applied.
	broken map[string]error
}

// changedGroup holds one key group's entries, in the order they were first
// written.
type changedGroup struct {
	cells map[string]*cell
	order []*cell
}

// cell is the state of one (state, key, namespace); a timer's cell is one
// timer.
type cell struct {
	l              *layout
	key, ns, value []byte
	expires        int64
	set            bool     // value states and timers: present
	list           []elem   // list state
	mapKeys        []string // map state, in insertion order
	mapVals        map[string]elem
}

// elem is one list element or map value, its TTL timestamp split off; null
// is a map value written as null.
type elem struct {
	value   []byte
	expires int64
	null    bool
}

func (g *changedGroup) cell(l *layout, key, ns, value []byte) *cell {
	id := string(binary.BigEndian.AppendUint32(nil, uint32(len(l.name)))) + l.name + string(binary.BigEndian.AppendUint32(nil, uint32(len(key)))) + string(key) + string(ns)
	if l.kind == KindTimer {
		id += "\x00" + string(value)
	}
	c := g.cells[id]
	if c == nil {
		c = &cell{l: l, key: key, ns: ns}
		g.cells[id] = c
		g.order = append(g.order, c)
	}
	return c
}

func (c *cell) clear() {
	c.set, c.value, c.list, c.mapKeys, c.mapVals = false, nil, nil, nil, nil
}

func (c *cell) put(uk string, e elem) {
	if c.mapVals == nil {
		c.mapVals = map[string]elem{}
	}
	if _, ok := c.mapVals[uk]; !ok {
		c.mapKeys = append(c.mapKeys, uk)
	}
	c.mapVals[uk] = e
}

func (c *cell) remove(uk string) {
	if _, ok := c.mapVals[uk]; !ok {
		return
	}
	delete(c.mapVals, uk)
	for i, k := range c.mapKeys {
		if k == uk {
			c.mapKeys = append(c.mapKeys[:i:i], c.mapKeys[i+1:]...)
			break
		}
	}
}

// entries emits the cell's entries as the heap reader would.
func (c *cell) entries(kg int, emit func(snapshot.Entry) bool) bool {
	e := snapshot.Entry{KeyGroup: kg, State: c.l.name, Key: c.key, Namespace: c.ns}
	switch {
	case c.l.kind == snapshot.List:
		for _, x := range c.list {
			el := e
			el.Value, el.ExpiresAt = x.value, x.expires
			if !emit(el) {
				return false
			}
		}
	case c.l.kind == snapshot.Map:
		for _, k := range c.mapKeys {
			x := c.mapVals[k]
			el := e
			el.UserKey = []byte(k)
			if !x.null {
				el.Value, el.ExpiresAt = x.value, x.expires
			}
			if !emit(el) {
				return false
			}
		}
	case c.set:
		e.Value, e.ExpiresAt = c.value, c.expires
		return emit(e)
	}
	return true
}

// changelog returns a subtask's changelog state, applying its changes on
// the first call.
func (r *SnapshotReader) changelog(ctx context.Context, op *OperatorState, st *SubtaskState) (*changelogState, error) {
	r.mu.Lock()
	s, ok := r.applied[st]
	r.mu.Unlock()
	if ok {
		return s.state, s.err
	}
	state, err := r.applyChangelog(ctx, op, st)
	r.mu.Lock()
	if r.applied == nil {
		r.applied = map[*SubtaskState]appliedChangelog{}
	}
	r.applied[st] = appliedChangelog{state, err}
	r.mu.Unlock()
	return state, err
}

// appliedChangelog is the outcome of applying a subtask's changes.
type appliedChangelog struct {
	state *changelogState
	err   error
}

func (r *SnapshotReader) applyChangelog(ctx context.Context, op *OperatorState, st *SubtaskState) (*changelogState, error) {
	h := st.ManagedKeyedState.Changelog
	s := &changelogState{kryo5: r.res.Kryo5, table: r.res.Serializers, rng: h.Range, groups: map[int]*changedGroup{}, broken: map[string]error{}, header: &KeyedHeader{}}
	all := keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}
	var base snapshot.Entries
	if inc := nativeHandle(st.ManagedKeyedState); inc != nil {
		hdr, err := r.res.ReadNativeMeta(ctx, inc)
		if err != nil {
			return nil, err
		}
		s.header.KeySerializer, s.header.States = hdr.KeySerializer, hdr.States
		base = r.nativeEntries(ctx, op, st, inc, all, nil)
	} else if kgs := managedKeyGroups(st.ManagedKeyedState); len(kgs) > 0 {
		for _, kh := range kgs {
			ks, err := openKGStream(ctx, r.res, kh, op.MaxParallelism)
			if err != nil {
				return nil, err
			}
			s.header.KeySerializer = ks.header.KeySerializer
			s.header.States = append(s.header.States, ks.header.States...)
			ks.Close()
		}
		// A materialized heap state that cannot be read stays broken
		// whatever its changes.
		base = r.keyGroupEntries(ctx, op, st, all, func(state string, err error) {
			if s.broken[state] == nil {
				s.broken[state] = err
			}
		})
	}
	changes, err := listChanges(ctx, r.res, h)
	if err != nil {
		return nil, err
	}
	if err := s.apply(ctx, base, changes); err != nil {
		return nil, err
	}
	return s, nil
}

// apply loads the materialized entries base (nil: none), then applies the
// changes in order.
func (s *changelogState) apply(ctx context.Context, base snapshot.Entries, changes []stateChange) error {
	a := &applier{s: s, byName: map[string]*layout{}, byID: map[int16]*layout{}}
	if err := a.register(changes); err != nil {
		return err
	}
	if base != nil {
		for e, err := range base {
			if err != nil {
				return err
			}
			if l := a.byName[e.State]; l != nil {
				a.load(l, e.Clone())
			}
		}
	}
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.apply(c); err != nil {
			return err
		}
	}
	return nil
}

// applier applies changes to a changelogState.
type applier struct {
	s      *changelogState
	byName map[string]*layout
	byID   map[int16]*layout
}

// register reads every METADATA change first: the key serializer, which
// the changelog does not record, comes from the materialized part or else
// from a timer state's serializer.
func (a *applier) register(changes []stateChange) error {
	var metas []*StateMeta
	for _, c := range changes {
		if len(c.data) == 0 || c.data[0] != opMetadata {
			continue
		}
		m, _, err := parseChangeMeta(a.s.table, c, a.s.kryo5)
		if err != nil {
			return err
		}
		metas = append(metas, m)
	}
	hdr := a.s.header
	for _, m := range metas {
		if s := m.Value(); hdr.KeySerializer == nil && m.Type == PriorityQueueState && s != nil && serKind(s) == "Timer" && len(s.Nested) == 2 {
			hdr.KeySerializer = proxied(s.Nested[0])
		}
	}
	for _, m := range hdr.States {
		a.byName[m.Name] = newLayout(m, hdr.KeySerializer)
	}
	for _, m := range metas {
		if _, ok := a.byName[m.Name]; !ok {
			hdr.States = append(hdr.States, m)
			a.byName[m.Name] = newLayout(m, hdr.KeySerializer)
		}
	}
	return nil
}

// proxied gives a nested snapshot the proxy framing a keyed header stores
// a key serializer with (proxy version 2, then the versioned snapshot), so
// that it can be written as one.
func proxied(n *SerializerSnapshot) *SerializerSnapshot {
	if len(n.Versioned) == 0 {
		return n
	}
	raw := binary.BigEndian.AppendUint32(nil, 2)
	raw = append(raw, n.Versioned...)
	r := newReader(raw, "", 0)
	s := (&snapReader{r: r, table: n.table}).snapshotProxy(func(q int) bool { return q == len(raw) })
	if r.err != nil || s == nil || r.remaining() != 0 {
		return n
	}
	return s
}

// parseChangeMeta reads a METADATA change: the state's meta info, for
// key-value states its TTL config (a Java-serialized StateTtlConfig) and
// default value, then the state's short id and backend state type; kryo5
// says its Kryo values are Kryo 5's.
func parseChangeMeta(table *serializerTable, c stateChange, kryo5 bool) (*StateMeta, int16, error) {
	r := newReader(c.data, c.file, c.base)
	r.u8("operation")
	at := r.pos()
	v := int(r.i32("state meta info version"))
	mr := &metaReader{sr: &snapReader{r: r, table: table}, end: -1}
	switch {
	case r.err != nil:
		return nil, 0, r.err
	case v == 5:
		mr.layout = "v5"
	case v >= 6 && v <= 7:
		mr.layout = "current"
	default:
		return nil, 0, unknownVersion(c.file, at, "state meta info", v)
	}
	m := mr.meta(func(q int) bool { return plausibleMetaTail(r.buf, q) })
	if r.err != nil {
		return nil, 0, r.err
	}
	markStatesKryo5(kryo5, nil, m)
	if m.Type == KeyValueState {
		if r.bool("TTL config flag") {
			_, used, _, _, err := ParseJavaObject(r.buf[r.off:], r.file, r.pos())
			if err != nil {
				return nil, 0, err
			}
			r.off += used
		}
		if r.bool("default value flag") {
			l := newLayout(m, nil)
			if !skipValue(r, l.stored, 0) {
				if r.err != nil {
					return nil, 0, r.err
				}
				return nil, 0, fmt.Errorf("%q at offset %d: state %q: default value of serializer %s cannot be walked: %w", r.file, r.pos(), m.Name, l.stored.Name(), ErrUnsupportedVersion)
			}
		}
	}
	id := r.i16("state id")
	at = r.pos()
	t := BackendStateType(r.u8("backend state type"))
	if r.err == nil && t != m.Type {
		r.failAt(at, "state %q: backend state type %d after meta info of type %d", m.Name, t, m.Type)
	}
	if r.err == nil && r.remaining() != 0 {
		r.fail("%d bytes after the meta data change of state %q", r.remaining(), m.Name)
	}
	return m, id, r.err
}

// plausibleMetaTail says whether what follows a METADATA change's meta info
// at q is its tail: a short id and a state type, after (key-value states)
// a TTL flag, possibly a Java stream, and a default-value flag.
func plausibleMetaTail(b []byte, q int) bool {
	t := b[q:]
	switch {
	case len(t) == 3:
		return t[2] == byte(PriorityQueueState)
	case len(t) >= 5 && t[0] == 0 && t[1] == 0:
		return len(t) == 5
	case len(t) >= 5 && t[0] == 0 && t[1] == 1:
		return true
	case len(t) >= 3 && t[0] == 1:
		return t[1] == 0xAC && t[2] == 0xED
	}
	return false
}

// load adds one entry of the materialized part.
func (a *applier) load(l *layout, e snapshot.Entry) {
	g := a.group(e.KeyGroup)
	c := g.cell(l, e.Key, e.Namespace, e.Value)
	x := elem{value: e.Value, expires: e.ExpiresAt, null: l.kind == snapshot.Map && e.Value == nil}
	switch l.kind {
	case snapshot.List:
		c.list = append(c.list, x)
	case snapshot.Map:
		c.put(string(e.UserKey), x)
	default:
		c.set, c.value, c.expires = true, e.Value, e.ExpiresAt
	}
}

func (a *applier) group(kg int) *changedGroup {
	g := a.s.groups[kg]
	if g == nil {
		g = &changedGroup{cells: map[string]*cell{}}
		a.s.groups[kg] = g
	}
	return g
}

// apply applies one change. A change a reader cannot apply (an operation
// that needs the job's functions, or values that cannot be walked) marks
// its state broken; damage ends the read.
func (a *applier) apply(c stateChange) error {
	r := newReader(c.data, c.file, c.base)
	op := r.u8("operation")
	if r.err != nil {
		return r.err
	}
	if op == opMetadata {
		m, id, err := parseChangeMeta(a.s.table, c, a.s.kryo5)
		if err != nil {
			return err
		}
		a.byID[id] = a.byName[m.Name]
		return nil
	}
	if int(op) >= len(opNames) {
		return &CorruptError{File: c.file, Offset: c.base, Reason: fmt.Sprintf("unknown state change operation %d", op)}
	}
	at := r.pos()
	id := r.i16("state id")
	if r.err != nil {
		return r.err
	}
	l := a.byID[id]
	if l == nil {
		return &CorruptError{File: c.file, Offset: at, Reason: fmt.Sprintf("%s change of state id %d, which no meta data change registered", opNames[op], id)}
	}
	if a.s.broken[l.name] != nil || c.kg < int(a.s.rng.Start) || c.kg > int(a.s.rng.End()) {
		// Flink applies only the changes of the key groups it restores.
		return nil
	}
	err := a.applyData(r, l, op, a.group(c.kg))
	if err == nil && r.err == nil && r.remaining() != 0 {
		r.fail("%d bytes after a %s change of state %q", r.remaining(), opNames[op], l.name)
	}
	if err == nil {
		err = r.err
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		a.s.broken[l.name] = err
		return nil
	}
	return err
}

// applyData applies the data of one change to l's state in group g.
func (a *applier) applyData(r *reader, l *layout, op byte, g *changedGroup) error {
	unsupported := func(why string) error {
		return fmt.Errorf("%q at offset %d: state %q: %s change %s: %w", r.file, r.pos(), l.name, opNames[op], why, ErrUnsupportedVersion)
	}
	take := func(s *SerializerSnapshot, what string) ([]byte, error) {
		start := r.off
		if s == nil {
			return nil, unsupported(fmt.Sprintf("needs the %s serializer, which the snapshot does not record", what))
		}
		if !skipValue(r, s, 0) {
			if r.err != nil {
				return nil, r.err
			}
			return nil, unsupported(fmt.Sprintf("holds a %s the %s serializer writes without a length", what, s.Name()))
		}
		return r.buf[start:r.off:r.off], r.err
	}
	// rest is the last value of a change: it ends where the change does.
	rest := func() []byte { return r.take(r.remaining(), "value") }
	split := func(b []byte) (elem, error) {
		v, exp, err := l.splitTTL(b)
		return elem{value: v, expires: exp}, err
	}
	if l.kind == KindTimer {
		timer := func(whole bool) (*cell, error) {
			ts := r.i64("timer timestamp")
			key, err := take(l.key, "timer key")
			if err != nil {
				return nil, err
			}
			var ns []byte
			if whole {
				ns = rest()
			} else if ns, err = take(l.ns, "timer namespace"); err != nil {
				return nil, err
			}
			v := put64(ts ^ -1<<63)
			c := g.cell(l, key, ns, v)
			c.value = v
			return c, r.err
		}
		switch op {
		case opAddElement:
			n := r.count32(9, "timer count")
			for i := 0; i < n && r.err == nil; i++ {
				c, err := timer(false)
				if err != nil {
					return err
				}
				c.set = true
			}
			return r.err
		case opRemoveElement:
			c, err := timer(true)
			if err == nil {
				c.clear()
			}
			return err
		}
		return unsupported("on a timer state")
	}
	key, err := take(l.key, "key")
	if err != nil {
		return err
	}
	ns, err := take(l.ns, "namespace")
	if err != nil {
		return err
	}
	c := g.cell(l, key, ns, nil)
	switch {
	case op == opClear:
		c.clear()
		return nil
	case op == opMergeNamespaces:
		return unsupported("merges namespaces with the job's own function")
	case l.kind == snapshot.List:
		list := func() ([]elem, error) {
			n := r.count32(1, "list size")
			out := make([]elem, 0, n)
			for i := 0; i < n && r.err == nil; i++ {
				b, err := take(l.elem, "list element")
				if err != nil {
					return nil, err
				}
				x, err := split(b)
				if err != nil {
					return nil, err
				}
				out = append(out, x)
			}
			return out, r.err
		}
		switch op {
		case opSet, opSetInternal:
			xs, err := list()
			c.list = xs
			return err
		case opAdd:
			xs, err := list()
			c.list = append(c.list, xs...)
			return err
		case opAddElement:
			x, err := split(rest())
			c.list = append(c.list, x)
			return err
		}
	case l.kind == snapshot.Map:
		switch op {
		case opAdd:
			n := r.count32(2, "map size")
			for i := 0; i < n && r.err == nil; i++ {
				uk, err := take(l.userKey, "map key")
				if err != nil {
					return err
				}
				x := elem{null: r.bool("map value null flag")}
				if !x.null {
					b, err := take(l.elem, "map value")
					if err != nil {
						return err
					}
					if x, err = split(b); err != nil {
						return err
					}
				}
				c.put(string(uk), x)
			}
			return r.err
		case opAddElement, opAddOrUpdateElement:
			uk, err := take(l.userKey, "map key")
			if err != nil {
				return err
			}
			x, err := split(rest())
			c.put(string(uk), x)
			return err
		case opRemoveElement:
			c.remove(string(rest()))
			return r.err
		}
	case l.kind == snapshot.Value || l.kind == snapshot.Reducing || l.kind == snapshot.Aggregating:
		if op == opSet || op == opSetInternal {
			x, err := split(rest())
			c.set, c.value, c.expires = true, x.value, x.expires
			return err
		}
	}
	return unsupported(fmt.Sprintf("on %s state", l.kind))
}

// entries emits the applied state of the key groups kgs, key group by key
// group, each in the order its entries were first written.
func (s *changelogState) entries(ctx context.Context, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		lo, hi := max(kgs.Start, int(s.rng.Start)), min(kgs.End, int(s.rng.End()))
		for kg := lo; kg <= hi; kg++ {
			g := s.groups[kg]
			if g == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			for _, c := range g.order {
				if s.broken[c.l.name] != nil {
					continue
				}
				if !c.entries(kg, func(e snapshot.Entry) bool { return yield(e, nil) }) {
					return
				}
			}
		}
	}
}

// changelogEntries streams a changelog subtask's entries in the key groups
// kgs, its changes applied.
func (r *SnapshotReader) changelogEntries(ctx context.Context, op *OperatorState, st *SubtaskState, kgs keygroup.Range) snapshot.Entries {
	s, err := r.changelog(ctx, op, st)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	return s.entries(ctx, kgs)
}

// changelogFigures applies a subtask's changes and counts what results;
// a state whose changes cannot be applied is marked unreadable.
func (r *SnapshotReader) changelogFigures(ctx context.Context, op *OperatorState, st *SubtaskState) (snapshot.Stats, error) {
	s, err := r.changelog(ctx, op, st)
	if err != nil {
		if !degradable(err) {
			return snapshot.Stats{}, err
		}
		r.degrade(st, snapshot.ScopeKeyed, "", err)
		return snapshot.Stats{Known: true, Bytes: keyedBytes(st.ManagedKeyedState)}, nil
	}
	for name, err := range s.broken {
		r.degrade(st, snapshot.ScopeKeyed, name, err)
	}
	stats := snapshot.Stats{Known: true}
	for e, err := range s.entries(ctx, keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism}) {
		if err != nil {
			return snapshot.Stats{}, err
		}
		stats.Entries++
		stats.Bytes += e.Size()
	}
	return stats, nil
}
