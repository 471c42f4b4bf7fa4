package changelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
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

// PendingChanges says whether a keyed handle carries changes not yet
// materialized.
func PendingChanges(h *metadata.KeyedHandle) bool {
	return h != nil && h.Changelog != nil && len(h.Changelog.NonMaterialized) > 0
}

// ListChanges lists a changelog handle's non-materialized changes in the order
// Flink applies them.
func ListChanges(ctx context.Context, res *statefile.Resolver, h *metadata.ChangelogHandle) ([]stateChange, error) {
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
					return nil, &wire.CorruptError{File: f.file, Offset: f.base + max(0, min(oh.Offset, int64(len(f.data)))),
						Reason: fmt.Sprintf("_metadata lists a change set at offset %d, where none starts", oh.Offset)}
				}
				out = append(out, cs...)
			}
		default:
			return nil, fmt.Errorf("%s handle inside a changelog handle: %w", nm.Type, wire.ErrUnsupportedVersion)
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
func readChangelogFile(ctx context.Context, res *statefile.Resolver, h *metadata.StreamHandle, cache map[string]*changelogFile) (*changelogFile, error) {
	if h == nil {
		return nil, fmt.Errorf("changelog handle without a stream: %w", wire.ErrCorrupt)
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
	if h.Type == metadata.HandleFile || h.Type == metadata.HandleRelativeFile {
		declared.Size = 0
	}
	data, file, base, err := res.Bytes(ctx, &declared)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, &wire.CorruptError{File: file, Offset: base, Reason: "empty changelog file (no compression flag)"}
	}
	f := &changelogFile{data: data[1:], file: file, base: base + 1}
	switch data[0] {
	case 0:
	case 1:
		if f.data, err = statefile.Unsnappy(data[1:], file, base+1); err != nil {
			return nil, err
		}
		f.file, f.base = file+" (Snappy-decompressed stream)", 0
	default:
		return nil, &wire.CorruptError{File: file, Offset: base, Reason: fmt.Sprintf("changelog compression flag %d, want 0 or 1", data[0])}
	}
	if (h.Type == metadata.HandleFile || h.Type == metadata.HandleRelativeFile) && h.Size > 0 && int64(len(f.data)) != h.Size {
		return nil, &wire.CorruptError{File: file, Offset: base + 1, Reason: fmt.Sprintf("changelog stream is %d bytes, _metadata says %d", len(f.data), h.Size)}
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
	r := wire.NewReader(f.data[offset:], f.file, f.base+offset)
	var out []stateChange
	groups := r.Count32(8, "change set group count")
	for g := 0; g < groups && r.Err == nil; g++ {
		n := r.Count32(4, "change count")
		kg := int(r.I32("change key group"))
		for i := 0; i < n && r.Err == nil; i++ {
			at := r.Pos() + 4
			if b := r.Bytes32("state change"); r.Err == nil {
				out = append(out, stateChange{kg: kg, data: b, file: f.file, base: at})
			}
		}
	}
	return out, int64(r.Off), r.Err
}

// KeyFrom says where a changelog subtask's key serializer comes from.
type KeyFrom int

const (
	// KeyNone: nowhere; the subtask's keys, where it has any, are not read.
	KeyNone KeyFrom = iota
	// KeyRecorded: the materialized part records it.
	KeyRecorded
	// KeyOfTimers: a timer state's serializer records it.
	KeyOfTimers
	// KeyGiven: ChangelogState.GivenKey gave it, and every key fits it.
	KeyGiven
	// KeyRowsOfNoFields: every key is a row of no fields (rowKey).
	KeyRowsOfNoFields
	// KeyRowsWalked: every key is a row whose field types nothing
	// records: walked and hashed, not decoded (rowKey).
	KeyRowsWalked
)

// Recorded says the subtask's own state records its key serializer.
func (k KeyFrom) Recorded() bool { return k == KeyRecorded || k == KeyOfTimers }

// ChangelogState is a subtask's keyed state with its changes applied.
type ChangelogState struct {
	// Kryo5 says the Kryo values are Kryo 5's.
	Kryo5 bool
	// table holds the serializer families the state is read with.
	Table *typeser.Table
	// Header is the materialized part's, or empty; Apply completes it
	// with the states the changes register and, where it records no key
	// serializer, the one found as KeyFrom says.
	Header *statefile.KeyedHeader
	Rng    metadata.KeyGroupRange
	// MaxParallelism is the operator's: keys hash to key groups by it.
	MaxParallelism int
	Groups         map[int]*ChangedGroup
	// Broken holds, per state, why its changes could not be applied.
	Broken map[string]error
	// GivenKey, when set, gives the key serializer of a subtask whose
	// state records none (another snapshot's, named by the user). Apply
	// asks for it only then, and takes it only if every key fits it:
	// walked by it, hashing to its change's key group, and, where it
	// decodes the key, exactly the bytes the decoded key encodes to. A
	// key that does not fit, or a change that does not parse with it,
	// fails Apply with a *KeyMisfitError.
	GivenKey func() (*typeser.SerializerSnapshot, error)
	// KeyFrom says where Header.KeySerializer came from (Apply sets it).
	KeyFrom KeyFrom
	// keyed counts the changes of keyed (not timer) states in Rng.
	keyed int
}

// ChangedGroup holds one key group's entries, in the order they were first
// written.
type ChangedGroup struct {
	cells map[string]*cell
	order []*cell
}

// cell is the state of one (state, key, namespace); a timer's cell is one
// timer.
type cell struct {
	l              *statefile.Layout
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

func (g *ChangedGroup) cell(l *statefile.Layout, key, ns, value []byte) *cell {
	id := string(binary.BigEndian.AppendUint32(nil, uint32(len(l.Name)))) + l.Name + string(binary.BigEndian.AppendUint32(nil, uint32(len(key)))) + string(key) + string(ns)
	if l.Kind == statefile.KindTimer {
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
	e := snapshot.Entry{KeyGroup: kg, State: c.l.Name, Key: c.key, Namespace: c.ns}
	switch {
	case c.l.Kind == snapshot.List:
		for _, x := range c.list {
			el := e
			el.Value, el.ExpiresAt = x.value, x.expires
			if !emit(el) {
				return false
			}
		}
	case c.l.Kind == snapshot.Map:
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

// KeysNotDecoded says the subtask has keys and records no key serializer,
// nor was one given: its keys are walked as rows but not decoded, or not
// read at all (their states unreadable).
func (s *ChangelogState) KeysNotDecoded() bool {
	return s.keyed > 0 && (s.KeyFrom == KeyNone || s.KeyFrom == KeyRowsWalked)
}

// KeyMisfitError is a key that the key serializer GivenKey gave does not
// fit, or a change that does not parse with it: where, and why. It is the
// given serializer's fault, not damage: it matches no error sentinel.
type KeyMisfitError struct{ err error }

func (e *KeyMisfitError) Error() string { return e.err.Error() }

// Apply loads the materialized entries base (nil: none), then applies the
// changes in order.
func (s *ChangelogState) Apply(ctx context.Context, base snapshot.Entries, changes []stateChange) error {
	a := &applier{s: s, byName: map[string]*statefile.Layout{}, byID: map[int16]*statefile.Layout{}}
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
			if s.KeyFrom == KeyGiven {
				// Every key fits, but what follows one is not where
				// the given serializer says it ends.
				return &KeyMisfitError{fmt.Errorf("the change does not parse with it: %w", err)}
			}
			return err
		}
	}
	return nil
}

// applier applies changes to a changelogState.
type applier struct {
	s      *ChangelogState
	byName map[string]*statefile.Layout
	byID   map[int16]*statefile.Layout
	// keyOK, while keys are tried as rows (rowKey), checks each change's
	// key against its key group.
	keyOK func(kg int, key []byte) bool
}

// register reads every METADATA change first: the key serializer, which
// the changelog does not record, comes from the materialized part or else
// from a timer state's serializer, or else from GivenKey, or else the keys
// are tried as rows (rowKey).
func (a *applier) register(changes []stateChange) error {
	var metas []*statefile.StateMeta
	for _, c := range changes {
		if len(c.data) == 0 || c.data[0] != opMetadata {
			continue
		}
		m, _, err := parseChangeMeta(a.s.Table, c, a.s.Kryo5)
		if err != nil {
			return err
		}
		metas = append(metas, m)
	}
	hdr := a.s.Header
	if hdr.KeySerializer != nil {
		a.s.KeyFrom = KeyRecorded
	}
	for _, m := range metas {
		if s := m.Value(); hdr.KeySerializer == nil && m.Type == statefile.PriorityQueueState && s != nil && typeser.KindOf(s) == "Timer" && len(s.Nested) == 2 {
			hdr.KeySerializer, a.s.KeyFrom = typeser.Proxied(s.Nested[0]), KeyOfTimers
		}
	}
	a.s.keyed = 0
	if err := a.eachKeyed(changes, func(stateChange, string, *wire.Reader) error { a.s.keyed++; return nil }); err != nil {
		return err
	}
	if hdr.KeySerializer == nil && a.s.GivenKey != nil {
		key, err := a.s.GivenKey()
		if err != nil {
			return err
		}
		if err := a.fits(changes, key); err != nil {
			return err
		}
		hdr.KeySerializer, a.s.KeyFrom = key, KeyGiven
	}
	if hdr.KeySerializer == nil {
		hdr.KeySerializer = a.rowKey(changes)
		switch {
		case hdr.KeySerializer == nil:
		case len(hdr.KeySerializer.LogicalTypes) == 0 && hdr.KeySerializer.LogicalTypes != nil:
			a.s.KeyFrom = KeyRowsOfNoFields
		default:
			a.s.KeyFrom = KeyRowsWalked
		}
	}
	for _, m := range hdr.States {
		a.byName[m.Name] = statefile.NewLayout(m, hdr.KeySerializer)
	}
	for _, m := range metas {
		if _, ok := a.byName[m.Name]; !ok {
			hdr.States = append(hdr.States, m)
			a.byName[m.Name] = statefile.NewLayout(m, hdr.KeySerializer)
		}
	}
	return nil
}

// rowKey is the key serializer of a subtask whose changes are all that
// records its state (no materialized part) and that has no timers, where
// it is the Table runtime's RowDataSerializer: SQL operators key by
// BinaryRowData, which it writes as an int length and the row's bytes (a
// header of 8 bytes and 8-byte words), and which hashes as its bytes. It
// is taken to be when every change of the subtask parses with it, each
// key a binary row that hashes to the change's key group; else nil. The
// rows' field types are recorded nowhere: such keys are walked and hashed
// but not decoded, unless every key is a row of no fields (a header
// alone: a row of one field or more has a word for each).
func (a *applier) rowKey(changes []stateChange) *typeser.SerializerSnapshot {
	if a.s.MaxParallelism <= 0 || a.s.Table == nil {
		return nil
	}
	key := a.s.Table.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass})
	if typeser.KindOf(key) != "RowData" {
		return nil
	}
	try := &ChangelogState{Kryo5: a.s.Kryo5, Table: a.s.Table, Rng: a.s.Rng, MaxParallelism: a.s.MaxParallelism,
		Header: &statefile.KeyedHeader{KeySerializer: key, States: slices.Clone(a.s.Header.States)},
		Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}}
	bare, keys := true, 0
	t := &applier{s: try, byName: map[string]*statefile.Layout{}, byID: map[int16]*statefile.Layout{},
		keyOK: func(kg int, b []byte) bool {
			keys++
			row := b[4:]
			bare = bare && len(row) == 8
			h, err := typeser.Codec{S: key}.HashCode(b)
			return len(row) >= 8 && len(row)%8 == 0 && row[0] <= 3 && err == nil && keygroup.OfHash(h, a.s.MaxParallelism) == kg
		}}
	if t.register(changes) != nil {
		return nil
	}
	for _, c := range changes {
		if t.apply(c) != nil || len(try.Broken) > 0 {
			return nil
		}
	}
	switch {
	case keys == 0:
		return nil
	case bare:
		return rowOfNoFields(a.s.Table)
	}
	return key
}

// eachKeyed calls f, in order, on every change of a keyed state (not a
// timer state) in the subtask's key groups, its reader at the change's
// key; f's first error ends it. The METADATA changes say which state an
// id is. A change too short for its operation and state id is left to
// apply, which reports it.
func (a *applier) eachKeyed(changes []stateChange, f func(c stateChange, state string, r *wire.Reader) error) error {
	byID := map[int16]*statefile.StateMeta{}
	for _, c := range changes {
		r := wire.NewReader(c.data, c.file, c.base)
		op := r.U8("operation")
		if r.Err == nil && op == opMetadata {
			m, id, err := parseChangeMeta(a.s.Table, c, a.s.Kryo5)
			if err != nil {
				return err
			}
			byID[id] = m
			continue
		}
		id := r.I16("state id")
		m := byID[id]
		if r.Err != nil || int(op) >= len(opNames) || m == nil || m.Type == statefile.PriorityQueueState || c.kg < int(a.s.Rng.Start) || c.kg > int(a.s.Rng.End()) {
			continue
		}
		if err := f(c, m.Name, r); err != nil {
			return err
		}
	}
	return nil
}

// fits checks every key of the changes against key, the serializer
// GivenKey gave: each must be walked by it, hash to its change's key group
// and, where key decodes it, be exactly the bytes its value encodes to (a
// row of other fields may well decode, but not to a value written so).
// The first key that does not fit fails it with a *KeyMisfitError.
func (a *applier) fits(changes []stateChange, key *typeser.SerializerSnapshot) error {
	codec := typeser.Codec{S: key}
	return a.eachKeyed(changes, func(c stateChange, state string, r *wire.Reader) error {
		at, start := r.Pos(), r.Off
		misfit := func(format string, args ...any) error {
			return &KeyMisfitError{fmt.Errorf("%q at offset %d: state %q: the key of a change (%s) in key group %d %s", c.file, at, state, opNames[c.data[0]], c.kg, fmt.Sprintf(format, args...))}
		}
		if !typeser.SkipValue(r, key, 0) {
			if ce := (*wire.CorruptError)(nil); errors.As(r.Err, &ce) {
				return misfit("does not parse with it: %s", ce.Reason)
			}
			if r.Err != nil {
				return misfit("does not parse with it: %v", r.Err)
			}
			return misfit("is not walked by it (%s writes no length stateutil can find)", key.Name())
		}
		b := r.Buf[start:r.Off]
		h, err := codec.HashCode(b)
		if err != nil {
			return misfit("cannot be hashed by it, so its key group cannot be checked: %v", err)
		}
		if kg := keygroup.OfHash(h, a.s.MaxParallelism); kg != c.kg {
			return misfit("hashes to key group %d by it", kg)
		}
		v, err := codec.Decode(b)
		switch {
		case errors.Is(err, snapshot.ErrNotDecoded):
			return nil // walked exactly and hashed: as much as stateutil can tell
		case err != nil:
			return misfit("does not decode with it: %v", err)
		}
		// A value encodes from its JSON, as a user's edit gives it.
		j, err := asJSON(v)
		if err != nil {
			return misfit("decodes with it to a value that is no JSON: %v", err)
		}
		back, err := codec.Encode(j)
		switch {
		case errors.Is(err, typeser.ErrNoEncoder):
			return nil
		case err != nil:
			return misfit("decodes with it to %s, which it cannot write back: %v", shortJSON(v), err)
		case !bytes.Equal(back, b):
			return misfit("decodes with it to %s, which it writes as %s, not as the key's %s: the key is not of its type", shortJSON(v), shortHex(back), shortHex(b))
		}
		return nil
	})
}

// asJSON is v as JSON decodes it, numbers as json.Number.
func asJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// shortHex is b in hex, cut to 32 bytes, for a message.
func shortHex(b []byte) string {
	if len(b) > 32 {
		return fmt.Sprintf("0x%x... (%d bytes)", b[:32], len(b))
	}
	return fmt.Sprintf("0x%x", b)
}

// shortJSON is v as JSON, cut to 80 bytes, for a message.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// rowDataSnapshotClass is the snapshot class of the Table runtime's
// RowDataSerializer.
const rowDataSnapshotClass = "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot"

// rowOfNoFields is the snapshot of the RowDataSerializer of rows of no
// fields as a keyed header stores it, which is the same in every job:
// serialization proxy version 2, the class, snapshot version 3, no field
// types, and a NestedSerializersSnapshotDelegate (magic 0x1457FD, version
// 1) of no serializers.
func rowOfNoFields(t *typeser.Table) *typeser.SerializerSnapshot {
	w := &wire.Writer{}
	w.I32(2)
	w.UTF(rowDataSnapshotClass)
	w.I32(3)
	w.I32(0)
	w.I32(0x1457FD)
	w.I32(1)
	w.I32(0)
	r := wire.NewReader(w.B, "serializer snapshot of rows of no fields", 0)
	s := (&typeser.SnapReader{R: r, Table: t}).SnapshotProxy(func(q int) bool { return q == len(w.B) })
	if r.Err != nil || len(s.LogicalTypes) != 0 || s.LogicalTypes == nil {
		return nil
	}
	return s
}

// parseChangeMeta reads a METADATA change: the state's meta info, for
// key-value states its TTL config (a Java-serialized StateTtlConfig) and
// default value, then the state's short id and backend state type; kryo5
// says its Kryo values are Kryo 5's.
func parseChangeMeta(table *typeser.Table, c stateChange, kryo5 bool) (*statefile.StateMeta, int16, error) {
	r := wire.NewReader(c.data, c.file, c.base)
	r.U8("operation")
	at := r.Pos()
	v := int(r.I32("state meta info version"))
	mr := &statefile.MetaReader{Sr: &typeser.SnapReader{R: r, Table: table}, End: -1}
	switch {
	case r.Err != nil:
		return nil, 0, r.Err
	case v == 5:
		mr.Layout = "v5"
	case v >= 6 && v <= 7:
		mr.Layout = "current"
	default:
		return nil, 0, wire.UnknownVersion(c.file, at, "state meta info", v)
	}
	m := mr.Meta(func(q int) bool { return plausibleMetaTail(r.Buf, q) })
	if r.Err != nil {
		return nil, 0, r.Err
	}
	statefile.MarkStatesKryo5(kryo5, nil, m)
	if m.Type == statefile.KeyValueState {
		if r.Bool("TTL config flag") {
			_, used, _, _, err := javaser.Parse(r.Buf[r.Off:], r.File, r.Pos())
			if err != nil {
				return nil, 0, err
			}
			r.Off += used
		}
		if r.Bool("default value flag") {
			l := statefile.NewLayout(m, nil)
			if !typeser.SkipValue(r, l.Stored, 0) {
				if r.Err != nil {
					return nil, 0, r.Err
				}
				return nil, 0, fmt.Errorf("%q at offset %d: state %q: default value of serializer %s cannot be walked: %w", r.File, r.Pos(), m.Name, l.Stored.Name(), wire.ErrUnsupportedVersion)
			}
		}
	}
	id := r.I16("state id")
	at = r.Pos()
	t := statefile.BackendStateType(r.U8("backend state type"))
	if r.Err == nil && t != m.Type {
		r.FailAt(at, "state %q: backend state type %d after meta info of type %d", m.Name, t, m.Type)
	}
	if r.Err == nil && r.Remaining() != 0 {
		r.Fail("%d bytes after the meta data change of state %q", r.Remaining(), m.Name)
	}
	return m, id, r.Err
}

// plausibleMetaTail says whether what follows a METADATA change's meta info
// at q is its tail: a short id and a state type, after (key-value states)
// a TTL flag, possibly a Java stream, and a default-value flag.
func plausibleMetaTail(b []byte, q int) bool {
	t := b[q:]
	switch {
	case len(t) == 3:
		return t[2] == byte(statefile.PriorityQueueState)
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
func (a *applier) load(l *statefile.Layout, e snapshot.Entry) {
	g := a.group(e.KeyGroup)
	c := g.cell(l, e.Key, e.Namespace, e.Value)
	x := elem{value: e.Value, expires: e.ExpiresAt, null: l.Kind == snapshot.Map && e.Value == nil}
	switch l.Kind {
	case snapshot.List:
		c.list = append(c.list, x)
	case snapshot.Map:
		c.put(string(e.UserKey), x)
	default:
		c.set, c.value, c.expires = true, e.Value, e.ExpiresAt
	}
}

func (a *applier) group(kg int) *ChangedGroup {
	g := a.s.Groups[kg]
	if g == nil {
		g = &ChangedGroup{cells: map[string]*cell{}}
		a.s.Groups[kg] = g
	}
	return g
}

// apply applies one change. A change a reader cannot apply (an operation
// that needs the job's functions, or values that cannot be walked) marks
// its state broken; damage ends the read.
func (a *applier) apply(c stateChange) error {
	r := wire.NewReader(c.data, c.file, c.base)
	op := r.U8("operation")
	if r.Err != nil {
		return r.Err
	}
	if op == opMetadata {
		m, id, err := parseChangeMeta(a.s.Table, c, a.s.Kryo5)
		if err != nil {
			return err
		}
		a.byID[id] = a.byName[m.Name]
		return nil
	}
	if int(op) >= len(opNames) {
		return &wire.CorruptError{File: c.file, Offset: c.base, Reason: fmt.Sprintf("unknown state change operation %d", op)}
	}
	at := r.Pos()
	id := r.I16("state id")
	if r.Err != nil {
		return r.Err
	}
	l := a.byID[id]
	if l == nil {
		return &wire.CorruptError{File: c.file, Offset: at, Reason: fmt.Sprintf("%s change of state id %d, which no meta data change registered", opNames[op], id)}
	}
	if a.s.Broken[l.Name] != nil || c.kg < int(a.s.Rng.Start) || c.kg > int(a.s.Rng.End()) {
		// Flink applies only the changes of the key groups it restores.
		return nil
	}
	err := a.applyData(r, l, op, c.kg, a.group(c.kg))
	if err == nil && r.Err == nil && r.Remaining() != 0 {
		r.Fail("%d bytes after a %s change of state %q", r.Remaining(), opNames[op], l.Name)
	}
	if err == nil {
		err = r.Err
	}
	if err != nil && !errors.Is(err, wire.ErrCorrupt) {
		a.s.Broken[l.Name] = err
		return nil
	}
	return err
}

// applyData applies the data of one change to l's state in group g.
func (a *applier) applyData(r *wire.Reader, l *statefile.Layout, op byte, kg int, g *ChangedGroup) error {
	unsupported := func(why string) error {
		return fmt.Errorf("%q at offset %d: state %q: %s change %s: %w", r.File, r.Pos(), l.Name, opNames[op], why, wire.ErrUnsupportedVersion)
	}
	// notDecoded is no damage either: a serializer the snapshot does not
	// record, or one stateutil does not walk.
	notDecoded := func(why string, nd *snapshot.NotDecodedError) error {
		return &notDecodedError{unsupported(why), nd}
	}
	take := func(s *typeser.SerializerSnapshot, what string) ([]byte, error) {
		start := r.Off
		if s == nil {
			return nil, notDecoded(fmt.Sprintf("needs the %s serializer, which the snapshot does not record", what),
				&snapshot.NotDecodedError{Serializer: "(" + what + " serializer, not recorded)"})
		}
		if !typeser.SkipValue(r, s, 0) {
			if r.Err != nil {
				return nil, r.Err
			}
			return nil, notDecoded(fmt.Sprintf("holds a %s the %s serializer writes without a length", what, s.Name()),
				&snapshot.NotDecodedError{Serializer: s.Name(), ValueClass: s.TypeClass})
		}
		return r.Buf[start:r.Off:r.Off], r.Err
	}
	// rest is the last value of a change: it ends where the change does.
	rest := func() []byte { return r.Take(r.Remaining(), "value") }
	split := func(b []byte) (elem, error) {
		v, exp, err := l.SplitTTL(b)
		return elem{value: v, expires: exp}, err
	}
	if l.Kind == statefile.KindTimer {
		timer := func(whole bool) (*cell, error) {
			ts := r.I64("timer timestamp")
			key, err := take(l.Key, "timer key")
			if err != nil {
				return nil, err
			}
			var ns []byte
			if whole {
				ns = rest()
			} else if ns, err = take(l.Namespace, "timer namespace"); err != nil {
				return nil, err
			}
			v := statefile.Put64(ts ^ -1<<63)
			c := g.cell(l, key, ns, v)
			c.value = v
			return c, r.Err
		}
		switch op {
		case opAddElement:
			n := r.Count32(9, "timer count")
			for i := 0; i < n && r.Err == nil; i++ {
				c, err := timer(false)
				if err != nil {
					return err
				}
				c.set = true
			}
			return r.Err
		case opRemoveElement:
			c, err := timer(true)
			if err == nil {
				c.clear()
			}
			return err
		}
		return unsupported("on a timer state")
	}
	key, err := take(l.Key, "key")
	if err != nil {
		return err
	}
	if a.keyOK != nil && !a.keyOK(kg, key) {
		return fmt.Errorf("%q at offset %d: state %q: %s change of a key of another key group: %w", r.File, r.Pos(), l.Name, opNames[op], wire.ErrCorrupt)
	}
	ns, err := take(l.Namespace, "namespace")
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
	case l.Kind == snapshot.List:
		list := func() ([]elem, error) {
			n := r.Count32(1, "list size")
			out := make([]elem, 0, n)
			for i := 0; i < n && r.Err == nil; i++ {
				b, err := take(l.Elem, "list element")
				if err != nil {
					return nil, err
				}
				x, err := split(b)
				if err != nil {
					return nil, err
				}
				out = append(out, x)
			}
			return out, r.Err
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
	case l.Kind == snapshot.Map:
		switch op {
		case opAdd:
			n := r.Count32(2, "map size")
			for i := 0; i < n && r.Err == nil; i++ {
				uk, err := take(l.UserKey, "map key")
				if err != nil {
					return err
				}
				x := elem{null: r.Bool("map value null flag")}
				if !x.null {
					b, err := take(l.Elem, "map value")
					if err != nil {
						return err
					}
					if x, err = split(b); err != nil {
						return err
					}
				}
				c.put(string(uk), x)
			}
			return r.Err
		case opAddElement, opAddOrUpdateElement:
			uk, err := take(l.UserKey, "map key")
			if err != nil {
				return err
			}
			x, err := split(rest())
			c.put(string(uk), x)
			return err
		case opRemoveElement:
			c.remove(string(rest()))
			return r.Err
		}
	case l.Kind == snapshot.Value || l.Kind == snapshot.Reducing || l.Kind == snapshot.Aggregating:
		if op == opSet || op == opSetInternal {
			x, err := split(rest())
			c.set, c.value, c.expires = true, x.value, x.expires
			return err
		}
	}
	return unsupported(fmt.Sprintf("on %s state", l.Kind))
}

// notDecodedError is a change that cannot be applied for want of a
// serializer: its message is err's; it matches snapshot.ErrNotDecoded too.
type notDecodedError struct {
	err error
	nd  *snapshot.NotDecodedError
}

func (e *notDecodedError) Error() string   { return e.err.Error() }
func (e *notDecodedError) Unwrap() []error { return []error{e.err, e.nd} }

// Entries emits the applied state of the key groups kgs, key group by key
// group, each in the order its entries were first written.
func (s *ChangelogState) Entries(ctx context.Context, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		lo, hi := max(kgs.Start, int(s.Rng.Start)), min(kgs.End, int(s.Rng.End()))
		for kg := lo; kg <= hi; kg++ {
			g := s.Groups[kg]
			if g == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			for _, c := range g.order {
				if s.Broken[c.l.Name] != nil {
					continue
				}
				if !c.entries(kg, func(e snapshot.Entry) bool { return yield(e, nil) }) {
					return
				}
			}
		}
	}
}
