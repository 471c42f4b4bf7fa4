package flink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// The fast path of a max-parallelism change between Flink snapshots: the
// stored pairs of canonical key groups (key-group prefix, key, namespace,
// user key; the value as stored, TTL and list joins included) are moved
// whole, only their key re-hashed and their prefix rewritten. Values are
// never decoded. It takes canonical key-groups streams (canonical
// savepoints, RocksDB full snapshots); heap-format, native RocksDB and
// changelog sources go entry by entry.
//
// When the new max parallelism is a multiple of the old one, the keys of
// old key group g go to new key groups g, g+M, g+2M, ...; when it divides
// the old one, new key group k holds old key groups k, k+M', ... whole.
// Either way a new key group gathers in memory at most one old key group's
// pairs (or, shrinking, the old key groups it is made of), and key groups
// are written in the order they are complete, each at its own offset.

// pairSource is one old subtask's canonical key-groups stream.
type pairSource struct {
	s      *statefile.KeyGroupStream
	prefix int
}

// pairSources opens the canonical key-groups streams of a subtask; ok is
// false when its keyed state is not canonical key groups (heap format,
// native RocksDB, changelog, unreadable).
func (r *SnapshotReader) pairSources(ctx context.Context, op *snapshot.Operator, subtask int) (_ []*pairSource, ok bool, err error) {
	fo, st, err := r.subtaskState(op, subtask)
	if err != nil {
		return nil, false, err
	}
	if st == nil || st.ManagedKeyedState == nil {
		return nil, true, nil
	}
	if r.keyedUnread(st) || st.ManagedKeyedState.KeyGroups == nil {
		return nil, false, nil
	}
	s, err := statefile.OpenKGStream(ctx, r.res, st.ManagedKeyedState, fo.MaxParallelism)
	if err != nil {
		return nil, false, err
	}
	f, err := s.Detect()
	if err != nil || f == statefile.HeapFormat {
		s.Close()
		return nil, false, err
	}
	return []*pairSource{{s: s, prefix: s.Prefix}}, true, nil
}

func closeSources(srcs []*pairSource) {
	for _, p := range srcs {
		p.s.Close()
	}
}

// pairs calls fn for each stored pair of key group kg: the state's layout
// (as the source's header names it), the key without its key-group
// prefix, and the value. The key group's bytes are read into *scratch,
// which it grows as needed, so a caller can reuse its memory.
func (p *pairSource) pairs(kg int, scratch *[]byte, fn func(l *statefile.Layout, body, value []byte) error) error {
	g, err := p.group(kg, scratch)
	if err != nil {
		return err
	}
	return g.each(func(id, _ int, body, value []byte) error { return fn(p.s.Layouts[id], body, value) })
}

// storedGroup is the stored pairs of one key group of a pairSource.
type storedGroup struct {
	p  *pairSource
	kg int
	b  []byte // nil: empty
	at int64  // where b starts in the file, for errors
}

// group reads key group kg into *scratch (see pairs).
func (p *pairSource) group(kg int, scratch *[]byte) (storedGroup, error) {
	b, off, err := p.s.GroupBytesInto(*scratch, kg)
	if err != nil || b == nil {
		return storedGroup{}, err
	}
	*scratch = b
	at := p.s.Base + off
	if p.s.Header.Compression {
		if b, err = statefile.Unsnappy(b, p.s.File, at); err != nil {
			return storedGroup{}, err
		}
	}
	return storedGroup{p: p, kg: kg, b: b, at: at}, nil
}

// each calls fn for each pair of the group: the state's id in the
// source's header, where the pair (its key's length) starts in g.b, the
// key without its key-group prefix, and the value.
func (g storedGroup) each(fn func(id, at int, body, value []byte) error) error {
	if g.b == nil {
		return nil
	}
	p, b, kg := g.p, g.b, g.kg
	bad := func(format string, args ...any) error {
		return &wire.CorruptError{File: p.s.File, Offset: g.at, Reason: fmt.Sprintf("key group %d: ", kg) + fmt.Sprintf(format, args...)}
	}
	if len(b) < 2 {
		return bad("no state id")
	}
	id := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	for {
		if id >= len(p.s.Layouts) {
			return bad("state id %d, but the header has %d states", id, len(p.s.Layouts))
		}
		if len(b) < 4 {
			return bad("truncated key length")
		}
		at := len(g.b) - len(b)
		n := int(int32(binary.BigEndian.Uint32(b)))
		if n < p.prefix || n > len(b)-4 {
			return bad("key of %d bytes in %d", n, len(b)-4)
		}
		key := b[4 : 4+n]
		b = b[4+n:]
		if len(b) < 4 {
			return bad("truncated value length")
		}
		m := int(int32(binary.BigEndian.Uint32(b)))
		if m < 0 || m > len(b)-4 {
			return bad("value of %d bytes in %d", m, len(b)-4)
		}
		value := b[4 : 4+m]
		b = b[4+m:]
		got := int(key[0] &^ 0x80)
		if p.prefix == 2 {
			got = got<<8 | int(key[1])
		}
		if got != kg {
			return bad("state %q: key says key group %d", p.s.Layouts[id].Name, got)
		}
		if err := fn(id, at, key[p.prefix:], value); err != nil {
			if errors.Is(err, keygroup.ErrUnknownKeyType) {
				return err
			}
			return bad("%v", err)
		}
		if key[0]&0x80 != 0 {
			if len(b) < 2 {
				return bad("no state id after the last pair of a state")
			}
			id = int(binary.BigEndian.Uint16(b))
			b = b[2:]
			if id == statefile.EndOfKeyGroupMark {
				if len(b) != 0 {
					return bad("%d bytes after the end-of-key-group mark", len(b))
				}
				return nil
			}
		}
	}
}

// keyHasher hashes the key of a stored pair of one state.
type keyHasher struct {
	l     *statefile.Layout
	codec snapshot.Codec
	fixed int // the key's byte width, or -1
	// long and integer mark the common keys hashed here, not by codec.
	long, integer bool
}

func newKeyHasher(l *statefile.Layout, t snapshot.Type, codecs *snapshot.Codecs) (*keyHasher, error) {
	c, err := codecs.Codec(t)
	if err != nil {
		return nil, err
	}
	kind := typeser.KindOf(l.Key)
	return &keyHasher{l: l, codec: c, fixed: typeser.FixedLength(l.Key), long: kind == "Long", integer: kind == "Integer"}, nil
}

// key is the key of a stored pair: its leading bytes where the key
// serializer has a fixed width (the common case, and the fast one), else
// as the reader splits key from namespace.
func (h *keyHasher) key(body []byte) ([]byte, bool) {
	if h.fixed >= 0 {
		if h.l.Kind == statefile.KindTimer {
			body = body[min(8, len(body)):]
		}
		if h.fixed > len(body) {
			return nil, false
		}
		return body[:h.fixed], true
	}
	key, _, _, ok := h.l.SplitKey(body)
	return key, ok
}

// keyGroup is the key group of the pair's key at maxParallelism.
func (h *keyHasher) keyGroup(body []byte, maxParallelism int) (int, error) {
	key, ok := h.key(body)
	if !ok {
		return 0, fmt.Errorf("state %q: cannot tell the key from the namespace in 0x%x", h.l.Name, body)
	}
	var code int32
	var err error
	switch {
	case h.long && len(key) == 8:
		code = keygroup.HashInt64(int64(binary.BigEndian.Uint64(key)))
	case h.integer && len(key) == 4:
		code = int32(binary.BigEndian.Uint32(key))
	default:
		code, err = h.codec.HashCode(key)
	}
	if err != nil {
		return 0, fmt.Errorf("state %q: cannot hash key 0x%x: %w", h.l.Name, key, err)
	}
	return keygroup.OfHash(code, maxParallelism), nil
}

// hashers builds the key hashers of a source's states by name, from the
// key types op declares.
func hashers(op *snapshot.Operator, srcs []*pairSource, codecs *snapshot.Codecs) (map[*statefile.Layout]*keyHasher, error) {
	out := map[*statefile.Layout]*keyHasher{}
	for _, p := range srcs {
		for _, l := range p.s.Layouts {
			ks, ok := op.KeyedStateByName(l.Name)
			if !ok {
				return nil, fmt.Errorf("operator %q: stored state %q is not declared", op.Label(), l.Name)
			}
			h, err := newKeyHasher(l, ks.KeyType, codecs)
			if err != nil {
				return nil, fmt.Errorf("operator %q keyed state %q: %w", op.Label(), l.Name, err)
			}
			out[l] = h
		}
	}
	return out, nil
}

// RehashedStats counts a subtask's entries and bytes per key group of
// another max parallelism from its stored pairs (snapshot.RehashStater).
func (r *SnapshotReader) RehashedStats(ctx context.Context, op *snapshot.Operator, subtask int, maxParallelism int, codecs *snapshot.Codecs) ([]snapshot.KeyGroupStat, bool, error) {
	srcs, ok, err := r.pairSources(ctx, op, subtask)
	if err != nil || !ok {
		return nil, false, err
	}
	defer closeSources(srcs)
	hs, err := hashers(op, srcs, codecs)
	if err != nil {
		return nil, false, err
	}
	stats := map[int]*snapshot.KeyGroupStat{}
	var order []int
	var scratch []byte
	for _, p := range srcs {
		kr := p.s.H.Range
		for kg := int(kr.Start); kg <= int(kr.End()); kg++ {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			err := p.pairs(kg, &scratch, func(l *statefile.Layout, body, value []byte) error {
				nk := kg % maxParallelism
				if op.MaxParallelism%maxParallelism != 0 {
					var err error
					if nk, err = hs[l].keyGroup(body, maxParallelism); err != nil {
						return err
					}
				}
				st := stats[nk]
				if st == nil {
					st = &snapshot.KeyGroupStat{KeyGroup: nk}
					stats[nk] = st
					order = append(order, nk)
				}
				st.Entries += l.StoredEntries(value)
				st.Bytes += int64(len(body) + len(value))
				return nil
			})
			if err != nil {
				return nil, false, fmt.Errorf("operator %q subtask %d: %w", op.Label(), subtask, err)
			}
		}
	}
	out := make([]snapshot.KeyGroupStat, 0, len(order))
	for _, k := range order {
		out = append(out, *stats[k])
	}
	return out, true, nil
}

// StoredKeyGroupBytes gives the stored bytes of each non-empty key group
// of a subtask's canonical key groups from the offsets `_metadata`
// records (snapshot.KeyGroupSizer); ok is false for other keyed state.
func (r *SnapshotReader) StoredKeyGroupBytes(ctx context.Context, op *snapshot.Operator, subtask int) ([]snapshot.KeyGroupStat, bool, error) {
	srcs, ok, err := r.pairSources(ctx, op, subtask)
	if err != nil || !ok {
		return nil, false, err
	}
	defer closeSources(srcs)
	var out []snapshot.KeyGroupStat
	for _, p := range srcs {
		for i, o := range p.s.H.Offsets {
			if e := statefile.NextOffset(p.s.Offs, o, int(p.s.Size)); o > 0 && e > o {
				out = append(out, snapshot.KeyGroupStat{KeyGroup: int(p.s.H.Range.Start) + i, Bytes: e - o})
			}
		}
	}
	return out, true, nil
}
