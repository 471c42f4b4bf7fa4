package rocksdbformat

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Scanned is a database ScanEntries reads: a read-only one (a snapshot's
// subtask) or a writable one (a live instance).
type Scanned interface {
	Path() string
	Has(cf string) bool
	NewIterator(cf string, lower, upper []byte) *rocksdb.Iterator
}

// ScanEntries streams the entries of op's keyed states held in d whose key
// group lies in kgs, in ascending key-group order; within a key group,
// state by state in descriptor order, each in RocksDB key order. Each
// state's iterator is bounded to the key-group prefixes of kgs, so only
// those prefixes are read. An entry's bytes are the iterators', valid
// until the next entry is yielded: clone what is kept. With hold (d
// read-only), they stay valid until the yield of the next key group's
// first entry returns, and after the last entry comes one with key group
// -1, nothing else set: the last key group is valid until its yield
// returns. A key group's pairs are then held in memory.
func ScanEntries(ctx context.Context, d Scanned, op *snapshot.Operator, kgs keygroup.Range, hold bool) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		if kgs.Len() == 0 {
			return
		}
		cs := Codecs(op)
		type cursor struct {
			c  *Codec
			it *rocksdb.Iterator
		}
		var cur []cursor
		defer func() {
			for _, c := range cur {
				c.it.Close()
			}
		}()
		for i := range op.KeyedStates {
			c := cs[op.KeyedStates[i].Name]
			if kgs.End >= 1<<(8*c.prefix) {
				yield(snapshot.Entry{}, fmt.Errorf("rocksdb: key group %d does not fit a %d-byte prefix", kgs.End, c.prefix))
				return
			}
			if !d.Has(c.State) {
				continue // a state with no entries has no column family in older instances
			}
			it := d.NewIterator(c.State, c.KeyGroupPrefix(kgs.Start), c.UpperBound(kgs.End))
			cur = append(cur, cursor{c, it})
			if hold && !it.Retain() {
				yield(snapshot.Entry{}, fmt.Errorf("rocksdb %q: a writable database's pairs cannot be held", d.Path()))
				return
			}
		}
		var e snapshot.Entry
		released := true // the pairs of earlier key groups, where held
		emit := func(x *snapshot.Entry) bool {
			more := yield(*x, nil)
			if !released {
				// The yield of a key group's first entry has returned: the
				// consumer is done with the key groups before it.
				for _, c := range cur {
					c.it.Release()
				}
				released = true
			}
			return more
		}
		for kg := kgs.Start; kg >= 0; {
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			next := -1
			for _, c := range cur {
				for c.it.Valid() {
					k := c.it.Key()
					if err := c.c.DecodeKey(k, &e); err != nil {
						yield(snapshot.Entry{}, err)
						return
					}
					if e.KeyGroup != kg {
						if next < 0 || e.KeyGroup < next {
							next = e.KeyGroup
						}
						break
					}
					if more, err := c.c.DecodeValues(k, c.it.Value(), &e, emit); err != nil {
						yield(snapshot.Entry{}, err)
						return
					} else if !more {
						return
					}
					c.it.Next()
				}
				if err := c.it.Err(); err != nil {
					yield(snapshot.Entry{}, fmt.Errorf("%w: rocksdb %q state %q: %w", snapshot.ErrCorrupt, d.Path(), c.c.State, err))
					return
				}
			}
			kg, released = next, !hold
		}
		if hold {
			yield(snapshot.Entry{KeyGroup: -1}, nil)
		}
	}
}

// KeyEntries reads the entries of one key and namespace of one state from
// d: a point read bounded to the key's RocksDB prefix, the entries cloned.
func KeyEntries(d Scanned, op *snapshot.Operator, state string, kg int, key, namespace []byte) ([]snapshot.Entry, error) {
	ks, ok := op.KeyedStateByName(state)
	if !ok {
		return nil, fmt.Errorf("%w: operator %q has no keyed state %q", snapshot.ErrNotFound, op.Label(), state)
	}
	if !d.Has(state) {
		return nil, nil
	}
	c := newCodec(ks, op.MaxParallelism)
	prefix, err := c.EncodeKey(nil, &snapshot.Entry{KeyGroup: kg, Key: key, Namespace: namespace})
	if err != nil {
		return nil, err
	}
	it := d.NewIterator(state, prefix, rocksdb.PrefixEnd(prefix))
	defer it.Close()
	var out []snapshot.Entry
	var e snapshot.Entry
	for ; it.Valid(); it.Next() {
		k := it.Key()
		if err := c.DecodeKey(k, &e); err != nil {
			return nil, err
		}
		if _, err := c.DecodeValues(k, it.Value(), &e, func(x *snapshot.Entry) bool {
			out = append(out, x.Clone())
			return true
		}); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%w: rocksdb %q state %q: %w", snapshot.ErrCorrupt, d.Path(), state, err)
	}
	return out, nil
}
