package flink

import (
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Heap key groups (Flink's heap backend checkpoints, and its savepoints
// before 1.13) hold, after the key-group index, one section per state: a
// short state id, an int count, then count (namespace, key, value) triples
// written by the state's serializers (timer states: count timers). Nothing
// is length-prefixed, so every serializer must be walked.

// heapEntries decodes the sections of one heap key group (index removed,
// decompressed) and emits its entries.
//
// Sections come in the order of a Java HashMap over the states, the same
// in every key group but not the id order; from the first state whose
// values cannot be walked on, the rest of a key group cannot be read, so
// reading stops at the first section of a state in stop. An unsizedError
// lists the states whose sections came before it.
func heapEntries(kg, maxParallelism int, body []byte, file string, base int64, layouts []*layout, stop []bool, emit func(snapshot.Entry) bool) error {
	w := &heapWalk{kg: kg, maxParallelism: maxParallelism, body: body, file: file, base: base, layouts: layouts}
	err := w.sections(newReader(body, file, base), heapPos{id: -1}, stop, emit)
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// heapWalk reads one heap key group. Where a value's serializer writes no
// length (Kryo's, mostly), the value's end is inferred: it is the one
// place after which the rest of the key group parses to its end, every
// value inferred the same way. Where there is no such place, or more
// than one, or finding it takes too long, the state cannot be split.
// While inferring, a key must also hash to the key group, where its type's
// hash is known, and a void namespace be the 0 Flink writes.
type heapWalk struct {
	kg             int
	maxParallelism int
	body           []byte
	file           string
	base           int64
	layouts        []*layout
	// rest memoises whether the key group parses from a place to its end;
	// parsed counts the bytes those tries read.
	rest   map[heapPos]bool
	parsed int
	// trying is set while a try parses: entries are checked, not emitted.
	trying bool
}

// plausible reports, while trying, whether an entry's key and namespace
// could be what Flink wrote in this key group.
func (w *heapWalk) plausible(l *layout, key, ns []byte) bool {
	if !w.trying {
		return true
	}
	if serKind(l.ns) == "VoidNamespace" && (len(ns) != 1 || ns[0] != 0) {
		return false
	}
	h, err := codec{s: l.key}.HashCode(key)
	if errors.Is(err, keygroup.ErrUnknownKeyType) {
		return true
	}
	return err == nil && w.maxParallelism > 0 && keygroup.OfHash(h, w.maxParallelism) == w.kg
}

// heapPos is a place in a key group: an offset, within the section of
// state id (-1 between sections) with left entries still to come, after
// seen sections, those of the states in mask (ids under 64).
type heapPos struct {
	off, id, left, seen int
	mask                uint64
}

// inferBudget bounds the bytes that the tries to infer the values of a
// key group of n bytes read, in all, so that a damaged key group is
// refused soon: the real heap key groups of the corpus took up to 85
// times their size.
func inferBudget(n int) int { return 256*n + 1<<20 }

// sections reads the key group from p: the rest of p's section, then
// the sections after it, emitting the entries. An unsizedError lists the
// states whose sections came before it.
func (w *heapWalk) sections(r *reader, p heapPos, stop []bool, emit func(snapshot.Entry) bool) error {
	seen, mask := p.seen, p.mask
	var before []string
	entries := func(l *layout, id, n int) error {
		for i := 0; i < n && r.err == nil; i++ {
			next := heapPos{id: id, left: n - i - 1, seen: seen, mask: mask}
			cont, err := l.heapEntry(r, w, next, emit)
			var ue *unsizedError
			if errors.As(err, &ue) {
				ue.before = before
			}
			if err != nil || !cont {
				return errStopWalk(err, cont)
			}
		}
		return r.err
	}
	if p.id >= 0 {
		if err := entries(w.layouts[p.id], p.id, p.left); err != nil {
			return err
		}
	}
	for r.remaining() > 0 {
		at := r.pos()
		id := int(r.u16("state id"))
		if r.err != nil {
			return r.err
		}
		if id >= len(w.layouts) {
			return &CorruptError{File: w.file, Offset: at, Reason: fmt.Sprintf("state id %d, but the header has %d states", id, len(w.layouts))}
		}
		if stop != nil && stop[id] {
			return nil
		}
		// Flink writes every state's section once in each key group.
		if w.trying && (id >= 64 || mask&(1<<id) != 0) {
			return errImplausible
		}
		seen++
		if id < 64 {
			mask |= 1 << id
		}
		l := w.layouts[id]
		n := r.count32(1, "entry count")
		if err := entries(l, id, n); err != nil {
			return err
		}
		before = append(before, l.name)
	}
	if w.trying && seen != len(w.layouts) {
		return errImplausible
	}
	return nil
}

// errImplausible ends a try at an entry Flink cannot have written.
var errImplausible = errors.New("implausible entry")

// errStopped ends a walk whose emit asked to stop.
var errStopped = errors.New("stopped")

func errStopWalk(err error, cont bool) error {
	if err == nil && !cont {
		return errStopped
	}
	return err
}

// last reports whether nothing follows the entry before p.
func (w *heapWalk) last(p heapPos) bool {
	return p.left == 0 && p.seen == len(w.layouts)
}

// parsesFrom reports whether the key group parses from p to its end.
func (w *heapWalk) parsesFrom(p heapPos) bool {
	if ok, done := w.rest[p]; done {
		return ok
	}
	r := newReader(w.body, w.file, w.base)
	r.off = p.off
	trying := w.trying
	w.trying = true
	err := w.sections(r, p, nil, func(snapshot.Entry) bool { return true })
	w.trying = trying
	ok := err == nil && r.err == nil && r.remaining() == 0
	w.parsed += r.off - p.off + 1
	if w.rest == nil {
		w.rest = map[heapPos]bool{}
	}
	w.rest[p] = ok
	return ok
}

// valueEnd infers where the unsized value starting at start ends, when
// the key group goes on at next (its offset to be found).
func (w *heapWalk) valueEnd(start int, next heapPos) (end int, why string) {
	end = -1
	for off := start + 1; off <= len(w.body); off++ {
		if w.parsed > inferBudget(len(w.body)) {
			return -1, "finding where its values end took too many tries"
		}
		next.off = off
		if !w.parsesFrom(next) {
			continue
		}
		if end >= 0 {
			return -1, fmt.Sprintf("the key group parses with its value ending at offset %d and at %d", w.base+int64(end), w.base+int64(off))
		}
		end = off
	}
	if end < 0 {
		return -1, "no end of its value lets the rest of the key group parse"
	}
	return end, ""
}

// errUnsized says why a heap state cannot be split.
func (l *layout) errUnsized(r *reader, what string, s *SerializerSnapshot) error {
	return &unsizedError{state: l.name, err: fmt.Errorf("%q at offset %d: state %q: the %s serializer %s writes no length and stateutil cannot walk its values, so this heap key group cannot be split: %w",
		r.file, r.pos(), l.name, what, s.Name(), ErrUnsupportedVersion)}
}

// unsizedError names the heap state whose values could not be walked.
type unsizedError struct {
	state string
	err   error
	// before names the states whose sections preceded it in the key group.
	before []string
}

func (e *unsizedError) Error() string { return e.err.Error() }
func (e *unsizedError) Unwrap() error { return e.err }

// heapEntry reads one triple (or timer) of w's key group; next is where
// the key group goes on after it (its offset unknown), so that an
// unsized value can be inferred to end where the rest parses.
func (l *layout) heapEntry(r *reader, w *heapWalk, next heapPos, emit func(snapshot.Entry) bool) (bool, error) {
	kg := w.kg
	take := func(s *SerializerSnapshot, what string) ([]byte, error) {
		start := r.off
		if !skipValue(r, s, 0) {
			if r.err != nil {
				return nil, r.err
			}
			return nil, l.errUnsized(r, what, s)
		}
		if r.err != nil {
			return nil, r.err
		}
		return r.buf[start:r.off:r.off], nil
	}
	e := snapshot.Entry{KeyGroup: kg, State: l.name}
	var err error
	if l.kind == KindTimer {
		ts := r.i64("timer timestamp")
		if e.Key, err = take(l.key, "timer key"); err != nil {
			return false, err
		}
		if e.Namespace, err = take(l.ns, "timer namespace"); err != nil {
			return false, err
		}
		e.Value = put64(ts ^ -1<<63)
		return emit(e), r.err
	}
	if e.Namespace, err = take(l.ns, "namespace"); err != nil {
		return false, err
	}
	if e.Key, err = take(l.key, "key"); err != nil {
		return false, err
	}
	if !w.plausible(l, e.Key, e.Namespace) {
		return false, errImplausible
	}
	switch l.kind {
	case snapshot.List:
		if l.elem == nil {
			return false, l.errUnsized(r, "list", l.stored)
		}
		n := r.count32(1, "list size")
		for i := 0; i < n && r.err == nil; i++ {
			b, err := take(l.elem, "list element")
			if err != nil {
				return false, err
			}
			el := e
			if el.Value, el.ExpiresAt, err = l.splitTTL(b); err != nil {
				return false, err
			}
			if !emit(el) {
				return false, nil
			}
		}
		return true, r.err
	case snapshot.Map:
		if l.elem == nil {
			return false, l.errUnsized(r, "map", l.stored)
		}
		n := r.count32(2, "map size")
		for i := 0; i < n && r.err == nil; i++ {
			el := e
			if el.UserKey, err = take(l.userKey, "map key"); err != nil {
				return false, err
			}
			if !r.bool("map value null flag") {
				b, err := take(l.elem, "map value")
				if err != nil {
					return false, err
				}
				if el.Value, el.ExpiresAt, err = l.splitTTL(b); err != nil {
					return false, err
				}
			}
			if !emit(el) {
				return false, nil
			}
		}
		return true, r.err
	}
	start := r.off
	b, err := take(l.elem, "value")
	var ue *unsizedError
	if errors.As(err, &ue) {
		r.off, r.err = start, nil
		if w.last(next) {
			// The last value of the key group ends where the group does.
			b = r.take(r.remaining(), "value")
		} else {
			end, why := w.valueEnd(start, next)
			if end < 0 {
				ue.err = fmt.Errorf("%w (%s)", ue.err, why)
				return false, ue
			}
			b = r.take(end-start, "value")
		}
	} else if err != nil {
		return false, err
	}
	if r.err != nil {
		return false, r.err
	}
	if e.Value, e.ExpiresAt, err = l.splitTTL(b); err != nil {
		return false, err
	}
	return emit(e), nil
}
