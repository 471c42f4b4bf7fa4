package statesql

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
)

// keyedTable is the layout of a keyed state's table.
type keyedTable struct {
	op      *snapshot.Operator
	st      *snapshot.KeyedState
	key, ns *decoded
	userKey *decoded // map state only
	value   *decoded
	ttl     string // the TTL column's name, "" for none
	// Column indexes.
	keyCol, kgCol, subCol, nsCol, userKeyCol, valueCol, ttlCol int
	infos                                                      []duckdb.ColumnInfo
}

// newKeyedTable lays out the table of keyed state st: key, key_group,
// subtask, namespace, then map_key and map_value for a map state, else
// value, then the TTL's column where the state has one; each decoded
// column followed by its undecoded column where it has one.
func (e *Engine) newKeyedTable(op *snapshot.Operator, st *snapshot.KeyedState) (*keyedTable, error) {
	t := &keyedTable{op: op, st: st, userKeyCol: -1, ttlCol: -1}
	var err error
	if t.key, err = e.types.newDecoded(e.codecs, "key", st.KeyType); err != nil {
		return nil, err
	}
	if t.ns, err = e.types.newDecoded(e.codecs, "namespace", st.NamespaceType); err != nil {
		return nil, err
	}
	valueName := "value"
	if st.Kind == snapshot.Map {
		if t.userKey, err = e.types.newDecoded(e.codecs, "map_key", st.UserKeyType); err != nil {
			return nil, err
		}
		valueName = "map_value"
	}
	if t.value, err = e.types.newDecoded(e.codecs, valueName, st.ValueType); err != nil {
		return nil, err
	}
	add := func(infos ...duckdb.ColumnInfo) int {
		at := len(t.infos)
		t.infos = append(t.infos, infos...)
		return at
	}
	t.keyCol = add(t.key.infos()...)
	t.kgCol = add(duckdb.ColumnInfo{Name: "key_group", T: typeInteger})
	t.subCol = add(duckdb.ColumnInfo{Name: "subtask", T: typeInteger})
	t.nsCol = add(t.ns.infos()...)
	if t.userKey != nil {
		t.userKeyCol = add(t.userKey.infos()...)
	}
	t.valueCol = add(t.value.infos()...)
	if st.TTL != nil {
		t.ttl = "ttl_expires_at"
		if st.TTL.Unknown {
			t.ttl = "ttl_last_access"
		}
		t.ttlCol = add(duckdb.ColumnInfo{Name: t.ttl, T: typeTimestamp})
	}
	return t, nil
}

// rows are the entries of a record that are rows of the table: a list's
// elements and a map's entries each, a value's last write (a format may
// keep earlier ones), a timer once.
func (t *keyedTable) rows(entries []snapshot.Entry) []snapshot.Entry {
	switch t.st.Kind {
	case snapshot.List, snapshot.Map:
		return entries
	case snapshot.Timer:
		return entries[:1]
	}
	return entries[len(entries)-1:]
}

// set writes entry e of subtask sub as a row.
func (t *keyedTable) set(row duckdb.Row, sub int, e *snapshot.Entry) error {
	if err := t.key.set(row, t.keyCol, e.Key); err != nil {
		return err
	}
	if err := duckdb.SetRowValue(row, t.kgCol, int32(e.KeyGroup)); err != nil {
		return err
	}
	if err := duckdb.SetRowValue(row, t.subCol, int32(sub)); err != nil {
		return err
	}
	// A namespace of no bytes is none (as dump shows it).
	if len(e.Namespace) == 0 {
		if err := row.SetRowValue(t.nsCol, nil); err != nil {
			return err
		}
		if t.ns.undecoded {
			if err := row.SetRowValue(t.nsCol+1, nil); err != nil {
				return err
			}
		}
	} else if err := t.ns.set(row, t.nsCol, e.Namespace); err != nil {
		return err
	}
	if t.userKey != nil {
		if err := t.userKey.set(row, t.userKeyCol, e.UserKey); err != nil {
			return err
		}
	}
	if err := t.value.set(row, t.valueCol, e.Value); err != nil {
		return err
	}
	if t.ttlCol >= 0 {
		var at any
		if e.ExpiresAt != 0 {
			at = time.UnixMilli(e.ExpiresAt).UTC()
		}
		return row.SetRowValue(t.ttlCol, at)
	}
	return nil
}

// keyedSource scans one keyed state's table: DuckDB's threads each take
// the next piece of the dump's plan (a run of key groups of a subtask)
// and read it a key group at a time.
type keyedSource struct {
	e      *Engine
	q      *query
	r      snapshot.Reader
	t      *keyedTable
	pieces []lookup.Piece
	next   atomic.Int64
}

// keyedLocal is one thread's scan.
type keyedLocal struct {
	grouper lookup.Grouper
	piece   lookup.Piece
	next    func() (*recordBatch, bool)
	stop    func()
	err     error // the piece's read error, once next says no more
	batch   *recordBatch
	record  int              // the batch's next record
	rows    []snapshot.Entry // the rows of the record being written
}

// recordBatch is records copied out of the grouper, whose entries are
// valid only until its callback returns. They cross from the reading
// goroutine to DuckDB's thread a batch at a time: one handover a record
// cost more than the query did.
type recordBatch struct {
	entries []snapshot.Entry
	ends    []int // where each record's entries end
	bytes   []byte
}

// Limits of a batch: past either, it is handed over.
const (
	batchRecords = 4096
	batchBytes   = 1 << 20
)

func (b *recordBatch) add(entries []snapshot.Entry) {
	for _, e := range entries {
		e.Key, e.Namespace, e.UserKey, e.Value = b.copy(e.Key), b.copy(e.Namespace), b.copy(e.UserKey), b.copy(e.Value)
		b.entries = append(b.entries, e)
	}
	b.ends = append(b.ends, len(b.entries))
}

// copy keeps p in the batch's bytes (nil stays nil). A batch's bytes
// outgrown are left to the entries that point into them.
func (b *recordBatch) copy(p []byte) []byte {
	if p == nil {
		return nil
	}
	at := len(b.bytes)
	b.bytes = append(b.bytes, p...)
	return b.bytes[at:len(b.bytes):len(b.bytes)]
}

func (b *recordBatch) full() bool { return len(b.ends) >= batchRecords || len(b.bytes) >= batchBytes }

func (b *recordBatch) record(i int) []snapshot.Entry {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.entries[start:b.ends[i]]
}

func (b *recordBatch) reset() {
	clear(b.entries)
	b.entries, b.ends, b.bytes = b.entries[:0], b.ends[:0], b.bytes[:0]
}

func (s *keyedSource) ColumnInfos() []duckdb.ColumnInfo { return s.t.infos }

// Cardinality is the operator's keyed entries where the metadata counts
// them (all its states': a bound, not the table's rows), for DuckDB's
// plans.
func (s *keyedSource) Cardinality() *duckdb.CardinalityInfo {
	var n int64
	for _, sub := range s.t.op.Subtasks {
		if sub == nil || !sub.Keyed.Known {
			return nil
		}
		n += sub.Keyed.Entries
	}
	return &duckdb.CardinalityInfo{Cardinality: uint(n)}
}

func (s *keyedSource) Init() duckdb.ParallelTableSourceInfo {
	s.q = s.e.running()
	threads := min(s.e.threads, max(1, len(s.pieces)))
	if s.e.ordered {
		threads = 1
	}
	return duckdb.ParallelTableSourceInfo{MaxThreads: threads}
}

func (s *keyedSource) NewLocalState() any { return &keyedLocal{} }

func (s *keyedSource) FillRow(ls any, row duckdb.Row) (bool, error) {
	l := ls.(*keyedLocal)
	for len(l.rows) == 0 {
		if l.batch != nil && l.record < len(l.batch.ends) {
			l.rows = s.t.rows(l.batch.record(l.record))
			l.record++
			continue
		}
		if l.next == nil && !s.start(l) {
			return false, nil
		}
		b, ok := l.next()
		if !ok {
			l.stop()
			l.next, l.batch = nil, nil
			if l.err != nil {
				return false, s.q.fail(fmt.Errorf("%s: %w", s.where(), l.err))
			}
			continue
		}
		l.batch, l.record = b, 0
	}
	e := &l.rows[0]
	l.rows = l.rows[1:]
	if err := s.t.set(row, l.piece.Subtask(), e); err != nil {
		return false, s.q.fail(fmt.Errorf("%s key group %d: %w", s.where(), e.KeyGroup, err))
	}
	return true, nil
}

func (s *keyedSource) where() string {
	return fmt.Sprintf("operator %q state %q", s.t.op.Label(), s.t.st.Name)
}

// start takes the next piece for l; false when none is left.
func (s *keyedSource) start(l *keyedLocal) bool {
	i := int(s.next.Add(1) - 1)
	if i >= len(s.pieces) || s.q.ctx.Err() != nil {
		return false
	}
	l.piece = s.pieces[i]
	l.err = nil
	// pull hands a batch over and runs on only when asked for the next: the
	// batch is refilled once DuckDB's thread is done with it.
	batches := func(yield func(*recordBatch) bool) {
		b := &recordBatch{}
		stopped := false
		l.err = l.grouper.Groups(s.q.ctx, s.r, l.piece, func(_ *snapshot.KeyedState, entries []snapshot.Entry) error {
			b.add(entries)
			if !b.full() {
				return nil
			}
			if stopped = !yield(b); stopped {
				return lookup.ErrStop
			}
			b.reset()
			return nil
		})
		if !stopped && len(b.ends) > 0 {
			yield(b)
		}
	}
	next, stop := pull(iter.Seq[*recordBatch](batches))
	l.next, l.stop = next, stop
	s.q.onEnd(stop)
	return true
}

// bindKeyed binds stateutil_keyed(snapshot, operator, state).
func (e *Engine) bindKeyed(_ context.Context, _ map[string]any, args ...any) (duckdb.ParallelRowTableSource, error) {
	src, op, err := e.resolve(args)
	if err != nil {
		return nil, err
	}
	name := args[2].(string)
	st, ok := op.KeyedStateByName(name)
	if !ok {
		return nil, fmt.Errorf("operator %q has no keyed state %q", op.Label(), name)
	}
	t, err := e.newKeyedTable(op, st)
	if err != nil {
		return nil, err
	}
	pieces, err := lookup.Pieces(src.Reader.Snapshot(), lookup.Filter{Operator: op.ID, State: st.Name, Subtask: -1})
	if err != nil {
		return nil, err
	}
	return &keyedSource{e: e, r: src.Reader, t: t, pieces: pieces}, nil
}

// resolve finds the snapshot and operator that a table function's first
// two arguments name.
func (e *Engine) resolve(args []any) (*source, *snapshot.Operator, error) {
	i, _ := args[0].(int32)
	label, _ := args[1].(string)
	if i < 0 || int(i) >= len(e.snaps) {
		return nil, nil, fmt.Errorf("no snapshot %d (there are %d)", i, len(e.snaps))
	}
	src := e.snaps[i]
	op, ok := src.ops[label]
	if !ok {
		return nil, nil, fmt.Errorf("snapshot %d has no operator %q", i, label)
	}
	return src, op, nil
}
