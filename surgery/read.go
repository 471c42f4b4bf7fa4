package surgery

import (
	"bytes"
	"context"
	"slices"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Counts are entries (or elements) and their bytes.
type Counts struct {
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

func (c *Counts) add(o Counts) {
	c.Entries += o.Entries
	c.Bytes += o.Bytes
}

// Entries streams a subtask's keyed entries as the edits leave them.
func (w *Reader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	oe, ok := w.ops[op]
	if !ok {
		return w.Reader.Entries(ctx, op, subtask, kgs)
	}
	es := w.Reader.Entries(ctx, oe.orig, subtask, kgs)
	return func(yield func(snapshot.Entry, error) bool) {
		// Per keyed state what the key group being read holds (2i) and
		// keeps (2i+1).
		counts := make([]Counts, 2*len(oe.keyed))
		cur := -1
		// Key groups before cur were read whole: on an early stop too.
		defer func() { oe.cover(kgs.Start, max(cur, kgs.Start)-1) }()
		// finish writes what puts add to key groups from cur up to end
		// (those without entries read included), and counts them.
		puts := oe.putsIn(kgs)
		// held keeps, for the puts that keep what they leave unchanged,
		// the entries they replace in the key group being read.
		var held map[*put][]snapshot.Entry
		finish := func(end int) bool {
			for len(puts) > 0 && puts[0].kg < end {
				kg := puts[0].kg
				if kg != cur {
					oe.recordKeyGroup(cur, counts)
					cur = kg
				}
				for len(puts) > 0 && puts[0].kg == kg {
					p := puts[0]
					puts = puts[1:]
					if !oe.write(p, held[p], counts, yield) {
						return false
					}
				}
			}
			oe.recordKeyGroup(cur, counts)
			clear(held)
			return true
		}
		for e, err := range es {
			if err != nil {
				yield(e, err)
				return
			}
			if e.KeyGroup != cur {
				if !finish(e.KeyGroup) {
					return
				}
				cur = e.KeyGroup
			}
			se := oe.keyedBy[e.State]
			if se == nil {
				// Not a declared state: the writer refuses it, naming it.
				if !yield(e, nil) {
					return
				}
				continue
			}
			size := e.Size()
			counts[2*se.index].add(Counts{1, size})
			if se.dropped {
				continue
			}
			if p := se.replacer(&e); p != nil {
				p.found.Store(true)
				if p.keepUnchanged {
					if held == nil {
						held = map[*put][]snapshot.Entry{}
					}
					held[p] = append(held[p], e.Clone())
				}
				continue
			}
			if se.keys != nil && (se.anyNS || bytes.Equal(e.Namespace, se.ns)) {
				if k, ok := se.keys[string(e.Key)]; ok {
					se.found[k].Store(true)
					continue
				}
			}
			e.State = se.name
			counts[2*se.index+1].add(Counts{1, size})
			if !yield(e, nil) {
				return
			}
		}
		if finish(kgs.End + 1) {
			cur = kgs.End + 1
		}
	}
}

// putsIn is the puts into key groups kgs, by key group.
func (oe *opEdit) putsIn(kgs keygroup.Range) []*put {
	var out []*put
	if len(oe.putsByKG) == 0 {
		return nil
	}
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		out = append(out, oe.putsByKG[kg]...)
	}
	return out
}

// replacer is the put of the state that replaces e, or nil.
func (se *stateEdit) replacer(e *snapshot.Entry) *put {
	for _, p := range se.putsByKey[string(e.Key)] {
		if p.replaces(e) {
			return p
		}
	}
	return nil
}

// write yields the entries p puts, unless its state is dropped, and
// counts them. An entry that is one of old, the entries p replaces, keeps
// its expiry: a map entry with the same user key and value, a list
// element with the same position and value, the same value.
func (oe *opEdit) write(p *put, old []snapshot.Entry, counts []Counts, yield func(snapshot.Entry, error) bool) bool {
	se := p.state
	if se.dropped {
		return true
	}
	byUserKey := func(a, b snapshot.Entry) int { return bytes.Compare(a.UserKey, b.UserKey) }
	slices.SortStableFunc(old, byUserKey) // a list's stay in order
	for i, e := range p.entries {
		e.State = se.name
		j := i
		if e.UserKey != nil {
			j, _ = slices.BinarySearchFunc(old, e, byUserKey)
		}
		if j < len(old) && bytes.Equal(old[j].UserKey, e.UserKey) && bytes.Equal(old[j].Value, e.Value) {
			e.ExpiresAt = old[j].ExpiresAt
		}
		counts[2*se.index+1].add(Counts{1, e.Size()})
		if !yield(e, nil) {
			return false
		}
	}
	return true
}

// cover marks key groups lo..hi read whole.
func (oe *opEdit) cover(lo, hi int) {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	for kg := max(lo, 0); kg <= hi && kg < len(oe.covered); kg++ {
		oe.covered[kg] = true
	}
}

// uncovered is the runs of kgs not read whole yet.
func (oe *opEdit) uncovered(kgs keygroup.Range) []keygroup.Range {
	oe.mu.Lock()
	defer oe.mu.Unlock()
	var out []keygroup.Range
	for kg := kgs.Start; kg <= kgs.End; kg++ {
		if kg < len(oe.covered) && oe.covered[kg] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == kg-1 {
			out[n-1].End = kg
		} else {
			out = append(out, keygroup.Range{Start: kg, End: kg})
		}
	}
	return out
}

// recordKeyGroup keeps the counts of key group kg, read whole, unless it
// was counted before, and clears them.
func (oe *opEdit) recordKeyGroup(kg int, counts []Counts) {
	if kg < 0 {
		return
	}
	oe.mu.Lock()
	if _, ok := oe.kgCounts[kg]; !ok {
		oe.kgCounts[kg] = slices.Clone(counts)
	}
	oe.mu.Unlock()
	clear(counts)
}

// Elements streams a subtask's operator-state elements as the edits leave
// them.
func (w *Reader) Elements(ctx context.Context, op *snapshot.Operator, subtask int) snapshot.Elements {
	oe, ok := w.ops[op]
	if !ok {
		return w.Reader.Elements(ctx, op, subtask)
	}
	els := w.Reader.Elements(ctx, oe.orig, subtask)
	return func(yield func(snapshot.Element, error) bool) {
		counts := make([]Counts, 2*len(oe.oper))
		for el, err := range els {
			if err != nil {
				yield(el, err)
				return
			}
			se := oe.operBy[el.State]
			if se == nil {
				if !yield(el, nil) {
					return
				}
				continue
			}
			size := int64(len(el.Value))
			counts[2*se.index].add(Counts{1, size})
			if se.dropped {
				continue
			}
			el.State = se.name
			counts[2*se.index+1].add(Counts{1, size})
			if !yield(el, nil) {
				return
			}
		}
		oe.mu.Lock()
		if _, ok := oe.elemCounts[subtask]; !ok {
			oe.elemCounts[subtask] = counts
		}
		oe.mu.Unlock()
	}
}

// Raw returns a subtask's raw state, which no edit touches.
func (w *Reader) Raw(ctx context.Context, op *snapshot.Operator, subtask int) (snapshot.RawState, error) {
	if oe, ok := w.ops[op]; ok {
		op = oe.orig
	}
	return w.Reader.Raw(ctx, op, subtask)
}

// Scan reads what was not read whole yet of the edited states, so that
// Report is complete: after a copy, which may read operator state only
// in part, or without one (a dry run).
func (w *Reader) Scan(ctx context.Context) error {
	for _, oe := range w.order {
		for _, sub := range oe.edited.Subtasks {
			if sub == nil {
				continue
			}
			oe.mu.Lock()
			elemDone := oe.elemCounts[sub.Index] != nil
			oe.mu.Unlock()
			if touched(oe.keyed) {
				for _, kgs := range oe.uncovered(sub.KeyGroups) {
					for _, err := range w.Entries(ctx, oe.edited, sub.Index, kgs) {
						if err != nil {
							return err
						}
					}
				}
			}
			if !elemDone && touched(oe.oper) {
				for _, err := range w.Elements(ctx, oe.edited, sub.Index) {
					if err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// touched reports whether an edit changes any of states.
func touched(states []*stateEdit) bool {
	for _, se := range states {
		if se.dropped || se.renamed || se.keys != nil || se.puts > 0 {
			return true
		}
	}
	return false
}
