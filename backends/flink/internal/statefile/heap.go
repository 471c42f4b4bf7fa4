package statefile

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Heap key groups (Flink's heap backend checkpoints, and its savepoints
// before 1.13) hold, after the key-group index, one section per state: a
// short state id, an int count, then count (namespace, key, value) triples
// written by the state's serializers (timer states: count timers). Nothing
// is length-prefixed, so every value is walked by its serializer. With
// snapshot compression, Flink compresses each section as a stream of its
// own. Every state has its section in every key group, in the same order
// in all of them (a Java HashMap's), which is not the id order.
//
// Where a serializer cannot walk a value (a class under Kryo that
// stateutil does not know), the key group is read in two steps. First its
// sections are found: a walked section ends where its entries do; one
// that holds a value not walked ends at one of the places where the next
// section can start (a state id not seen yet in the key group, a count,
// and an entry of that state whose key hashes to the key group), and the
// one place after which the rest of the key group splits into sections
// so is its end. Then each such section is split into its entries: a
// value not walked ends where the next entry of the section can start, in
// the one way that splits the section into as many entries as its count
// says. A state whose section does not split in one way is lost alone;
// the states whose sections could not be told apart are lost with it.

// heapPiece is bytes of a heap key group that hold whole sections: the
// key group after its index, or one decompressed stream of it (one holds
// exactly one section).
type heapPiece struct {
	body []byte
	file string
	base int64
	one  bool
}

// readHeap decodes the sections of one heap key group and emits its
// entries, section by section in the order they are stored. A state that
// cannot be read is reported to lost: its own section's values could not
// be split, or its section could not be found.
// buf holds a piece's entry records between its walk and their emission,
// and is kept for the next key group's.
func readHeap(kg, maxParallelism int, pieces []heapPiece, layouts []*Layout, buf *[]heapRec, emit func(snapshot.Entry) bool, lost func(state string, err error), how walkPlan) error {
	if lost == nil {
		lost = func(string, error) {}
	}
	if how.walked != nil && len(how.walked) != len(pieces) {
		how.walked = nil
	}
	ways := waysOf(layouts)
	reached := make([]bool, len(layouts))
	var mask uint64
	seen := 0
	var cut error
	var kept []pieceWalk
	for i, p := range pieces {
		w := &heapWalk{kg: kg, maxParallelism: maxParallelism, body: p.body, file: p.file, base: p.base, one: p.one,
			layouts: layouts, ways: ways, final: i == len(pieces)-1}
		var secs []section
		var recs []heapRec
		ok := false
		switch {
		case how.walked != nil:
			secs, recs, ok = how.walked[i].secs, how.walked[i].recs, true
		case !how.twoWalks:
			secs, recs, ok = w.walkAll(mask, seen, (*buf)[:0])
			*buf = recs
			if ok && how.keep != nil {
				kept = append(kept, pieceWalk{secs, slices.Clone(recs)})
			}
		}
		if ok {
			for _, sec := range secs {
				reached[sec.id] = true
				if sec.id < 64 {
					mask |= 1 << sec.id
				}
				seen++
				l := layouts[sec.id]
				var e snapshot.Entry
				for i := range recs[:sec.recs] {
					if err := l.entry(&e, w.body, kg, &recs[i]); err != nil {
						return err
					}
					if !emit(e) {
						return nil
					}
				}
				recs = recs[sec.recs:]
			}
			continue
		}
		how.keep = nil // a piece read in two walks: nothing to keep
		secs, err := w.sections(mask, seen)
		for _, sec := range secs {
			reached[sec.id] = true
			if sec.id < 64 {
				mask |= 1 << sec.id
			}
			seen++
			cont, err := w.read(sec, emit, lost)
			if err != nil {
				return err
			}
			if !cont {
				return nil
			}
		}
		if err != nil {
			var ce *cutError
			if !errors.As(err, &ce) {
				return err
			}
			cut = err
			break
		}
	}
	if how.keep != nil && len(kept) == len(pieces) {
		how.keep(kept)
	}
	if cut != nil {
		for id, l := range layouts {
			if !reached[id] {
				lost(l.Name, fmt.Errorf("state %q: heap key group %d could not be read as far as its section: %w", l.Name, kg, cut))
			}
		}
	}
	return nil
}

// walkPlan says how readHeap walks a key group's pieces.
type walkPlan struct {
	// twoWalks splits every piece by sections, never in one walk (tests
	// compare the two ways).
	twoWalks bool
	// walked is an earlier walk of the same pieces, each in one, taken
	// instead of walking them again; keep is told of the pieces' walk
	// where each was walked in one.
	walked []pieceWalk
	keep   func([]pieceWalk)
}

// heapWalk reads one piece of a heap key group.
type heapWalk struct {
	kg             int
	maxParallelism int
	body           []byte
	file           string
	base           int64
	layouts        []*Layout
	ways           []partWays // each layout's, by state id
	// one says the piece holds one section; final that it is the key
	// group's last piece.
	one, final bool
	// chains memoises how the piece splits into sections from a place;
	// splits how a section splits into entries; entryAt holds, per state
	// id, the offsets at which an entry of it could start.
	chains  map[chainKey]chain
	splits  map[splitKey]split
	entryAt map[int]entryOffsets
	// tries counts the places tried, within a budget.
	tries int
	// scratch is startsAt's reader, made once.
	scratch wire.Reader
}

// section is one state's section of a piece: its entries from start to
// end; unwalked is the offset of its first value that was not walked
// (-1: all were).
type section struct {
	id, count  int
	start, end int
	unwalked   int
	// recs counts the records walkAll took of it.
	recs int
}

// budget bounds the places a piece of n bytes is tried at, so that a
// damaged key group is refused soon.
func budget(n int) int { return 64*n + 1<<16 }

func (w *heapWalk) spent() bool {
	w.tries++
	return w.tries > budget(len(w.body))
}

// plausible reports whether an entry's key and namespace could be what
// Flink wrote in this key group: a void namespace is Flink's 0, a key is
// never null (Flink refuses null keys; a null String is the byte 0), and
// a key of a type whose hash is known hashes to the key group.
func (w *heapWalk) plausible(l *Layout, key, ns []byte) bool {
	if typeser.KindOf(l.Namespace) == "VoidNamespace" && (len(ns) != 1 || ns[0] != 0) {
		return false
	}
	if typeser.KindOf(l.Key) == "String" && len(key) == 1 && key[0] == 0 {
		return false
	}
	h, err := typeser.Codec{S: l.Key}.HashCode(key)
	if errors.Is(err, keygroup.ErrUnknownKeyType) {
		return true
	}
	return err == nil && w.maxParallelism > 0 && keygroup.OfHash(h, w.maxParallelism) == w.kg
}

// chainKey is a place in the piece, after the sections of the states in
// mask (ids under 64), seen in all.
type chainKey struct {
	off, seen int
	mask      uint64
}

// chain is how the piece splits into sections from a place: n ways (at
// most two counted), and of the one way its first section and where the
// next starts; at, where n > 1, is the first section that ends at more
// than one place, and ends two of them.
type chain struct {
	n    int
	sec  section
	next chainKey
	at   int
	ends [2]int
	err  error // n == 0: why, where no section could start
}

// walkAll reads the piece in one pass, where every value in it walks (as
// every value of a serializer stateutil implements does): its sections
// and their entries are then the ones sections and read would find, at
// half the walking. ok is false where anything does not walk or does not
// fit; sections and read then find out where and why.
func (w *heapWalk) walkAll(mask uint64, seen int, recs []heapRec) (secs []section, _ []heapRec, ok bool) {
	if len(w.body) > math.MaxInt32 {
		return nil, recs, false
	}
	r := wire.NewReader(w.body, w.file, w.base)
	// The records of a piece of many small entries would hold more than
	// a few times its bytes: such a piece is read in two walks instead.
	most := len(w.body)/8 + 4096
	collect := func(rec heapRec) bool {
		recs = append(recs, rec)
		return len(recs) <= most
	}
	for r.Off < len(w.body) {
		if w.one && r.Off > 0 {
			return nil, recs, false
		}
		id := int(r.U16("state id"))
		if r.Err != nil || id >= len(w.layouts) || id < 64 && mask&(1<<id) != 0 {
			return nil, recs, false
		}
		n := r.Count32(1, "entry count")
		if r.Err != nil {
			return nil, recs, false
		}
		sec := section{id: id, count: n, start: r.Off, unwalked: -1}
		from := len(recs)
		for i := 0; i < n; i++ {
			if cont, err := w.layouts[id].heapRecords(r, &w.ways[id], n-1-i, nil, collect); err != nil || !cont {
				return nil, recs, false
			}
		}
		sec.end = r.Off
		sec.recs = len(recs) - from
		secs = append(secs, sec)
		if id < 64 {
			mask |= 1 << id
		}
		seen++
	}
	if w.final && !w.one && seen != len(w.layouts) {
		return nil, recs, false
	}
	return secs, recs, true
}

// sections splits the piece into its sections. Where the split is not
// one, it returns the sections before the first that ends at more than
// one place (or at none, unwalked values in it or after it), and a
// cutError saying why. Damage in walked sections is an error of its own.
func (w *heapWalk) sections(mask uint64, seen int) ([]section, error) {
	k := chainKey{0, seen, mask}
	var out []section
	for {
		c := w.chain(k)
		switch {
		case c.n == 0 && c.err != nil:
			return out, c.err
		case c.n == 0:
			return out, &cutError{file: w.file, at: w.base + int64(k.off), why: "the rest of the key group splits into sections in no way"}
		case c.n > 1 && c.at == k.off:
			ce := &cutError{file: w.file, at: w.base + int64(c.at), why: fmt.Sprintf("it can end at offset %d and at %d", w.base+int64(c.ends[0]), w.base+int64(c.ends[1]))}
			if l := w.layoutAt(c.at); l != nil {
				ce.state, ce.nd = l.Name, notDecoded(l.notWalkedSerializer())
			}
			return out, ce
		case c.next.off < 0:
			return out, nil
		}
		out = append(out, c.sec)
		if c.next.off > len(w.body) {
			return out, nil
		}
		k = c.next
	}
}

// layoutAt is the state whose section starts at off.
func (w *heapWalk) layoutAt(off int) *Layout {
	r := wire.NewReader(w.body[off:], w.file, w.base+int64(off))
	if id := int(r.U16("state id")); r.Err == nil && id < len(w.layouts) {
		return w.layouts[id]
	}
	return nil
}

// notWalkedSerializer is the serializer of l whose values do not all walk.
func (l *Layout) notWalkedSerializer() *typeser.SerializerSnapshot {
	_, s := l.notWalked()
	return s
}

// chain splits the piece into sections from k (memoised). next.off is
// past the piece's end (len+1) after its last section, -1 where nothing
// follows k at all.
func (w *heapWalk) chain(k chainKey) chain {
	if c, ok := w.chains[k]; ok {
		return c
	}
	c := w.chainFrom(k)
	if w.chains == nil {
		w.chains = map[chainKey]chain{}
	}
	w.chains[k] = c
	return c
}

func (w *heapWalk) chainFrom(k chainKey) chain {
	if k.off == len(w.body) {
		if w.final && !w.one && k.seen != len(w.layouts) {
			return chain{}
		}
		return chain{n: 1, next: chainKey{off: -1}}
	}
	if w.one && k.off > 0 {
		return chain{err: &wire.CorruptError{File: w.file, Offset: w.base + int64(k.off), Reason: fmt.Sprintf("%d bytes after the state's section in its compressed stream", len(w.body)-k.off)}}
	}
	r := wire.NewReader(w.body, w.file, w.base)
	r.Off = k.off
	at := r.Pos()
	id := int(r.U16("state id"))
	if r.Err != nil {
		return chain{err: r.Err}
	}
	if id >= len(w.layouts) {
		return chain{err: &wire.CorruptError{File: w.file, Offset: at, Reason: fmt.Sprintf("state id %d, but the header has %d states", id, len(w.layouts))}}
	}
	if id < 64 && k.mask&(1<<id) != 0 {
		return chain{err: &wire.CorruptError{File: w.file, Offset: at, Reason: fmt.Sprintf("a second section of state %q in the key group", w.layouts[id].Name)}}
	}
	n := r.Count32(1, "entry count")
	if r.Err != nil {
		return chain{err: r.Err}
	}
	l := w.layouts[id]
	sec := section{id: id, count: n, start: r.Off, unwalked: -1}
	after := chainKey{seen: k.seen + 1, mask: k.mask}
	if id < 64 {
		after.mask |= 1 << id
	}
	for i := 0; i < n; i++ {
		u, err := l.walkEntry(r)
		if err != nil {
			return chain{err: err}
		}
		if u >= 0 {
			sec.unwalked = u
			break
		}
	}
	if sec.unwalked < 0 {
		sec.end = r.Off
		after.off = r.Off
		return w.follow(sec, after, chain{})
	}
	if w.one {
		sec.end = len(w.body)
		return chain{n: 1, sec: sec, next: chainKey{off: len(w.body) + 1}}
	}
	// The section ends where the next can start and the rest splits.
	c := chain{}
	for _, e := range w.sectionStarts(after, sec.unwalked+1) {
		if w.spent() {
			return chain{err: &cutError{file: w.file, at: w.base + int64(sec.start), state: l.Name, why: "finding where it ends took too many tries"}}
		}
		s := sec
		s.end = e
		if l.Kind != KindTimer && l.Kind != snapshot.List && l.Kind != snapshot.Map && w.split(l, s).n == 0 {
			continue // its entries do not fit there
		}
		after.off = e
		c = w.follow(s, after, c)
		if c.n > 1 {
			break
		}
	}
	if c.n == 0 {
		c.err = &cutError{file: w.file, at: w.base + int64(sec.start), state: l.Name, why: "no place where it can end lets the rest of the key group split into sections"}
	}
	return c
}

// follow adds to c the ways the piece goes on after section sec, where
// after says.
func (w *heapWalk) follow(sec section, after chainKey, c chain) chain {
	var rest chain
	if after.off == len(w.body) && w.one {
		rest = chain{n: 1, next: chainKey{off: -1}}
	} else {
		rest = w.chain(after)
	}
	switch {
	case rest.n == 0:
		if c.n == 0 && c.err == nil {
			c.err = rest.err
		}
		return c
	case c.n == 0:
		c = chain{n: rest.n, sec: sec, next: after, at: rest.at, ends: rest.ends}
		if rest.next.off < 0 {
			c.next.off = len(w.body) + 1
		}
		return c
	}
	// A second way: the first section that differs is this one, if it
	// ends elsewhere, else one after it.
	if c.sec.end != sec.end {
		return chain{n: 2, at: sec.start - 6, ends: [2]int{c.sec.end, sec.end}}
	}
	c.n = 2
	return c
}

// sectionStarts lists the offsets from from on at which a section of a
// state not in k.mask can start (see startsAt), and the piece's end.
func (w *heapWalk) sectionStarts(k chainKey, from int) []int {
	var out []int
	p := heapPos{id: -1, seen: k.seen, mask: k.mask}
	for off := from; off <= len(w.body); off++ {
		if w.startsAt(off, p) {
			out = append(out, off)
		}
	}
	return out
}

// heapPos is what comes next at a place in a piece: left more entries of
// state id (id -1: a section), after seen sections of the key group,
// those of the states in mask (ids under 64).
type heapPos struct {
	id, left, seen int
	mask           uint64
}

// startsAt reports whether what p says comes next could start at offset
// off of the piece: an entry of p's state, or else a section of a state
// not seen yet (its count, and its first entry, or the sections after it
// where it has none), or the piece's end. Flink's own bytes always pass.
func (w *heapWalk) startsAt(off int, p heapPos) bool {
	if off >= len(w.body) {
		return off == len(w.body)
	}
	r := &w.scratch
	*r = wire.Reader{Buf: w.body, Off: off, File: w.file, Base: w.base}
	for depth := 0; ; depth++ {
		if p.id >= 0 && p.left > 0 {
			return w.entryStarts(r, w.layouts[p.id])
		}
		if w.one || depth > len(w.layouts) {
			return false
		}
		id := int(r.U16("state id"))
		if r.Err != nil || id >= len(w.layouts) || id < 64 && p.mask&(1<<id) != 0 {
			return false
		}
		n := r.I32("entry count")
		if r.Err != nil || n < 0 || int(n) > r.Remaining() {
			return false
		}
		if id < 64 {
			p.mask |= 1 << id
		}
		p.id, p.left, p.seen = id, int(n), p.seen+1
		if r.Remaining() == 0 {
			return n == 0
		}
	}
}

// entryStarts reports whether an entry of l could start where r is: its
// namespace and key walk (a timer's after its timestamp) and are
// plausible.
func (w *heapWalk) entryStarts(r *wire.Reader, l *Layout) bool {
	key, ns, ok := l.scope(r)
	return ok && w.plausible(l, key, ns)
}

// scope reads an entry's key and namespace (a timer's after its
// timestamp); ok is false where they do not walk.
func (l *Layout) scope(r *wire.Reader) (key, ns []byte, ok bool) {
	if l.Kind != KindTimer && typeser.KindOf(l.Namespace) == "VoidNamespace" && (r.Remaining() == 0 || r.Buf[r.Off] != 0) {
		return nil, nil, false // most places, while looking for entries: no reader's message made
	}
	take := func(s *typeser.SerializerSnapshot) []byte {
		start := r.Off
		if s == nil || !typeser.SkipValue(r, s, 0) || r.Err != nil {
			return nil
		}
		return r.Buf[start:r.Off:r.Off]
	}
	if l.Kind == KindTimer {
		r.I64("timer timestamp")
		key = take(l.Key)
		ns = take(l.Namespace)
	} else {
		ns = take(l.Namespace)
		key = take(l.Key)
	}
	return key, ns, key != nil && ns != nil
}

// walkEntry walks one entry of l, returning the offset of the first part
// of it that does not walk (-1: all of it walked).
func (l *Layout) walkEntry(r *wire.Reader) (int, error) {
	walk := func(s *typeser.SerializerSnapshot) (int, error) {
		start := r.Off
		if s == nil || !typeser.SkipValue(r, s, 0) {
			if r.Err != nil {
				return 0, r.Err
			}
			return start, nil
		}
		return -1, r.Err
	}
	parts := []*typeser.SerializerSnapshot{l.Namespace, l.Key}
	if l.Kind == KindTimer {
		r.I64("timer timestamp")
		parts = []*typeser.SerializerSnapshot{l.Key, l.Namespace}
	}
	for _, s := range parts {
		if u, err := walk(s); err != nil || u >= 0 {
			return u, err
		}
	}
	switch l.Kind {
	case KindTimer:
		return -1, r.Err
	case snapshot.List:
		if l.Elem == nil {
			return r.Off, nil
		}
		n := r.Count32(1, "list size")
		for i := 0; i < n && r.Err == nil; i++ {
			if u, err := walk(l.Elem); err != nil || u >= 0 {
				return u, err
			}
		}
		return -1, r.Err
	case snapshot.Map:
		if l.Elem == nil {
			return r.Off, nil
		}
		n := r.Count32(2, "map size")
		for i := 0; i < n && r.Err == nil; i++ {
			if u, err := walk(l.UserKey); err != nil || u >= 0 {
				return u, err
			}
			if !r.Bool("map value null flag") {
				if u, err := walk(l.Elem); err != nil || u >= 0 {
					return u, err
				}
			}
		}
		return -1, r.Err
	}
	return walk(l.Elem)
}

// splitKey is a value's offset in the piece, with left more entries of
// its section after it and the section's end.
type splitKey struct{ off, left, end int }

// split is how a section splits from a value on: n ways (at most two
// counted), and of the one way where the value ends.
type split struct {
	n, end int
}

// split counts the ways section sec of l splits into its entries.
func (w *heapWalk) split(l *Layout, sec section) split {
	r := wire.NewReader(w.body, w.file, w.base)
	r.Off = sec.start
	if sec.count == 0 {
		if sec.start == sec.end {
			return split{n: 1}
		}
		return split{}
	}
	if _, _, ok := l.scope(r); !ok {
		return split{}
	}
	return w.valueSplit(r.Off, sec.count-1, sec.end, l)
}

// valueSplit counts the ways the section of l goes on from the value at
// off, with left more entries after it, to end: the value walked where it
// walks, else ended at each place where the next entry can start (or, the
// section's last, at end).
func (w *heapWalk) valueSplit(off, left, end int, l *Layout) split {
	k := splitKey{off, left, end}
	if s, ok := w.splits[k]; ok {
		return s
	}
	w.tries++
	var s split
	r := wire.NewReader(w.body[:end], w.file, w.base)
	r.Off = off
	if typeser.SkipValue(r, l.Elem, 0) && r.Err == nil {
		s = w.entrySplit(r.Off, left, end, l)
		s.end = r.Off
	} else if left == 0 {
		if off < end {
			s = split{n: 1, end: end}
		}
	} else {
		for _, e := range w.entryOffsets(l, off+1, end) {
			if t := w.entrySplit(e, left, end, l); t.n > 0 {
				s.n += t.n
				s.end = e
			}
			if s.n >= 2 || w.tries > budget(len(w.body)) {
				s.n = min(s.n, 2)
				break
			}
		}
	}
	if w.splits == nil {
		w.splits = map[splitKey]split{}
	}
	w.splits[k] = s
	return s
}

// entrySplit counts the ways the section goes on from offset e, where the
// next of left entries starts (left 0: where the section ends).
func (w *heapWalk) entrySplit(e, left, end int, l *Layout) split {
	if left == 0 {
		if e == end {
			return split{n: 1}
		}
		return split{}
	}
	r := wire.NewReader(w.body[:end], w.file, w.base)
	r.Off = e
	key, ns, ok := l.scope(r)
	if !ok || !w.plausible(l, key, ns) {
		return split{}
	}
	return w.valueSplit(r.Off, left-1, end, l)
}

// entryOffsets lists the offsets in [from, end) at which an entry of l's
// state could start; they are found once for the piece, from the first
// from asked for on (the state's section, which they all lie in).
func (w *heapWalk) entryOffsets(l *Layout, from, end int) []int {
	id := slices.Index(w.layouts, l)
	if w.entryAt == nil {
		w.entryAt = map[int]entryOffsets{}
	}
	e, ok := w.entryAt[id]
	if !ok || from < e.from {
		e = entryOffsets{from: from}
		r := wire.NewReader(w.body, w.file, w.base)
		for off := from; off < len(w.body); off++ {
			r.Off, r.Err = off, nil
			if key, ns, ok := l.scope(r); ok && w.plausible(l, key, ns) {
				e.offs = append(e.offs, off)
			}
		}
		w.entryAt[id] = e
	}
	i, _ := slices.BinarySearch(e.offs, from)
	j, _ := slices.BinarySearch(e.offs, end)
	return e.offs[i:max(i, j)]
}

// entryOffsets are the offsets from from on where an entry could start.
type entryOffsets struct {
	from int
	offs []int
}

// read emits the entries of section sec; a section whose values do not
// split in one way is reported to lost, and reading goes on.
func (w *heapWalk) read(sec section, emit func(snapshot.Entry) bool, lost func(string, error)) (bool, error) {
	l := w.layouts[sec.id]
	r := wire.NewReader(w.body[:sec.end], w.file, w.base)
	r.Off = sec.start
	var ends func(off, left int) (int, bool)
	if sec.unwalked >= 0 {
		if l.Kind == KindTimer || l.Kind == snapshot.List || l.Kind == snapshot.Map {
			lost(l.Name, l.errUnsized(r, sec.unwalked, sec.count, ""))
			return true, nil
		}
		if s := w.split(l, sec); s.n != 1 {
			how := "in no way"
			if s.n > 1 {
				how = "in more than one way"
			}
			lost(l.Name, l.errUnsized(r, sec.unwalked, sec.count, fmt.Sprintf(" (its %d entries in key group %d split %s)", sec.count, w.kg, how)))
			return true, nil
		}
		ends = func(off, left int) (int, bool) {
			s := w.valueSplit(off, left, sec.end, l)
			return s.end, s.n == 1
		}
	}
	var err error
	put := func(rec heapRec) bool {
		var e snapshot.Entry
		if err = l.entry(&e, w.body, w.kg, &rec); err != nil {
			return false
		}
		return emit(e)
	}
	for i := 0; i < sec.count; i++ {
		cont, rerr := l.heapRecords(r, &w.ways[sec.id], sec.count-1-i, ends, put)
		if err != nil || rerr != nil || !cont {
			return cont && err == nil && rerr == nil, cmp.Or(err, rerr)
		}
	}
	if r.Off != sec.end {
		return false, &wire.CorruptError{File: w.file, Offset: r.Pos(), Reason: fmt.Sprintf("state %q: its section ends %d bytes before where the next starts", l.Name, sec.end-r.Off)}
	}
	return true, nil
}

// cutError says where a heap key group could not be split into its
// sections.
type cutError struct {
	file  string
	at    int64
	state string
	why   string
	nd    *snapshot.NotDecodedError
}

// unsplitError is a heap state's section in one key group whose values
// could not be told apart: count entries, by a serializer stateutil does
// not walk. It is no damage: it matches snapshot.ErrNotDecoded and
// wire.ErrUnsupportedVersion.
type unsplitError struct {
	count int
	nd    *snapshot.NotDecodedError
	msg   string
}

func (e *unsplitError) Error() string   { return e.msg }
func (e *unsplitError) Unwrap() []error { return []error{e.nd, wire.ErrUnsupportedVersion} }

// UnsplitValues is how many values a heap state lost in err holds (0: not
// known).
func UnsplitValues(err error) int64 {
	var u *unsplitError
	if errors.As(err, &u) {
		return int64(u.count)
	}
	return 0
}

func (e *cutError) Error() string {
	if e.state == "" {
		return fmt.Sprintf("%q at offset %d: %s", e.file, e.at, e.why)
	}
	return fmt.Sprintf("%q at offset %d: the section of state %q, which holds values that cannot be walked: %s", e.file, e.at, e.state, e.why)
}

// Unwrap says what stopped the split: a serializer stateutil does not
// walk, where the section it stopped at is known.
func (e *cutError) Unwrap() []error {
	if e.nd == nil {
		return []error{wire.ErrUnsupportedVersion}
	}
	return []error{e.nd, wire.ErrUnsupportedVersion}
}

// notWalked is the serializer of l whose values do not all walk.
func (l *Layout) notWalked() (string, *typeser.SerializerSnapshot) {
	switch {
	case l.Kind == snapshot.List && l.Elem == nil || l.Kind == snapshot.Map && l.Elem == nil:
		return "state", l.Stored
	case l.Kind == snapshot.List:
		return "list element", l.Elem
	case l.Kind == snapshot.Map:
		return "map value", l.Elem
	}
	return "value", l.Elem
}

func notDecoded(s *typeser.SerializerSnapshot) *snapshot.NotDecodedError {
	nd := &snapshot.NotDecodedError{Serializer: s.Name()}
	if s != nil {
		nd.ValueClass = s.TypeClass
	}
	return nd
}

// errUnsized says why a heap state's values cannot be told apart in a
// section of count entries: the value at offset at of the piece does not
// walk; how adds why the section does not split.
func (l *Layout) errUnsized(r *wire.Reader, at, count int, how string) error {
	what, s := l.notWalked()
	if typeser.KindOf(s) == "Kryo" {
		how += fmt.Sprintf(" (a class Kryo writes by its fields walks by its declaration in --kryo-classes, a Protobuf message by --proto-descriptors; the state declares %s)", s.TypeClass)
	}
	return &unsplitError{count: count, nd: notDecoded(s),
		msg: fmt.Sprintf("%q at offset %d: state %q (%d entries): the %s serializer %s writes no length and stateutil cannot walk all its values, so they cannot be told apart in heap key groups%s: %v",
			r.File, r.Base+int64(at), l.Name, count, what, s.Name(), how, wire.ErrUnsupportedVersion)}
}

// partWays are how a heap entry's parts are passed, settled for a walk.
type partWays struct{ ns, key, userKey, elem typeser.Way }

func waysOf(layouts []*Layout) []partWays {
	ways := make([]partWays, len(layouts))
	for i, l := range layouts {
		ways[i] = partWays{typeser.WayOf(l.Namespace), typeser.WayOf(l.Key), typeser.WayOf(l.UserKey), typeser.WayOf(l.Elem)}
	}
	return ways
}

// errNotWalked is heapRecords' answer, without ends, to a value that
// does not walk.
var errNotWalked = errors.New("a value that does not walk")

// heapRec is where one entry's parts lie in a piece (under 2 GiB: see
// walkAll), with no pointer in it, so that a key group's many can be held
// between their walk and their emission at little cost. A missing user
// key or a null value has start -1; a timer has its timestamp.
type heapRec struct {
	ns, key, userKey, value [2]int32
	ts                      int64
}

// entry sets e to the entry rec places in body; e is filled in place, as
// entries are many and their copies dearer than their parts.
func (l *Layout) entry(e *snapshot.Entry, body []byte, kg int, rec *heapRec) error {
	part := func(p [2]int32) []byte {
		if p[0] < 0 {
			return nil
		}
		return body[p[0]:p[1]:p[1]]
	}
	*e = snapshot.Entry{KeyGroup: kg, State: l.Name, Key: part(rec.key), Namespace: part(rec.ns), UserKey: part(rec.userKey)}
	if l.Kind == KindTimer {
		e.Value = Put64(rec.ts ^ -1<<63)
		return nil
	}
	if rec.value[0] < 0 {
		return nil
	}
	var err error
	e.Value, e.ExpiresAt, err = l.SplitTTL(part(rec.value))
	return err
}

// recWalk takes the parts of one heap entry off r, each as far as its
// serializer walks it; walked turns false at the first that does not.
type recWalk struct {
	r      *wire.Reader
	walked bool
}

func (w *recWalk) take(way *typeser.Way) [2]int32 {
	start := w.r.Off
	if !way.Skip(w.r) {
		w.walked = false
	}
	return [2]int32{int32(start), int32(w.r.Off)}
}

// put hands rec on where every part of it walked. Every value walks
// where heapRecords has no ends but in walkAll's try, which stops at the
// first that does not.
func (w *recWalk) put(rec heapRec, put func(heapRec) bool) (bool, error) {
	switch {
	case w.r.Err != nil:
		return false, w.r.Err
	case !w.walked:
		return false, errNotWalked
	}
	return put(rec), nil
}

// heapRecords reads one entry (or timer) of a section with left entries
// after it: one record, or one an element of a list or map; ends, where
// the section's values do not all walk, says where a value ends.
func (l *Layout) heapRecords(r *wire.Reader, ways *partWays, left int, ends func(off, left int) (int, bool), put func(heapRec) bool) (bool, error) {
	w := recWalk{r: r, walked: true}
	rec := heapRec{userKey: [2]int32{-1, -1}}
	if l.Kind == KindTimer {
		rec.ts = r.I64("timer timestamp")
		rec.key = w.take(&ways.key)
		rec.ns = w.take(&ways.ns)
		return w.put(rec, put)
	}
	rec.ns = w.take(&ways.ns)
	rec.key = w.take(&ways.key)
	switch l.Kind {
	case snapshot.List:
		n := r.Count32(1, "list size")
		for i := 0; i < n && r.Err == nil; i++ {
			rec.value = w.take(&ways.elem)
			if cont, err := w.put(rec, put); !cont {
				return false, err
			}
		}
		return r.Err == nil, r.Err
	case snapshot.Map:
		n := r.Count32(2, "map size")
		for i := 0; i < n && r.Err == nil; i++ {
			rec.userKey = w.take(&ways.userKey)
			rec.value = [2]int32{-1, -1}
			if !r.Bool("map value null flag") {
				rec.value = w.take(&ways.elem)
			}
			if cont, err := w.put(rec, put); !cont {
				return false, err
			}
		}
		return r.Err == nil, r.Err
	}
	if ends == nil {
		rec.value = w.take(&ways.elem)
		if !w.walked && r.Err == nil {
			return false, errNotWalked
		}
	} else {
		end, ok := ends(r.Off, left)
		if !ok {
			return false, fmt.Errorf("%q at offset %d: state %q: a value's end is no longer found", r.File, r.Pos(), l.Name)
		}
		start := r.Off
		r.Take(end-r.Off, "value")
		rec.value = [2]int32{int32(start), int32(r.Off)}
	}
	if r.Err != nil {
		return false, r.Err
	}
	return put(rec), nil
}
