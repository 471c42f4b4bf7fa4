package flink

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// CanRehash reports whether the writer can move op's keyed state to
// newOp's max parallelism from the stored pairs (rehash.go): r is a Flink
// snapshot whose subtasks of op are canonical key groups, and one max
// parallelism divides the other.
func (w *writer) CanRehash(r snapshot.Reader, op, newOp *snapshot.Operator) bool {
	sr, ok := r.(*SnapshotReader)
	m, m2 := op.MaxParallelism, newOp.MaxParallelism
	if !ok || m < 1 || m2 < 1 || (m2%m != 0 && m%m2 != 0) {
		return false
	}
	for _, sub := range op.Subtasks {
		srcs, ok, err := sr.pairSources(context.Background(), op, sub.Index)
		closeSources(srcs)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// bucket gathers the pairs of one new key group, per new state id.
type bucket struct {
	states [][]byte
	last   []int // per state: where its last pair's key starts
}

// SubtaskRehashed writes subtask index of newOp with every stored pair of
// op whose key hashes into kgs at newOp's max parallelism.
func (w *writer) SubtaskRehashed(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, index int, kgs keygroup.Range, codecs *snapshot.Codecs) (snapshot.SubtaskWriter, error) {
	sr, ok := r.(*SnapshotReader)
	if !ok {
		return nil, fmt.Errorf("flink writer: no Flink snapshot to re-hash from")
	}
	s, err := w.Subtask(ctx, newOp, index, kgs)
	if err != nil {
		return nil, err
	}
	sw := s.(*subtaskWriter)
	if err := sw.rehashFrom(ctx, sr, op, codecs); err != nil {
		sw.fail(err)
		sw.Close()
		return nil, err
	}
	return sw, nil
}

func (sw *subtaskWriter) rehashFrom(ctx context.Context, sr *SnapshotReader, op *snapshot.Operator, codecs *snapshot.Codecs) error {
	if sw.kgs.Len() <= 0 {
		return nil
	}
	if err := sw.startKeyed(); err != nil {
		return err
	}
	var srcs []*pairSource
	defer func() { closeSources(srcs) }()
	for _, sub := range op.Subtasks {
		ps, ok, err := sr.pairSources(ctx, op, sub.Index)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("operator %q subtask %d: its keyed state is not canonical key groups", op.Label(), sub.Index)
		}
		srcs = append(srcs, ps...)
	}
	hs, err := hashers(op, srcs, codecs)
	if err != nil {
		return err
	}
	ids := map[*layout]int{}
	for _, p := range srcs {
		for _, l := range p.s.layouts {
			id := slices.IndexFunc(sw.op.KeyedStates, func(k snapshot.KeyedState) bool { return k.Name == l.name })
			if id < 0 {
				return fmt.Errorf("operator %q: stored state %q is not in the new operator", op.Label(), l.name)
			}
			ids[l] = id
		}
	}
	sourceOf := func(g int) *pairSource {
		for _, p := range srcs {
			if r := p.s.h.Range; g >= int(r.Start) && g <= int(r.End()) {
				return p
			}
		}
		return nil
	}
	m, m2 := op.MaxParallelism, sw.op.MaxParallelism
	buckets := map[int]*bucket{}
	add := func(k int, l *layout, body, value []byte) {
		b := buckets[k]
		if b == nil {
			b = &bucket{states: make([][]byte, len(sw.op.KeyedStates)), last: make([]int, len(sw.op.KeyedStates))}
			buckets[k] = b
		}
		id := ids[l]
		buf := b.states[id]
		buf = binary.BigEndian.AppendUint32(buf, uint32(sw.prefix+len(body)))
		b.last[id] = len(buf)
		if sw.prefix == 1 {
			buf = append(buf, byte(k))
		} else {
			buf = binary.BigEndian.AppendUint16(buf, uint16(k))
		}
		buf = append(buf, body...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(value)))
		b.states[id] = append(buf, value...)
		sw.keyedN.Entries++
		sw.keyedN.Bytes += int64(len(body) + len(value))
	}
	flush := func(k int) error {
		b := buckets[k]
		if b == nil {
			return nil
		}
		delete(buckets, k)
		sw.offsets[k-sw.kgs.Start] = sw.keyed.pos
		var out []byte
		for id, data := range b.states {
			if len(data) == 0 {
				continue
			}
			data[b.last[id]] |= 0x80
			out = binary.BigEndian.AppendUint16(out, uint16(id))
			if err := sw.keyed.write(out); err != nil {
				return err
			}
			out = out[:0]
			if err := sw.keyed.write(data); err != nil {
				return err
			}
		}
		return sw.keyed.write(binary.BigEndian.AppendUint16(out, endOfKeyGroupMark))
	}
	if m2%m == 0 {
		// Growing: old key group g spreads over new g, g+m, ...
		for g := range m {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !rangeHasResidue(sw.kgs, g, m) {
				continue
			}
			p := sourceOf(g)
			if p == nil {
				continue
			}
			err := p.pairs(g, func(l *layout, body, value []byte) error {
				k, err := hs[l].keyGroup(body, m2)
				if err != nil {
					return err
				}
				if k%m != g {
					return fmt.Errorf("state %q: key 0x%x stored in key group %d hashes to %d of %d", l.name, body, g, k%m, m)
				}
				if sw.kgs.Contains(k) {
					add(k, l, body, value)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("operator %q: %w", op.Label(), err)
			}
			for k := g; k < m2; k += m {
				if err := flush(k); err != nil {
					return err
				}
			}
		}
		sw.keyedN.Known = false
		return nil
	}
	// Shrinking: new key group k is old k, k+m2, ... whole.
	for k := sw.kgs.Start; k <= sw.kgs.End; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		for g := k; g < m; g += m2 {
			p := sourceOf(g)
			if p == nil {
				continue
			}
			err := p.pairs(g, func(l *layout, body, value []byte) error {
				add(k, l, body, value)
				return nil
			})
			if err != nil {
				return fmt.Errorf("operator %q: %w", op.Label(), err)
			}
		}
		if err := flush(k); err != nil {
			return err
		}
	}
	sw.keyedN.Known = false
	return nil
}

// rangeHasResidue reports whether some k in r has k % m == g.
func rangeHasResidue(r keygroup.Range, g, m int) bool {
	if r.Len() >= m {
		return true
	}
	k := r.Start + ((g-r.Start)%m+m)%m
	return k <= r.End
}
