package flink

import (
	"errors"
	"fmt"

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
func heapEntries(kg int, body []byte, file string, base int64, layouts []*layout, stop []bool, emit func(snapshot.Entry) bool) error {
	r := newReader(body, file, base)
	seen := map[int]bool{}
	var before []string
	for r.remaining() > 0 {
		at := r.pos()
		id := int(r.u16("state id"))
		if r.err != nil {
			return r.err
		}
		if id >= len(layouts) {
			return &CorruptError{File: file, Offset: at, Reason: fmt.Sprintf("state id %d, but the header has %d states", id, len(layouts))}
		}
		if stop != nil && stop[id] {
			return nil
		}
		seen[id] = true
		l := layouts[id]
		n := r.count32(1, "entry count")
		last := len(seen) == len(layouts)
		for i := 0; i < n && r.err == nil; i++ {
			cont, err := l.heapEntry(r, kg, last && i == n-1, emit)
			var ue *unsizedError
			if errors.As(err, &ue) {
				ue.before = before
			}
			if err != nil || !cont {
				return err
			}
		}
		if r.err != nil {
			return r.err
		}
		before = append(before, l.name)
	}
	return nil
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

// heapEntry reads one triple (or timer). lastOfGroup says nothing follows
// it in the key group, so an unsized value may take the rest.
func (l *layout) heapEntry(r *reader, kg int, lastOfGroup bool, emit func(snapshot.Entry) bool) (bool, error) {
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
	var b []byte
	if lastOfGroup && !sized(l.elem) {
		// The last value of the key group ends where the group does.
		b = r.take(r.remaining(), "value")
	} else if b, err = take(l.elem, "value"); err != nil {
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
