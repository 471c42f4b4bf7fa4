package statefile

import (
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Heap key groups (Flink's heap backend checkpoints, and its savepoints
// before 1.13) hold, after the key-group index, one section per state: a
// short state id, an int count, then count (namespace, key, value) triples
// written by the state's serializers (timer states: count timers). Nothing
// is length-prefixed, so every serializer must be walked. With snapshot
// compression, Flink compresses each section as a stream of its own.

// heapPiece is bytes of a heap key group that hold whole sections: the
// key group after its index, or one decompressed stream of it (one holds
// exactly one section).
type heapPiece struct {
	body []byte
	file string
	base int64
	one  bool
}

// heapEntries decodes the sections of one heap key group and emits its
// entries. Sections come in the order of a Java HashMap over the states,
// the same in every key group but not the id order.
//
// A state whose values cannot be walked is reported to lost, and reading
// goes on where the next section starts: the end of the section's stream,
// or else the one place after which the rest of the key group parses.
// Where there is no such place, or more than one, the states whose
// sections were not reached are reported to lost as well. Entries of a
// lost state may be emitted before it is found to be lost.
func heapEntries(kg, maxParallelism int, pieces []heapPiece, layouts []*Layout, emit func(snapshot.Entry) bool, lost func(state string, err error)) error {
	if lost == nil {
		lost = func(string, error) {}
	}
	at := heapPos{id: -1}
	reached := make([]bool, len(layouts))
	var cut error
	for i, p := range pieces {
		w := &heapWalk{kg: kg, maxParallelism: maxParallelism, body: p.body, file: p.file, base: p.base, one: p.one,
			layouts: layouts, final: i == len(pieces)-1, reached: reached, lost: lost}
		end, err := w.sections(wire.NewReader(p.body, p.file, p.base), at, emit)
		var ce *cutError
		switch {
		case errors.Is(err, errStopped):
			return nil
		case errors.As(err, &ce):
			if cut == nil {
				cut = ce
			}
		case err != nil:
			return err
		}
		at = heapPos{id: -1, seen: end.seen, mask: end.mask}
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

// heapWalk reads one piece of a heap key group. Where a value's serializer
// writes no length (Kryo's, mostly), the value's end is inferred: it is
// the one place after which the rest of the piece parses to its end,
// every value inferred the same way. Where there is no such place, or
// more than one, or finding it takes too long, the state cannot be split.
// While inferring, a key must also hash to the key group, where its type's
// hash is known, and a void namespace be the 0 Flink writes.
type heapWalk struct {
	kg             int
	maxParallelism int
	body           []byte
	file           string
	base           int64
	layouts        []*Layout
	// one says the piece holds one section; final that it is the key
	// group's last piece.
	one, final bool
	// reached marks the states whose sections were read into.
	reached []bool
	lost    func(state string, err error)
	// rest memoises whether the piece parses from a place to its end;
	// parsed counts the bytes those tries read, and the places tried.
	rest   map[restKey]bool
	parsed int
	// trying is set while a try parses: entries are checked, not emitted.
	trying bool
	// lenient is set while looking for where a section ends (see skip).
	lenient bool
}

type restKey struct {
	heapPos
	lenient bool
}

// plausible reports, while trying, whether an entry's key and namespace
// could be what Flink wrote in this key group.
func (w *heapWalk) plausible(l *Layout, key, ns []byte) bool {
	if !w.trying {
		return true
	}
	if typeser.KindOf(l.Namespace) == "VoidNamespace" && (len(ns) != 1 || ns[0] != 0) {
		return false
	}
	h, err := typeser.Codec{S: l.Key}.HashCode(key)
	if errors.Is(err, keygroup.ErrUnknownKeyType) {
		return true
	}
	return err == nil && w.maxParallelism > 0 && keygroup.OfHash(h, w.maxParallelism) == w.kg
}

// heapPos is a place in a piece: an offset, within the section of state
// id (-1 between sections) with left entries still to come, after seen
// sections of the key group, those of the states in mask (ids under 64).
type heapPos struct {
	off, id, left, seen int
	mask                uint64
}

// inferBudget bounds the bytes that the tries to infer the values of a
// key group of n bytes read, in all, so that a damaged key group is
// refused soon: the real heap key groups of the corpus took up to 85
// times their size.
func inferBudget(n int) int { return 256*n + 1<<20 }

// spent counts one place tried and reports whether the budget is spent.
func (w *heapWalk) spent() bool {
	w.parsed++
	return w.parsed > inferBudget(len(w.body))
}

// sections reads the piece from p: the rest of p's section, then the
// sections after it, emitting the entries; it returns where it ended.
func (w *heapWalk) sections(r *wire.Reader, p heapPos, emit func(snapshot.Entry) bool) (heapPos, error) {
	seen, mask := p.seen, p.mask
	section := func(id, n int) error {
		l := w.layouts[id]
		for i := 0; i < n && r.Err == nil; i++ {
			next := heapPos{id: id, left: n - i - 1, seen: seen, mask: mask}
			cont, err := l.heapEntry(r, w, next, emit)
			var ue *unsizedError
			if errors.As(err, &ue) {
				return w.skip(r, ue, heapPos{id: -1, seen: seen, mask: mask})
			}
			if err != nil || !cont {
				return errStopWalk(err, cont)
			}
		}
		return r.Err
	}
	done := func(err error) (heapPos, error) {
		if errors.Is(err, errRestParses) {
			return heapPos{}, nil
		}
		return heapPos{seen: seen, mask: mask}, err
	}
	read := 0
	if p.id >= 0 {
		read++
		if err := section(p.id, p.left); err != nil {
			return done(err)
		}
	}
	for r.Remaining() > 0 {
		at := r.Pos()
		if w.one && read > 0 {
			if w.trying {
				return done(errImplausible)
			}
			return done(&wire.CorruptError{File: w.file, Offset: at, Reason: fmt.Sprintf("%d bytes after the state's section in its compressed stream", r.Remaining())})
		}
		read++
		id := int(r.U16("state id"))
		if r.Err != nil {
			return done(r.Err)
		}
		if id >= len(w.layouts) {
			return done(&wire.CorruptError{File: w.file, Offset: at, Reason: fmt.Sprintf("state id %d, but the header has %d states", id, len(w.layouts))})
		}
		// Flink writes every state's section once in each key group.
		if w.trying && (id >= 64 || mask&(1<<id) != 0) {
			return done(errImplausible)
		}
		seen++
		if id < 64 {
			mask |= 1 << id
		}
		if !w.trying {
			w.reached[id] = true
		}
		n := r.Count32(1, "entry count")
		if err := section(id, n); err != nil {
			return done(err)
		}
	}
	if w.trying && w.final && seen != len(w.layouts) {
		return done(errImplausible)
	}
	return done(nil)
}

// skip moves r from the value ue that cannot be walked to where the next
// section starts, next (its offset to be found), and reports the state
// lost. While trying, the rest of the piece parses if it does from any
// place after the value.
func (w *heapWalk) skip(r *wire.Reader, ue *unsizedError, next heapPos) error {
	if w.one {
		// The section's stream ends where the section does.
		if !w.trying {
			w.lost(ue.state, ue)
		}
		r.Off, r.Err = len(w.body), nil
		return nil
	}
	if w.trying {
		if ue.inferred && !w.lenient {
			// Where a value's end is inferred, a later value whose end
			// the tries could not settle fails the try: taken as
			// parsing, it would let most values before it end in many
			// places. Looking for where a section ends, it parses if the
			// rest does from any place after it, so that the one end
			// found is the true one.
			return errImplausible
		}
		for off := ue.at + 1; off <= len(w.body); off++ {
			if w.spent() {
				return errImplausible
			}
			next.off = off
			if w.parsesFrom(next) {
				r.Off = len(w.body)
				return errRestParses
			}
		}
		return errImplausible
	}
	w.lost(ue.state, ue)
	// A budget of its own: the value's own tries may have spent theirs.
	w.lenient, w.parsed = true, 0
	end, why := w.onlyPlace(ue.at+1, next)
	w.lenient = false
	if end < 0 {
		return &cutError{file: w.file, at: w.base + int64(ue.at), state: ue.state, why: why}
	}
	r.Off, r.Err = end, nil
	return nil
}

// cutError says where a heap key group could not be read on.
type cutError struct {
	file  string
	at    int64
	state string
	why   string
}

func (e *cutError) Error() string {
	return fmt.Sprintf("%q at offset %d: the section of state %q, whose values cannot be walked, has no one place where the next section starts (%s)", e.file, e.at, e.state, e.why)
}

func (e *cutError) Unwrap() error { return wire.ErrUnsupportedVersion }

// errImplausible ends a try at an entry Flink cannot have written.
var errImplausible = errors.New("implausible entry")

// errRestParses ends a try whose rest was found to parse by a try of its
// own.
var errRestParses = errors.New("the rest parses")

// errStopped ends a walk whose emit asked to stop.
var errStopped = errors.New("stopped")

func errStopWalk(err error, cont bool) error {
	if err == nil && !cont {
		return errStopped
	}
	return err
}

// last reports whether nothing follows the entry before p in its piece.
func (w *heapWalk) last(p heapPos) bool {
	return p.left == 0 && (w.one || w.final && p.seen == len(w.layouts))
}

// parsesFrom reports whether the piece parses from p to its end.
func (w *heapWalk) parsesFrom(p heapPos) bool {
	key := restKey{p, w.lenient}
	if ok, done := w.rest[key]; done {
		return ok
	}
	r := wire.NewReader(w.body, w.file, w.base)
	r.Off = p.off
	trying := w.trying
	w.trying = true
	_, err := w.sections(r, p, func(snapshot.Entry) bool { return true })
	w.trying = trying
	ok := err == nil && r.Err == nil && r.Remaining() == 0
	w.parsed += r.Off - p.off + 1
	if w.rest == nil {
		w.rest = map[restKey]bool{}
	}
	w.rest[key] = ok
	return ok
}

// onlyPlace finds the one offset from from on at which the piece goes on
// as next does and parses to its end.
func (w *heapWalk) onlyPlace(from int, next heapPos) (end int, why string) {
	end = -1
	for off := from; off <= len(w.body); off++ {
		if w.spent() {
			return -1, "finding where its values end took too many tries"
		}
		next.off = off
		if !w.parsesFrom(next) {
			continue
		}
		if end >= 0 {
			return -1, fmt.Sprintf("the rest of the key group parses from offset %d and from %d", w.base+int64(end), w.base+int64(off))
		}
		end = off
	}
	if end < 0 {
		return -1, "the rest of the key group parses from no place after it"
	}
	return end, ""
}

// errUnsized says why a heap state's values cannot be told apart; the
// value starts at offset at of the piece.
func (l *Layout) errUnsized(r *wire.Reader, at int, what string, s *typeser.SerializerSnapshot) error {
	return &unsizedError{state: l.Name, at: at, err: fmt.Errorf("%q at offset %d: state %q: the %s serializer %s writes no length and stateutil cannot walk its values, so they cannot be told apart in heap key groups: %w",
		r.File, r.Base+int64(at), l.Name, what, s.Name(), wire.ErrUnsupportedVersion)}
}

// unsizedError names the heap state whose values could not be walked.
type unsizedError struct {
	state string
	at    int
	err   error
	// inferred says the value's end was looked for, and not found.
	inferred bool
}

func (e *unsizedError) Error() string { return e.err.Error() }
func (e *unsizedError) Unwrap() error { return e.err }

// heapEntry reads one triple (or timer) of w's key group; next is where
// the key group goes on after it (its offset unknown), so that an
// unsized value can be inferred to end where the rest parses.
func (l *Layout) heapEntry(r *wire.Reader, w *heapWalk, next heapPos, emit func(snapshot.Entry) bool) (bool, error) {
	kg := w.kg
	take := func(s *typeser.SerializerSnapshot, what string) ([]byte, error) {
		start := r.Off
		if !typeser.SkipValue(r, s, 0) {
			if r.Err != nil {
				return nil, r.Err
			}
			return nil, l.errUnsized(r, start, what, s)
		}
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Buf[start:r.Off:r.Off], nil
	}
	e := snapshot.Entry{KeyGroup: kg, State: l.Name}
	var err error
	if l.Kind == KindTimer {
		ts := r.I64("timer timestamp")
		if e.Key, err = take(l.Key, "timer key"); err != nil {
			return false, err
		}
		if e.Namespace, err = take(l.Namespace, "timer namespace"); err != nil {
			return false, err
		}
		e.Value = Put64(ts ^ -1<<63)
		return emit(e), r.Err
	}
	if e.Namespace, err = take(l.Namespace, "namespace"); err != nil {
		return false, err
	}
	if e.Key, err = take(l.Key, "key"); err != nil {
		return false, err
	}
	if !w.plausible(l, e.Key, e.Namespace) {
		return false, errImplausible
	}
	switch l.Kind {
	case snapshot.List:
		if l.Elem == nil {
			return false, l.errUnsized(r, r.Off, "list", l.Stored)
		}
		n := r.Count32(1, "list size")
		for i := 0; i < n && r.Err == nil; i++ {
			b, err := take(l.Elem, "list element")
			if err != nil {
				return false, err
			}
			el := e
			if el.Value, el.ExpiresAt, err = l.SplitTTL(b); err != nil {
				return false, err
			}
			if !emit(el) {
				return false, nil
			}
		}
		return true, r.Err
	case snapshot.Map:
		if l.Elem == nil {
			return false, l.errUnsized(r, r.Off, "map", l.Stored)
		}
		n := r.Count32(2, "map size")
		for i := 0; i < n && r.Err == nil; i++ {
			el := e
			if el.UserKey, err = take(l.UserKey, "map key"); err != nil {
				return false, err
			}
			if !r.Bool("map value null flag") {
				b, err := take(l.Elem, "map value")
				if err != nil {
					return false, err
				}
				if el.Value, el.ExpiresAt, err = l.SplitTTL(b); err != nil {
					return false, err
				}
			}
			if !emit(el) {
				return false, nil
			}
		}
		return true, r.Err
	}
	start := r.Off
	b, err := take(l.Elem, "value")
	var ue *unsizedError
	if errors.As(err, &ue) {
		r.Off, r.Err = start, nil
		if w.last(next) {
			// The last value of the piece ends where the piece does.
			b = r.Take(r.Remaining(), "value")
		} else {
			end, why := w.onlyPlace(start+1, next)
			if end < 0 {
				ue.err, ue.inferred = fmt.Errorf("%w (%s)", ue.err, why), true
				return false, ue
			}
			b = r.Take(end-start, "value")
		}
	} else if err != nil {
		return false, err
	}
	if r.Err != nil {
		return false, r.Err
	}
	if e.Value, e.ExpiresAt, err = l.SplitTTL(b); err != nil {
		return false, err
	}
	return emit(e), nil
}
