package flink

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"

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

// SubtasksRehashed writes the given subtasks of newOp with every stored
// pair of op whose key hashes into their key groups at newOp's max
// parallelism, reading op's stored pairs once: a unit of work (growing:
// one old key group, which spreads over new g, g+M, ...; shrinking: one
// new key group, made of old k, k+M', ... whole) is routed by one of a
// few workers, and the units are written in order, so the files do not
// depend on the workers' timing. Memory holds the units in flight, a few
// old key groups.
func (w *writer) SubtasksRehashed(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, subtasks []int, kgs []keygroup.Range, codecs *snapshot.Codecs) ([]snapshot.SubtaskWriter, []snapshot.Stats, error) {
	sr, ok := r.(*SnapshotReader)
	if !ok {
		return nil, nil, fmt.Errorf("flink writer: no Flink snapshot to re-hash from")
	}
	rh := &rehash{op: op, m: op.MaxParallelism, m2: newOp.MaxParallelism}
	defer func() { closeSources(rh.srcs) }()
	fail := func(err error) ([]snapshot.SubtaskWriter, []snapshot.Stats, error) {
		for _, sw := range rh.out {
			sw.fail(err)
			sw.Close()
		}
		return nil, nil, err
	}
	for i, j := range subtasks {
		s, err := w.Subtask(ctx, newOp, j, kgs[i])
		if err != nil {
			return fail(err)
		}
		sw := s.(*subtaskWriter)
		rh.out = append(rh.out, sw)
		if kgs[i].Len() > 0 {
			if err := sw.startKeyed(); err != nil {
				return fail(err)
			}
		}
	}
	if err := rh.open(ctx, sr, newOp, codecs); err != nil {
		return fail(err)
	}
	if err := rh.run(ctx); err != nil {
		return fail(err)
	}
	sws := make([]snapshot.SubtaskWriter, len(rh.out))
	counts := make([]snapshot.Stats, len(rh.out))
	for i, sw := range rh.out {
		sw.keyedN.Known = false
		sws[i], counts[i] = sw, sw.keyedN
	}
	return sws, counts, nil
}

// rehash is one pass over an operator's stored pairs.
type rehash struct {
	op     *snapshot.Operator
	m, m2  int
	out    []*subtaskWriter
	srcs   []*pairSource
	hs     map[*layout]*keyHasher
	ids    map[*layout]int // the new state id of each stored state
	states int
	// dest is the index in out of the subtask writing new key group k,
	// -1 for none.
	dest []int
	// units are the old key groups (growing) or new ones (shrinking) to
	// route, in writing order.
	units []int
}

func (rh *rehash) open(ctx context.Context, sr *SnapshotReader, newOp *snapshot.Operator, codecs *snapshot.Codecs) error {
	for _, sub := range rh.op.Subtasks {
		ps, ok, err := sr.pairSources(ctx, rh.op, sub.Index)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("operator %q subtask %d: its keyed state is not canonical key groups", rh.op.Label(), sub.Index)
		}
		rh.srcs = append(rh.srcs, ps...)
	}
	hs, err := hashers(rh.op, rh.srcs, codecs)
	if err != nil {
		return err
	}
	rh.hs, rh.ids, rh.states = hs, map[*layout]int{}, len(newOp.KeyedStates)
	for _, p := range rh.srcs {
		for _, l := range p.s.layouts {
			id := slices.IndexFunc(newOp.KeyedStates, func(k snapshot.KeyedState) bool { return k.Name == l.name })
			if id < 0 {
				return fmt.Errorf("operator %q: stored state %q is not in the new operator", rh.op.Label(), l.name)
			}
			rh.ids[l] = id
		}
	}
	rh.dest = make([]int, rh.m2)
	for k := range rh.dest {
		rh.dest[k] = -1
	}
	for i, sw := range rh.out {
		for k := sw.kgs.Start; k <= sw.kgs.End; k++ {
			rh.dest[k] = i
		}
	}
	if rh.m2%rh.m == 0 {
		for g := range rh.m {
			if rh.children(g) != nil {
				rh.units = append(rh.units, g)
			}
		}
		return nil
	}
	for _, sw := range rh.out {
		for k := sw.kgs.Start; k <= sw.kgs.End; k++ {
			rh.units = append(rh.units, k)
		}
	}
	return nil
}

// children are the new key groups a unit writes, in writing order: those
// of the subtasks written.
func (rh *rehash) children(u int) []int {
	var out []int
	if rh.m2%rh.m == 0 {
		for k := u; k < rh.m2; k += rh.m {
			if rh.dest[k] >= 0 {
				out = append(out, k)
			}
		}
		return out
	}
	return []int{u}
}

func (rh *rehash) sourceOf(g int) *pairSource {
	for _, p := range rh.srcs {
		if r := p.s.h.Range; g >= int(r.Start) && g <= int(r.End()) {
			return p
		}
	}
	return nil
}

// routed is one unit's output: per subtask written, its new key groups'
// bytes, one after the other, and where each starts.
type routed struct {
	err    error
	out    [][]byte
	starts [][]groupAt
	counts []snapshot.Stats
	// per new key group of the unit and new state id, the pairs, and
	// where the last pair's key starts (to flag it).
	pairs [][]byte
	last  []int
	read  []byte
}

type groupAt struct {
	kg  int
	off int64
}

// run routes the units on a few workers and writes them in order.
func (rh *rehash) run(ctx context.Context) error {
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The units in flight, each holding a routed: the feeder takes a free
	// one, in unit order, before a unit starts, and the writer gives it
	// back once the unit is written, so the unit it waits for always has
	// one.
	free := make(chan *routed, workers+1)
	for range cap(free) {
		free <- &routed{}
	}
	done := make([]chan *routed, len(rh.units))
	for i := range done {
		done[i] = make(chan *routed, 1)
	}
	type job struct {
		i  int
		rt *routed
	}
	next := make(chan job)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(next)
		for i := range rh.units {
			var rt *routed
			select {
			case rt = <-free:
			case <-ctx.Done():
				return
			}
			select {
			case next <- job{i, rt}:
			case <-ctx.Done():
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for j := range next {
				j.rt.err = rh.route(rh.units[j.i], j.rt)
				done[j.i] <- j.rt
			}
		})
	}
	err := rh.write(ctx, done, free)
	cancel()
	wg.Wait()
	return err
}

// write writes the routed units in order.
func (rh *rehash) write(ctx context.Context, done []chan *routed, free chan *routed) error {
	for i := range rh.units {
		var rt *routed
		select {
		case rt = <-done[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if rt.err != nil {
			return fmt.Errorf("operator %q: %w", rh.op.Label(), rt.err)
		}
		for j, sw := range rh.out {
			if len(rt.out[j]) == 0 {
				continue
			}
			for _, at := range rt.starts[j] {
				sw.offsets[at.kg-sw.kgs.Start] = sw.keyed.pos + at.off
			}
			if err := sw.keyed.write(rt.out[j]); err != nil {
				return err
			}
			sw.keyedN.Entries += rt.counts[j].Entries
			sw.keyedN.Bytes += rt.counts[j].Bytes
		}
		free <- rt
	}
	return nil
}

// route gathers the pairs of unit u by new key group and state, then
// lays them out per subtask written as Flink's full snapshot writes a key
// group.
func (rh *rehash) route(u int, rt *routed) error {
	kids := rh.children(u)
	slot := func(k int) int { return (k - u) / rh.m } // growing: child index
	if rh.m2%rh.m != 0 {
		slot = func(int) int { return 0 }
	}
	n := len(kids) * rh.states
	if rh.m2%rh.m == 0 {
		n = rh.m2 / rh.m * rh.states
	}
	rt.pairs = slices.Grow(rt.pairs[:0], n)[:n]
	rt.last = slices.Grow(rt.last[:0], n)[:n]
	for i := range rt.pairs {
		rt.pairs[i] = rt.pairs[i][:0]
	}
	outs := len(rh.out)
	rt.out = slices.Grow(rt.out[:0], outs)[:outs]
	rt.starts = slices.Grow(rt.starts[:0], outs)[:outs]
	rt.counts = slices.Grow(rt.counts[:0], outs)[:outs]
	for j := range outs {
		rt.out[j], rt.starts[j], rt.counts[j] = rt.out[j][:0], rt.starts[j][:0], snapshot.Stats{}
	}
	prefix := 1
	if rh.m2 > 128 {
		prefix = 2
	}
	add := func(k int, l *layout, body, value []byte) {
		i := slot(k)*rh.states + rh.ids[l]
		buf := binary.BigEndian.AppendUint32(rt.pairs[i], uint32(prefix+len(body)))
		rt.last[i] = len(buf)
		if prefix == 1 {
			buf = append(buf, byte(k))
		} else {
			buf = binary.BigEndian.AppendUint16(buf, uint16(k))
		}
		buf = append(buf, body...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(value)))
		rt.pairs[i] = append(buf, value...)
		c := &rt.counts[rh.dest[k]]
		c.Entries += l.storedEntries(value)
		c.Bytes += int64(len(body) + len(value))
	}
	if rh.m2%rh.m == 0 {
		g := u
		if p := rh.sourceOf(g); p != nil {
			err := p.pairs(g, &rt.read, func(l *layout, body, value []byte) error {
				k, err := rh.hs[l].keyGroup(body, rh.m2)
				if err != nil {
					return err
				}
				if k%rh.m != g {
					return fmt.Errorf("state %q: key 0x%x stored in key group %d hashes to %d of %d", l.name, body, g, k%rh.m, rh.m)
				}
				if rh.dest[k] >= 0 {
					add(k, l, body, value)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	} else {
		k := u
		for g := k; g < rh.m; g += rh.m2 {
			p := rh.sourceOf(g)
			if p == nil {
				continue
			}
			err := p.pairs(g, &rt.read, func(l *layout, body, value []byte) error {
				add(k, l, body, value)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	for _, k := range kids {
		rt.layOut(k, slot(k)*rh.states, rh.states, rh.dest[k])
	}
	return nil
}

// layOut appends new key group k (its pairs from index at, per state) to
// the output of subtask j: per state its id and its pairs, the last one
// flagged on its key's first byte, then the end-of-key-group mark. An
// empty key group is left out (its offset stays 0).
func (rt *routed) layOut(k, at, states, j int) {
	out := rt.out[j]
	start := len(out)
	for id := range states {
		data := rt.pairs[at+id]
		if len(data) == 0 {
			continue
		}
		data[rt.last[at+id]] |= 0x80
		out = binary.BigEndian.AppendUint16(out, uint16(id))
		out = append(out, data...)
	}
	if len(out) == start {
		return
	}
	rt.starts[j] = append(rt.starts[j], groupAt{kg: k, off: int64(start)})
	rt.out[j] = binary.BigEndian.AppendUint16(out, endOfKeyGroupMark)
}
