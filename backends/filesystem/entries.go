package filesystem

import (
	"context"

	"github.com/stateutil/stateutil/internal/chkdir"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Entries streams the subtask's entries of the key groups in kgs, reading
// only those key groups' sections and checking each one's checksum and
// recorded counts. Yielded byte slices are reused: copy what you keep.
func (r *Reader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		sub, l, err := r.subtask(op, subtask)
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		want := sub.KeyGroups.Intersect(kgs)
		k := l.Keyed
		if k == nil || want.Len() == 0 {
			return
		}
		first, last := want.Start-sub.KeyGroups.Start, want.End-sub.KeyGroups.Start
		start, end := k.Offsets[first], k.Offsets[last+1]
		if start == end {
			return
		}
		f, err := r.openBlob(ctx, &k.Data, "keyed state")
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		defer f.close()
		s := &scanner{r: f, name: f.name, bufOff: start, end: end}
		var ev entryView
		for i := first; i <= last; i++ {
			secStart, secEnd := k.Offsets[i], k.Offsets[i+1]
			if secStart == secEnd {
				continue
			}
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			kg, st := sub.KeyGroups.Start+i, sub.KeyGroupStats[i]
			if err := s.begin(secEnd-secStart, k.CRCs[i], kg); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			var n, size int64
			for s.off() < secEnd {
				left := secEnd - s.off()
				used, need, err := decodeEntry(s.unread(left), left, len(k.States), &ev)
				if err == errShort {
					if err := s.fill(min(need, left)); err != nil {
						yield(snapshot.Entry{}, err)
						return
					}
					continue
				}
				if err == nil && n == st.Entries {
					err = errTooMany
				}
				if err != nil {
					yield(snapshot.Entry{}, snapshot.Corrupt(s.name, s.off(), "key group %d: %v", kg, err))
					return
				}
				s.pos += used
				n++
				size += ev.size()
				e := snapshot.Entry{KeyGroup: kg, State: k.States[ev.state], Key: ev.key, Namespace: ev.namespace,
					UserKey: ev.userKey, Value: ev.value, ExpiresAt: ev.expiresAt}
				if !yield(e, nil) {
					return
				}
			}
			if err := s.finish(k.CRCs[i], kg, secStart); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			if n != st.Entries || size != st.Bytes {
				yield(snapshot.Entry{}, snapshot.Corrupt(s.name, secStart, "key group %d: %d entries / %d bytes, %s records %d / %d", kg, n, size, chkdir.MetadataFile, st.Entries, st.Bytes))
				return
			}
		}
	}
}
