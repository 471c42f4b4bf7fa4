package rocksstate

import (
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/snapshot"
)

// Instance is one keyed subtask's working state (rocksdbformat.Instance)
// as the runtime's checkpointer keeps it: with the shared files its
// checkpoints reference and the state backend's point reads. It is not
// safe for concurrent use.
type Instance struct {
	*rocksdbformat.Instance
	// known maps local SST names to the shared files they were uploaded
	// as (or restored from), so later checkpoints reference them.
	known map[string]rocksdbformat.File
	key   []byte
}

// Point lookups. A keyed-state read touches one RocksDB key (value,
// reducing, aggregating state, one map user key, a merged list) or one
// key prefix (a key's map entries): the key is encoded exactly as Put
// writes it (rocksdbformat.Codec), so no read scans a key group.

// lookupKey checks q and encodes the RocksDB key of its state, key group,
// key and namespace, plus its user key when withUserKey (map state only).
// A state never written to may have no column family in an instance
// restored from older files: the lookups then find nothing, and create
// none.
func (in *Instance) lookupKey(q *snapshot.Entry, withUserKey bool) (*rocksdbformat.Codec, error) {
	c, err := in.Codec(q)
	if err != nil {
		return nil, err
	}
	k := snapshot.Entry{KeyGroup: q.KeyGroup, Key: q.Key, Namespace: q.Namespace}
	if withUserKey {
		k.UserKey = q.UserKey
	}
	if in.key, err = c.EncodeKey(in.key[:0], &k); err != nil {
		return nil, err
	}
	return c, nil
}

// checkKind refuses a read op that does not apply to c's kind.
func checkKind(c *rocksdbformat.Codec, op string, kinds ...snapshot.StateKind) error {
	if slices.Contains(kinds, c.Kind) {
		return nil
	}
	hint := ""
	if c.Kind == snapshot.List {
		hint = " (read lists with GetList)"
	}
	return fmt.Errorf("rocksdb: %s cannot read state %q: it is %s state%s", op, c.State, c.Kind, hint)
}

// Get looks up one entry with a RocksDB point read: the value of q's
// state, key group, key and namespace for value, reducing and aggregating
// state, and the value of q.UserKey for map state (a nil user key is the
// empty one). It returns the entry with Value and ExpiresAt set and its
// other fields taken from q (its Value is its own), and false when there
// is none. Expired entries are returned like live ones: TTL visibility is
// the caller's to apply, as Entries leaves it too. List state is read
// with GetList.
func (in *Instance) Get(q *snapshot.Entry) (snapshot.Entry, bool, error) {
	c, err := in.lookupKey(q, true)
	if err != nil {
		return snapshot.Entry{}, false, err
	}
	if err := checkKind(c, "Get", snapshot.Value, snapshot.Reducing, snapshot.Aggregating, snapshot.Map); err != nil {
		return snapshot.Entry{}, false, err
	}
	v, ok, err := in.DB().Get(c.State, in.key)
	if err != nil {
		return snapshot.Entry{}, false, fmt.Errorf("rocksdb: state %q: %w", c.State, err)
	}
	if !ok {
		return snapshot.Entry{}, false, nil
	}
	e := snapshot.Entry{KeyGroup: q.KeyGroup, State: c.State, Key: q.Key, Namespace: q.Namespace}
	if c.Kind == snapshot.Map {
		e.UserKey = q.UserKey
	}
	if _, err := c.DecodeValues(in.key, v, &e, func(*snapshot.Entry) bool { return true }); err != nil {
		return snapshot.Entry{}, false, err
	}
	return e, true, nil
}

// GetList reads the merged list of q's list state, key group, key and
// namespace with one point read and returns its elements in list order
// (nil when the key has none), each with Value and ExpiresAt set and its
// other fields taken from q. The values are the caller's. Expired
// elements are returned like live ones.
func (in *Instance) GetList(q *snapshot.Entry) ([]snapshot.Entry, error) {
	c, err := in.lookupKey(q, false)
	if err != nil {
		return nil, err
	}
	if err := checkKind(c, "GetList", snapshot.List); err != nil {
		return nil, err
	}
	v, ok, err := in.DB().Get(c.State, in.key)
	if err != nil {
		return nil, fmt.Errorf("rocksdb: state %q: %w", c.State, err)
	}
	if !ok {
		return nil, nil
	}
	var out []snapshot.Entry
	e := snapshot.Entry{KeyGroup: q.KeyGroup, State: c.State, Key: q.Key, Namespace: q.Namespace}
	if _, err := c.DecodeValues(in.key, v, &e, func(x *snapshot.Entry) bool {
		out = append(out, *x)
		return true
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// MapEntries streams the entries of q's map state, key group, key and
// namespace (q.UserKey is ignored) in ascending user-key order, with a
// RocksDB iterator bounded to the key's prefix. Each yielded entry's
// UserKey and Value are valid until the loop body returns; Clone what is
// kept. Expired entries are yielded like live ones. The loop body may
// write to the instance (remove the entry, say): the iterator reads the
// state as it was when the loop started.
func (in *Instance) MapEntries(q *snapshot.Entry) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		c, err := in.lookupKey(q, false)
		if err == nil {
			err = checkKind(c, "MapEntries", snapshot.Map)
		}
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		prefix := append([]byte(nil), in.key...)
		it := in.DB().NewPrefixIterator(c.State, prefix)
		defer it.Close()
		e := snapshot.Entry{KeyGroup: q.KeyGroup, State: c.State, Key: q.Key, Namespace: q.Namespace}
		for ; it.Valid(); it.Next() {
			k := it.Key()
			e.UserKey = k[len(prefix):]
			val, err := c.TakeTTL(k, it.Value(), &e)
			if err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			e.Value = val
			if !yield(e, nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(snapshot.Entry{}, fmt.Errorf("%w: rocksdb %q state %q: %w", snapshot.ErrCorrupt, in.DB().Path(), c.State, err))
		}
	}
}
