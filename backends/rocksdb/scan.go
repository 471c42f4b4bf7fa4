package rocksdb

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// scanEntries streams the entries of op's keyed states held in d whose key
// group lies in kgs, in ascending key-group order; within a key group,
// state by state in descriptor order, each in RocksDB key order. Each
// state's iterator is bounded to the key-group prefixes of kgs, so only
// those prefixes are read.
func scanEntries(ctx context.Context, d *db, op *snapshot.Operator, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		if kgs.Len() == 0 {
			return
		}
		cs := codecs(op)
		type cursor struct {
			c  *codec
			it pairIter
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
			h, ok := d.cfs[c.state]
			if !ok {
				continue // a state with no entries has no column family in older instances
			}
			cur = append(cur, cursor{c, pairs(d.newIter(h, c.kgPrefix(kgs.Start), c.upperBound(kgs.End)))})
		}
		var e snapshot.Entry
		emit := func(x *snapshot.Entry) bool { return yield(*x, nil) }
		for kg := kgs.Start; kg >= 0; {
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			next := -1
			for _, c := range cur {
				for c.it.valid() {
					k := c.it.key()
					if err := c.c.decodeKey(k, &e); err != nil {
						yield(snapshot.Entry{}, err)
						return
					}
					if e.KeyGroup != kg {
						if next < 0 || e.KeyGroup < next {
							next = e.KeyGroup
						}
						break
					}
					if more, err := c.c.decodeValues(k, c.it.value(), &e, emit); err != nil {
						yield(snapshot.Entry{}, err)
						return
					} else if !more {
						return
					}
					c.it.next()
				}
				if err := c.it.err(); err != nil {
					yield(snapshot.Entry{}, fmt.Errorf("%w: rocksdb %q state %q: %w", snapshot.ErrCorrupt, d.path, c.c.state, err))
					return
				}
			}
			kg = next
		}
	}
}
