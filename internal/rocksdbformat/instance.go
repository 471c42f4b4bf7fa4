package rocksdbformat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Instance is one keyed subtask's working state: a local RocksDB with a
// column family per keyed state, plus its operator and raw state. It is
// not safe for concurrent use.
type Instance struct {
	op     *snapshot.Operator
	index  int
	kgs    keygroup.Range
	dir    string
	db     *rocksdb.DB
	codecs map[string]*Codec
	ops    OpState
	// sums knows the CRC32C of files stateutil put into the database.
	sums fileSums
	key  []byte
	val  []byte
}

func checkOperator(op *snapshot.Operator) error {
	if op.ID == "" || strings.ContainsAny(op.ID, `/\`) || op.ID == "." || op.ID == ".." {
		return fmt.Errorf("rocksdb: operator id %q cannot name a directory", op.ID)
	}
	if err := keygroup.Check(max(op.Parallelism, 1), op.MaxParallelism); err != nil {
		return fmt.Errorf("rocksdb: operator %s: %w", op.Label(), err)
	}
	for _, ks := range op.KeyedStates {
		if ks.Name == "" || ks.Name == rocksdb.DefaultColumnFamily {
			return fmt.Errorf("rocksdb: operator %s: keyed state name %q is reserved", op.Label(), ks.Name)
		}
	}
	return nil
}

// OpenInstance opens (or creates) the RocksDB directory dir for subtask
// index of op.
func OpenInstance(dir string, op *snapshot.Operator, index int, kgs keygroup.Range) (*Instance, error) {
	if err := checkOperator(op); err != nil {
		return nil, err
	}
	names := make([]string, len(op.KeyedStates))
	for i, ks := range op.KeyedStates {
		names[i] = ks.Name
	}
	d, err := rocksdb.Open(dir, names)
	if err != nil {
		return nil, err
	}
	return &Instance{op: op, index: index, kgs: kgs, dir: dir, db: d, codecs: Codecs(op), sums: fileSums{}}, nil
}

// Operator is the operator this instance belongs to.
func (in *Instance) Operator() *snapshot.Operator { return in.op }

// Subtask is the subtask index.
func (in *Instance) Subtask() int { return in.index }

// KeyGroups is the instance's key-group range.
func (in *Instance) KeyGroups() keygroup.Range { return in.kgs }

// Dir is the local RocksDB directory.
func (in *Instance) Dir() string { return in.dir }

// DB is the instance's database.
func (in *Instance) DB() *rocksdb.DB { return in.db }

// RecordCRC32C notes the CRC32C of the file at path, which the database is
// about to take in (ingestion links it): uploads of the instance then
// need not read it back.
func (in *Instance) RecordCRC32C(path string, crc uint32) error { return in.sums.record(path, crc) }

// Codec is the codec of e's state, once e is known to belong to the
// instance: a state it declares, a key group in its range.
func (in *Instance) Codec(e *snapshot.Entry) (*Codec, error) {
	if in.db == nil {
		return nil, ErrClosed
	}
	c, ok := in.codecs[e.State]
	if !ok {
		return nil, fmt.Errorf("%w: operator %s declares no keyed state %q", snapshot.ErrNotFound, in.op.Label(), e.State)
	}
	if !in.kgs.Contains(e.KeyGroup) {
		return nil, fmt.Errorf("rocksdb: state %q: key group %d outside subtask %d's range %s", e.State, e.KeyGroup, in.index, in.kgs)
	}
	return c, nil
}

// Put writes one entry: it sets a value, reducing, aggregating or map
// entry, and appends an element to a list state's list.
func (in *Instance) Put(e *snapshot.Entry) error {
	c, err := in.Codec(e)
	if err != nil {
		return err
	}
	if in.key, err = c.EncodeKey(in.key[:0], e); err != nil {
		return err
	}
	if c.Kind == snapshot.List {
		// Read-append-write, not a merge operand: files never hold
		// operands, so any RocksDB tool reads them without our operator.
		old, _, err := in.db.Get(c.State, in.key)
		if err != nil {
			return fmt.Errorf("rocksdb: state %q: %w", c.State, err)
		}
		if in.val, err = c.AppendElement(old, len(old), e); err != nil {
			return err
		}
	} else if in.val, err = c.EncodeValue(in.val[:0], e); err != nil {
		return err
	}
	return in.db.Put(c.State, in.key, in.val)
}

// Delete removes an entry's key: the value, the map entry, or the whole
// list.
func (in *Instance) Delete(e *snapshot.Entry) error {
	c, err := in.Codec(e)
	if err != nil {
		return err
	}
	if in.key, err = c.EncodeKey(in.key[:0], &snapshot.Entry{KeyGroup: e.KeyGroup, Key: e.Key, Namespace: e.Namespace, UserKey: e.UserKey}); err != nil {
		return err
	}
	return in.db.Delete(c.State, in.key)
}

// Entries streams the instance's entries in kgs (see snapshot.Reader).
func (in *Instance) Entries(ctx context.Context, kgs keygroup.Range) snapshot.Entries {
	if in.db == nil {
		return snapshot.FailedEntries(ErrClosed)
	}
	return ScanEntries(ctx, in.db, in.op, kgs.Intersect(in.kgs), false)
}

// SetOperatorState replaces an operator list state's elements.
func (in *Instance) SetOperatorState(state string, values [][]byte) {
	in.ops.list(state).Values = slices.Clone(values)
}

// AddElement appends one element to an operator list state.
func (in *Instance) AddElement(state string, value []byte) {
	l := in.ops.list(state)
	l.Values = append(l.Values, slices.Clone(value))
}

// SetRaw sets the subtask's raw state.
func (in *Instance) SetRaw(raw snapshot.RawState) {
	in.ops.Raw = snapshot.RawState{Keyed: slices.Clone(raw.Keyed), Operator: slices.Clone(raw.Operator)}
}

// Close closes the local database; the directory stays.
func (in *Instance) Close() error {
	in.db.Close()
	in.db = nil
	return nil
}

// SubtaskModel is the model's view of the instance; keyed figures are
// unknown without a scan.
func (in *Instance) SubtaskModel() *snapshot.Subtask {
	st := &snapshot.Subtask{Index: in.index, KeyGroups: in.kgs}
	st.Operator, st.OperatorElements = in.ops.stats()
	st.RawKeyedBytes = int64(len(in.ops.Raw.Keyed))
	st.RawOperatorBytes = int64(len(in.ops.Raw.Operator))
	return st
}

// ErrClosed is the error of a write or read on a closed instance.
var ErrClosed = errors.New("rocksdb: instance is closed")

// Destroy closes the instance and removes its directory.
func (in *Instance) Destroy() error {
	in.Close()
	return os.RemoveAll(in.dir)
}
