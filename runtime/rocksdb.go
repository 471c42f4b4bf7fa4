package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// RocksDBStateBackend keeps keyed state in one embedded RocksDB instance
// per keyed subtask (runtime/rocksstate) and takes incremental checkpoints:
// each checkpoint uploads only the SST files no retained checkpoint has,
// in the rocksdb format's job-directory layout. Subtasks pause from their
// barrier until the checkpoint is uploaded. Savepoints are full snapshots
// in the run's format.
type RocksDBStateBackend struct {
	// LocalDir holds the working instances; "" is a temporary directory
	// of the run's own, removed when it ends.
	LocalDir string
}

// Name implements StateBackend.
func (RocksDBStateBackend) Name() string { return "rocksdb" }

// NewKeyedBackend implements StateBackend; a run replaces the config by a
// session that owns the instances (see session).
func (b RocksDBStateBackend) NewKeyedBackend(SubtaskInfo) (KeyedBackend, error) {
	return nil, fmt.Errorf("%w: RocksDBStateBackend is used through a run", ErrJob)
}

// session opens the per-run checkpointer.
func (b RocksDBStateBackend) session(retain int, storages *storage.Registry) (*rocksSession, error) {
	dir, tmp := b.LocalDir, ""
	if dir == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "stateutil-rocksdb-"); err != nil {
			return nil, err
		}
		dir = tmp
	}
	inc, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: dir, Retain: retain, Storage: storages})
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, err
	}
	return &rocksSession{inc: inc, tmp: tmp}, nil
}

// incremental is a backend that checkpoints the whole job at once.
type incremental interface {
	// subtaskWriter receives a subtask's operator state for the next
	// checkpoint (its keyed state is already in place).
	subtaskWriter(op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error)
	// checkpoint uploads checkpoint id under dir/jobID/chk-id and applies
	// retention; every subtask is paused. It reports what was uploaded.
	checkpoint(ctx context.Context, dir, jobID string, id int64) (*IncrementalCheckpoint, error)
	close() error
}

// rocksSession is the RocksDB backend of one run.
type rocksSession struct {
	inc *rocksstate.Incremental
	tmp string // the run's own local directory, removed on close
}

func (s *rocksSession) Name() string { return "rocksdb" }

func (s *rocksSession) NewKeyedBackend(info SubtaskInfo) (KeyedBackend, error) {
	return &RocksDBBackend{s: s, info: info, byName: map[string]StateID{}}, nil
}

func (s *rocksSession) subtaskWriter(op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	in, err := s.inc.Open(op, index, kgs)
	if err != nil {
		return nil, err
	}
	return &opStateWriter{in: in, op: op, lists: map[string][][]byte{}}, nil
}

func (s *rocksSession) checkpoint(ctx context.Context, dir, jobID string, id int64) (*IncrementalCheckpoint, error) {
	r, err := s.inc.Checkpoint(ctx, dir, jobID, id)
	if err != nil {
		return nil, err
	}
	return &IncrementalCheckpoint{ID: id, UploadStats: r.UploadStats}, nil
}

func (s *rocksSession) close() error {
	err := s.inc.Close()
	if s.tmp != "" {
		err = errors.Join(err, os.RemoveAll(s.tmp))
	}
	return err
}

// opStateWriter replaces an instance's operator state on Close.
type opStateWriter struct {
	in    *rocksstate.Instance
	op    *snapshot.Operator
	lists map[string][][]byte
}

func (w *opStateWriter) Entry(*snapshot.Entry) error { return nil }
func (w *opStateWriter) Element(state string, v []byte) error {
	w.lists[state] = append(w.lists[state], slices.Clone(v))
	return nil
}
func (w *opStateWriter) Raw(snapshot.RawState) error { return nil }
func (w *opStateWriter) Close() error {
	for _, st := range w.op.OperatorStates {
		w.in.SetOperatorState(st.Name, w.lists[st.Name])
	}
	return nil
}

// RocksDBBackend is one keyed subtask's state in a RocksDB instance.
//
// Reads are RocksDB point lookups (value, reducing, aggregating state, a
// map user key, a merged list) or a seek over one key's prefix (a key's
// map entries), so their cost does not grow with the keys per key group.
type RocksDBBackend struct {
	s      *rocksSession
	info   SubtaskInfo
	descs  []StateDescriptor
	byName map[string]StateID
	in     *rocksstate.Instance
}

// Register implements KeyedBackend.
func (b *RocksDBBackend) Register(d StateDescriptor) (StateID, error) {
	d, err := d.validate()
	if err != nil {
		return 0, err
	}
	if id, ok := b.byName[d.Name]; ok {
		if b.descs[id].Kind != d.Kind {
			return 0, fmt.Errorf("%w: state %q is a %s state, not %s", ErrStateDescriptor, d.Name, b.descs[id].Kind, d.Kind)
		}
		b.descs[id] = d
		return id, nil
	}
	if b.in != nil {
		return 0, fmt.Errorf("%w: state %q declared after the backend started", ErrStateDescriptor, d.Name)
	}
	id := StateID(len(b.descs))
	b.descs = append(b.descs, d)
	b.byName[d.Name] = id
	return id, nil
}

// Descriptors implements KeyedBackend.
func (b *RocksDBBackend) Descriptors() []StateDescriptor { return slices.Clone(b.descs) }

// Start implements KeyedBackend: it opens the instance with a column
// family per declared state.
func (b *RocksDBBackend) Start() error {
	op := *b.info.Operator
	op.KeyedStates = nil
	for _, d := range b.descs {
		op.KeyedStates = append(op.KeyedStates, d.KeyedState())
	}
	in, err := b.s.inc.Open(&op, b.info.Subtask, b.info.KeyGroups)
	b.in = in
	return err
}

func (b *RocksDBBackend) entry(s StateID, kg int, key, userKey string, c Cell) *snapshot.Entry {
	e := &snapshot.Entry{KeyGroup: kg, State: b.descs[s].Name, Key: []byte(key), Namespace: []byte{}, Value: c.Value, ExpiresAt: c.ExpiresAt}
	if userKey != "" || b.descs[s].Kind == snapshot.Map {
		e.UserKey = []byte(userKey)
	}
	return e
}

// query is the lookup of state s's entry for key in key group kg: the one
// place reads build their key (the rocksdb layout takes it from here).
func (b *RocksDBBackend) query(s StateID, kg int, key, userKey string) (*snapshot.Entry, error) {
	if int(s) < 0 || int(s) >= len(b.descs) || b.in == nil {
		return nil, fmt.Errorf("%w: unknown state id %d or backend not started", ErrStateDescriptor, s)
	}
	return b.entry(s, kg, key, userKey, Cell{}), nil
}

func cellOf(e *snapshot.Entry) Cell {
	return Cell{Value: e.Value, ExpiresAt: e.ExpiresAt}
}

// Get implements KeyedBackend with one RocksDB point read.
func (b *RocksDBBackend) Get(s StateID, kg int, key string) (Cell, bool, error) {
	q, err := b.query(s, kg, key, "")
	if err != nil {
		return Cell{}, false, err
	}
	e, ok, err := b.in.Get(q)
	if err != nil || !ok {
		return Cell{}, false, err
	}
	return cellOf(&e), true, nil
}

// Put implements KeyedBackend.
func (b *RocksDBBackend) Put(s StateID, kg int, key string, c Cell) error {
	return b.in.Put(b.entry(s, kg, key, "", c))
}

// Clear implements KeyedBackend.
func (b *RocksDBBackend) Clear(s StateID, kg int, key string) error {
	if b.descs[s].Kind != snapshot.Map {
		return b.in.Delete(b.entry(s, kg, key, "", Cell{}))
	}
	cells, err := b.MapEntries(s, kg, key)
	if err != nil {
		return err
	}
	for _, c := range cells {
		if err := b.MapRemove(s, kg, key, c.UserKey); err != nil {
			return err
		}
	}
	return nil
}

// GetList implements KeyedBackend with one RocksDB point read of the
// merged list.
func (b *RocksDBBackend) GetList(s StateID, kg int, key string) ([]Cell, error) {
	q, err := b.query(s, kg, key, "")
	if err != nil {
		return nil, err
	}
	es, err := b.in.GetList(q)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	cells := make([]Cell, len(es))
	for i := range es {
		cells[i] = cellOf(&es[i])
	}
	return cells, nil
}

// PutList implements KeyedBackend.
func (b *RocksDBBackend) PutList(s StateID, kg int, key string, cells []Cell) error {
	if err := b.in.Delete(b.entry(s, kg, key, "", Cell{})); err != nil {
		return err
	}
	for _, c := range cells {
		if err := b.in.Put(b.entry(s, kg, key, "", c)); err != nil {
			return err
		}
	}
	return nil
}

// AppendList implements KeyedBackend.
func (b *RocksDBBackend) AppendList(s StateID, kg int, key string, c Cell) error {
	return b.in.Put(b.entry(s, kg, key, "", c))
}

// MapGet implements KeyedBackend with one RocksDB point read.
func (b *RocksDBBackend) MapGet(s StateID, kg int, key, userKey string) (Cell, bool, error) {
	q, err := b.query(s, kg, key, userKey)
	if err != nil {
		return Cell{}, false, err
	}
	e, ok, err := b.in.Get(q)
	if err != nil || !ok {
		return Cell{}, false, err
	}
	return cellOf(&e), true, nil
}

// MapPut implements KeyedBackend.
func (b *RocksDBBackend) MapPut(s StateID, kg int, key, userKey string, c Cell) error {
	return b.in.Put(b.entry(s, kg, key, userKey, c))
}

// MapRemove implements KeyedBackend.
func (b *RocksDBBackend) MapRemove(s StateID, kg int, key, userKey string) error {
	return b.in.Delete(b.entry(s, kg, key, userKey, Cell{}))
}

// MapEntries implements KeyedBackend with a RocksDB seek over the key's
// prefix; RocksDB's byte order is the user-key order.
func (b *RocksDBBackend) MapEntries(s StateID, kg int, key string) ([]MapCell, error) {
	q, err := b.query(s, kg, key, "")
	if err != nil {
		return nil, err
	}
	var out []MapCell
	for e, err := range b.in.MapEntries(q) {
		if err != nil {
			return nil, err
		}
		out = append(out, MapCell{UserKey: string(e.UserKey), Cell: Cell{Value: slices.Clone(e.Value), ExpiresAt: e.ExpiresAt}})
	}
	return out, nil
}

// RestoreDescriptor implements KeyedBackend.
func (b *RocksDBBackend) RestoreDescriptor(ks snapshot.KeyedState) error {
	_, err := b.Register(descriptorOf(ks))
	return err
}

// Restore implements KeyedBackend.
func (b *RocksDBBackend) Restore(e *snapshot.Entry) error {
	if _, ok := b.byName[e.State]; !ok {
		return fmt.Errorf("%w: restored entry of undeclared state %q", ErrStateDescriptor, e.State)
	}
	c := *e
	c.Namespace = []byte{}
	return b.in.Put(&c)
}

// Snapshot implements KeyedBackend. In an incremental checkpoint the
// instance itself is the snapshot and nothing is written here; otherwise
// (savepoints, the final digest) every live entry is copied to w.
func (b *RocksDBBackend) Snapshot(ctx context.Context, w snapshot.SubtaskWriter, now int64) error {
	if _, ok := w.(*opStateWriter); ok {
		return nil
	}
	for e, err := range b.in.Entries(ctx, b.info.KeyGroups) {
		if err != nil {
			return err
		}
		if e.ExpiresAt != 0 && e.ExpiresAt <= now {
			continue
		}
		if err := w.Entry(&e); err != nil {
			return err
		}
	}
	return nil
}

// Close implements KeyedBackend; the run's session closes the instance.
func (b *RocksDBBackend) Close() error { return nil }
