package diff

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// compareEntries lists the keys whose entries differ. B is brought to A's
// parallelism and max parallelism (re-hashing if needed), then both are
// walked subtask by subtask, one key group at a time, so memory holds one
// key group of each.
func compareEntries(ctx context.Context, d *OperatorDiff, a snapshot.Reader, opA *snapshot.Operator, b snapshot.Reader, opB *snapshot.Operator, opts Options) error {
	if len(opA.KeyedStates)+len(opB.KeyedStates) == 0 {
		return nil
	}
	target := redistribute.Target{Parallelism: opA.Parallelism, MaxParallelism: opA.MaxParallelism}
	asg, err := redistribute.Open(ctx, b, opB, target, redistribute.Options{TempDir: opts.TempDir, Codecs: opts.Codecs})
	if errors.Is(err, redistribute.ErrNotRedistributable) {
		d.EntriesNotCompared = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	defer asg.Close()
	types := map[string]snapshot.KeyedState{}
	for _, op := range []*snapshot.Operator{opB, opA} {
		for _, s := range op.KeyedStates {
			types[s.Name] = s
		}
	}
	maxKeys := cmp.Or(opts.MaxKeys, 1000)
	report := func(kg int, e *snapshot.Entry, change string, old, nw []snapshot.Entry) {
		if len(d.Keys) >= maxKeys {
			d.KeysOmitted++
			return
		}
		st := types[e.State]
		kd := KeyDiff{State: e.State, KeyGroup: kg, Key: opts.Codecs.Decode(st.KeyType, e.Key), Change: change}
		if len(e.Namespace) > 0 {
			kd.Namespace = opts.Codecs.Decode(st.NamespaceType, e.Namespace)
		}
		if opts.Values {
			if len(old) > 0 {
				kd.Old = lookup.Render(opts.Codecs, opA, &st, 0, old, opts.Now).Value
			}
			if len(nw) > 0 {
				kd.New = lookup.Render(opts.Codecs, opB, &st, 0, nw, opts.Now).Value
			}
		}
		d.Keys = append(d.Keys, kd)
	}
	for i, sub := range opA.Subtasks {
		ga := newGrouper(a.Entries(ctx, opA, i, sub.KeyGroups))
		gb := newGrouper(asg.Entries(ctx, i))
		err := mergeGroups(ga, gb, func(kg int, x, y []snapshot.Entry) { compareGroup(kg, x, y, report) })
		ga.stop()
		gb.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// grouper cuts an entry stream into key groups.
type grouper struct {
	next   func() (snapshot.Entry, error, bool)
	stop   func()
	peeked *snapshot.Entry
	done   bool
}

func newGrouper(es snapshot.Entries) *grouper {
	next, stop := iter.Pull2(es)
	return &grouper{next: next, stop: stop}
}

// group returns the next key group's entries (owned copies); nil at the end.
func (g *grouper) group() ([]snapshot.Entry, error) {
	var out []snapshot.Entry
	if g.peeked != nil {
		out = append(out, *g.peeked)
		g.peeked = nil
	}
	for !g.done {
		e, err, ok := g.next()
		if !ok {
			g.done = true
			break
		}
		if err != nil {
			return nil, err
		}
		c := e.Clone()
		if len(out) > 0 && c.KeyGroup != out[0].KeyGroup {
			g.peeked = &c
			break
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeGroups walks two grouped streams in key-group order.
func mergeGroups(a, b *grouper, fn func(kg int, x, y []snapshot.Entry)) error {
	x, err := a.group()
	if err != nil {
		return err
	}
	y, err := b.group()
	if err != nil {
		return err
	}
	for len(x) > 0 || len(y) > 0 {
		switch {
		case len(y) == 0 || (len(x) > 0 && x[0].KeyGroup < y[0].KeyGroup):
			fn(x[0].KeyGroup, x, nil)
			if x, err = a.group(); err != nil {
				return err
			}
		case len(x) == 0 || y[0].KeyGroup < x[0].KeyGroup:
			fn(y[0].KeyGroup, nil, y)
			if y, err = b.group(); err != nil {
				return err
			}
		default:
			fn(x[0].KeyGroup, x, y)
			if x, err = a.group(); err != nil {
				return err
			}
			if y, err = b.group(); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareKey orders entries by state, key and namespace: the unit a
// KeyDiff reports.
func compareKey(a, b *snapshot.Entry) int {
	return cmp.Or(cmp.Compare(a.State, b.State), bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace))
}

// compareGroup compares one key group's entries key by key. Within a key,
// map entries are compared by user key and list elements in order.
func compareGroup(kg int, x, y []snapshot.Entry, report func(kg int, e *snapshot.Entry, change string, old, nw []snapshot.Entry)) {
	order := func(a, b snapshot.Entry) int {
		return cmp.Or(compareKey(&a, &b), bytes.Compare(a.UserKey, b.UserKey))
	}
	slices.SortStableFunc(x, order)
	slices.SortStableFunc(y, order)
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		var c int
		switch {
		case i == len(x):
			c = 1
		case j == len(y):
			c = -1
		default:
			c = compareKey(&x[i], &y[j])
		}
		ei, ej := i, j
		if c <= 0 {
			for ei < len(x) && compareKey(&x[ei], &x[i]) == 0 {
				ei++
			}
		}
		if c >= 0 {
			for ej < len(y) && compareKey(&y[ej], &y[j]) == 0 {
				ej++
			}
		}
		switch {
		case c < 0:
			report(kg, &x[i], KeyRemoved, x[i:ei], nil)
		case c > 0:
			report(kg, &y[j], KeyAdded, nil, y[j:ej])
		case !slices.EqualFunc(x[i:ei], y[j:ej], func(p, q snapshot.Entry) bool { return p.Equal(&q) }):
			report(kg, &x[i], KeyChanged, x[i:ei], y[j:ej])
		}
		i, j = ei, ej
	}
}

// compareElements lists the operator states whose elements differ: per
// subtask with equal parallelism, else as sets of values. Union state is
// compared as a whole, as every subtask restores all of it.
func compareElements(ctx context.Context, d *OperatorDiff, a snapshot.Reader, opA *snapshot.Operator, b snapshot.Reader, opB *snapshot.Operator) error {
	read := func(r snapshot.Reader, op *snapshot.Operator, perSubtask bool) (map[string][]string, error) {
		out := map[string][]string{}
		for _, sub := range op.Subtasks {
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return nil, err
				}
				v := string(el.Value)
				if perSubtask {
					v = strconv.Itoa(sub.Index) + ":" + v
				}
				out[el.State] = append(out[el.State], v)
			}
		}
		return out, nil
	}
	same := opA.Parallelism == opB.Parallelism
	ea, err := read(a, opA, same)
	if err != nil {
		return err
	}
	eb, err := read(b, opB, same)
	if err != nil {
		return err
	}
	for _, s := range opA.OperatorStates {
		if _, ok := opB.OperatorStateByName(s.Name); !ok {
			continue
		}
		x, y := ea[s.Name], eb[s.Name]
		if s.Mode == snapshot.Union {
			x, y = unionValues(x, same), unionValues(y, same)
		} else if !same {
			slices.Sort(x)
			slices.Sort(y)
			x, y = slices.Compact(x), slices.Compact(y)
		}
		if !slices.Equal(x, y) {
			d.ElementsDiffer = append(d.ElementsDiffer, s.Name)
		}
	}
	return nil
}

// unionValues sorts a union state's values, dropping subtask prefixes.
func unionValues(vs []string, prefixed bool) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if prefixed {
			_, v, _ = strings.Cut(v, ":")
		}
		out[i] = v
	}
	slices.Sort(out)
	return out
}
