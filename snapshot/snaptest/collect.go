package snaptest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/snapshot"
)

// Subtask is one subtask's state, read whole.
type Subtask struct {
	Entries  []snapshot.Entry
	Elements []snapshot.Element
	Raw      snapshot.RawState
}

// Collect reads every operator's subtasks whole, keyed by operator label.
// Entries are put in canonical order (Canonical).
func Collect(ctx context.Context, r snapshot.Reader) (map[string][]Subtask, error) {
	out := map[string][]Subtask{}
	for _, op := range r.Snapshot().Operators {
		subs := make([]Subtask, len(op.Subtasks))
		for i, sub := range op.Subtasks {
			for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), i, err)
				}
				subs[i].Entries = append(subs[i].Entries, e.Clone())
			}
			Canonical(subs[i].Entries)
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), i, err)
				}
				el.Value = bytes.Clone(el.Value)
				subs[i].Elements = append(subs[i].Elements, el)
			}
			raw, err := r.Raw(ctx, op, sub.Index)
			if err != nil {
				return nil, err
			}
			subs[i].Raw = raw
		}
		out[op.Label()] = subs
	}
	return out, nil
}

// Canonical sorts entries stably by key group, state, key, namespace and
// user key: the order formats agree on (a list's elements keep theirs).
func Canonical(es []snapshot.Entry) {
	slices.SortStableFunc(es, CompareEntries)
}

// CompareEntries orders entries canonically; entries of one list compare
// equal.
func CompareEntries(a, b snapshot.Entry) int {
	return cmp.Or(cmp.Compare(a.KeyGroup, b.KeyGroup), cmp.Compare(a.State, b.State),
		bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace), bytes.Compare(a.UserKey, b.UserKey))
}

// EqualEntries reports whether two canonical entry lists are identical,
// and describes the first difference.
func EqualEntries(a, b []snapshot.Entry) (bool, string) {
	for i := range min(len(a), len(b)) {
		if !a[i].Equal(&b[i]) {
			return false, fmt.Sprintf("entry %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return false, fmt.Sprintf("%d entries vs %d", len(a), len(b))
	}
	return true, ""
}
