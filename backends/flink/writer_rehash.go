package flink

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
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
		sw.cached = len(subtasks) > directFiles
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

// directFiles is how many keyed files a pass writes around the page
// cache at most: each holds two 2 MiB chunks (storage.CreateOnce).
const directFiles = 8

// rehash is one pass over an operator's stored pairs.
type rehash struct {
	op     *snapshot.Operator
	m, m2  int
	out    []*subtaskWriter
	srcs   []*pairSource
	by     []rehashSource // per source, in srcs order
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
	rh.states = len(newOp.KeyedStates)
	for _, p := range rh.srcs {
		src := rehashSource{p: p}
		for _, l := range p.s.Layouts {
			id := slices.IndexFunc(newOp.KeyedStates, func(k snapshot.KeyedState) bool { return k.Name == l.Name })
			if id < 0 {
				return fmt.Errorf("operator %q: stored state %q is not in the new operator", rh.op.Label(), l.Name)
			}
			src.ids, src.hs, src.list = append(src.ids, id), append(src.hs, hs[l]), append(src.list, l.Kind == snapshot.List)
		}
		rh.by = append(rh.by, src)
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

func (rh *rehash) sourceOf(g int) *rehashSource {
	for i, p := range rh.srcs {
		if r := p.s.H.Range; g >= int(r.Start) && g <= int(r.End()) {
			return &rh.by[i]
		}
	}
	return nil
}

// rehashSource is what routing needs of one source, by its header's
// state ids: the new state id and the key hasher of each stored state.
type rehashSource struct {
	p    *pairSource
	ids  []int
	hs   []*keyHasher
	list []bool // list states, whose stored values hold several entries
}

// routed is one unit's output: per subtask written, its new key groups'
// bytes, one after the other, and where each starts.
type routed struct {
	err    error
	out    [][]byte
	starts [][]groupAt
	counts []snapshot.Stats
	// The unit's old key groups, read into reads.
	groups []unitGroup
	reads  [][]byte
	// The pairs of the subtasks written, in the order read.
	pairs []routedPair
	// Per slot, its pairs' bytes, where the next pair goes in out, and
	// where the last pair's key starts (to flag it).
	sizes, pos, last []int
}

// routedPair is where one pair comes from and goes to: its slot (the new
// key group's index among the unit's, growing, times the states, plus its
// new state id), its new key group, the old key group (index in groups),
// and where in that group's bytes the pair starts. It is written for
// every pair and read back once: kept to 16 bytes, its lengths are read
// again from the pair itself.
type routedPair struct {
	slot, kg, group, at int32
}

// unitGroup is one old key group of a unit, with its source.
type unitGroup struct {
	g   storedGroup
	src *rehashSource
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
	// The units in flight, each holding a routed (an old key group in and
	// its pairs out: most of the memory a rescale takes): the feeder takes
	// a free one, in unit order, before a unit starts, and the writer gives
	// it back once the unit is written, so the unit it waits for always
	// has one. One per worker: a worker whose unit waits to be written
	// idles rather than holding a third.
	free := make(chan *routed, workers)
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

// route lays out the pairs of unit u by new key group and state, as
// Flink's full snapshot writes a key group, in two passes over the old
// key groups: the first hashes each key to its slot and sizes the slots,
// the second copies each pair to its place in the output.
func (rh *rehash) route(u int, rt *routed) error {
	growing := rh.m2%rh.m == 0
	nslots := rh.states
	if growing {
		nslots *= rh.m2 / rh.m
	}
	rt.sizes = resize(rt.sizes, nslots)
	rt.pos = resize(rt.pos, nslots)
	rt.last = resize(rt.last, nslots)
	clear(rt.sizes)
	rt.pairs = rt.pairs[:0]
	// A new key group k comes from old k mod M, and is its child k/M: a
	// shift where M is a power of two (Flink's defaults all are), not a
	// division per pair.
	mShift := -1
	if rh.m&(rh.m-1) == 0 {
		mShift = bits.TrailingZeros(uint(rh.m))
	}
	outs := len(rh.out)
	rt.out = resize(rt.out, outs)
	rt.starts = resize(rt.starts, outs)
	rt.counts = resize(rt.counts, outs)
	for j := range outs {
		rt.out[j], rt.starts[j], rt.counts[j] = rt.out[j][:0], rt.starts[j][:0], snapshot.Stats{}
	}
	if err := rt.read(rh, u); err != nil {
		return err
	}
	prefix := 1
	if rh.m2 > 128 {
		prefix = 2
	}
	for gi, ug := range rt.groups {
		src, g := ug.src, ug.g.kg
		err := ug.g.each(func(id, at int, body, value []byte) error {
			k, child := u, 0
			if growing {
				var err error
				if k, err = src.hs[id].keyGroup(body, rh.m2); err != nil {
					return err
				}
				if mShift >= 0 {
					child = k >> mShift
				} else {
					child = k / rh.m
				}
				if k-child*rh.m != g {
					return fmt.Errorf("state %q: key 0x%x stored in key group %d hashes to %d of %d", src.hs[id].l.Name, body, g, k%rh.m, rh.m)
				}
			}
			j := rh.dest[k]
			if j < 0 {
				return nil
			}
			slot := child*rh.states + src.ids[id]
			rt.sizes[slot] += 8 + prefix + len(body) + len(value)
			c := &rt.counts[j]
			if src.list[id] {
				c.Entries += src.hs[id].l.StoredEntries(value)
			} else {
				c.Entries++
			}
			c.Bytes += int64(len(body) + len(value))
			rt.pairs = append(rt.pairs, routedPair{slot: int32(slot), kg: int32(k), group: int32(gi), at: int32(at)})
			return nil
		})
		if err != nil {
			return err
		}
	}
	rt.place(rh, u)
	for _, pr := range rt.pairs {
		g := &rt.groups[pr.group].g
		from := g.b
		b := rt.out[rh.dest[pr.kg]]
		at := rt.pos[pr.slot]
		// Both lengths were checked by each on the first pass.
		oldKeyLen := int(binary.BigEndian.Uint32(from[pr.at:]))
		body := int(pr.at) + 4 + g.p.prefix
		end := int(pr.at) + 4 + oldKeyLen + 4 + int(binary.BigEndian.Uint32(from[int(pr.at)+4+oldKeyLen:]))
		// The key's length changes with the prefix; the pair's key says
		// its new key group, and its flag is set below for the last one.
		keyLen := oldKeyLen - g.p.prefix + prefix
		binary.BigEndian.PutUint32(b[at:], uint32(keyLen))
		rt.last[pr.slot] = at + 4
		if prefix == 1 {
			b[at+4] = byte(pr.kg)
		} else {
			binary.BigEndian.PutUint16(b[at+4:], uint16(pr.kg))
		}
		rt.pos[pr.slot] = at + 4 + prefix + copy(b[at+4+prefix:], from[body:end])
	}
	for slot, size := range rt.sizes {
		if size > 0 {
			k := u + slot/rh.states*rh.m
			rt.out[rh.dest[k]][rt.last[slot]] |= 0x80
		}
	}
	return nil
}

// read reads the old key groups of unit u: growing, u itself; shrinking,
// u, u+M', ... of new key group u.
func (rt *routed) read(rh *rehash, u int) error {
	rt.groups = rt.groups[:0]
	olds := []int{u}
	if rh.m2%rh.m != 0 {
		olds = olds[:0]
		for g := u; g < rh.m; g += rh.m2 {
			olds = append(olds, g)
		}
	}
	for _, g := range olds {
		src := rh.sourceOf(g)
		if src == nil {
			continue
		}
		i := len(rt.groups)
		if i == len(rt.reads) {
			rt.reads = append(rt.reads, nil)
		}
		sg, err := src.p.group(g, &rt.reads[i])
		if err != nil {
			return err
		}
		if len(sg.b) > math.MaxInt32 {
			return &wire.CorruptError{File: src.p.s.File, Offset: sg.at, Reason: fmt.Sprintf("key group %d holds %d bytes, more than a re-hash moves at once", g, len(sg.b))}
		}
		rt.groups = append(rt.groups, unitGroup{g: sg, src: src})
	}
	return nil
}

// place lays out the unit's new key groups in the outputs of their
// subtasks: per new key group, per state with pairs its id and room for
// them, then the end-of-key-group mark; an empty key group is left out
// (its offset stays 0).
func (rt *routed) place(rh *rehash, u int) {
	for _, k := range rh.children(u) {
		j := rh.dest[k]
		at := (k - u) / rh.m * rh.states
		b := rt.out[j]
		start := len(b)
		for id := range rh.states {
			if size := rt.sizes[at+id]; size > 0 {
				b = binary.BigEndian.AppendUint16(b, uint16(id))
				rt.pos[at+id] = len(b)
				b = slices.Grow(b, size)[:len(b)+size]
			}
		}
		if len(b) > start {
			rt.starts[j] = append(rt.starts[j], groupAt{kg: k, off: int64(start)})
			b = binary.BigEndian.AppendUint16(b, statefile.EndOfKeyGroupMark)
		}
		rt.out[j] = b
	}
}

// resize is s with length n, reusing its memory.
func resize[T any](s []T, n int) []T {
	return slices.Grow(s[:0], n)[:n]
}
