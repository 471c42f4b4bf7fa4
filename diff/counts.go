package diff

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// countStates fills d.Counts: entries per keyed state and elements per
// operator state, for every state either side declares.
func countStates(ctx context.Context, d *OperatorDiff, a snapshot.Reader, opA *snapshot.Operator, b snapshot.Reader, opB *snapshot.Operator) error {
	ka, ea, err := count(ctx, a, opA)
	if err != nil {
		return fmt.Errorf("snapshot A: %w", err)
	}
	kb, eb, err := count(ctx, b, opB)
	if err != nil {
		return fmt.Errorf("snapshot B: %w", err)
	}
	seen := map[StateRef]bool{}
	add := func(ref StateRef, x, y map[string]int64) {
		if !seen[ref] {
			seen[ref] = true
			d.Counts = append(d.Counts, StateCount{StateRef: ref, A: x[ref.Name], B: y[ref.Name]})
		}
	}
	for _, ops := range []*snapshot.Operator{opA, opB} {
		for _, s := range ops.KeyedStates {
			add(StateRef{s.Name, Keyed}, ka, kb)
		}
		for _, s := range ops.OperatorStates {
			add(StateRef{s.Name, OperatorScope}, ea, eb)
		}
	}
	return nil
}

// count is the entries per keyed state and elements per operator state of
// one operator, streaming.
func count(ctx context.Context, r snapshot.Reader, op *snapshot.Operator) (map[string]int64, map[string]int64, error) {
	keyed, elements := map[string]int64{}, map[string]int64{}
	for _, sub := range op.Subtasks {
		if len(op.KeyedStates) > 0 && !(sub.Keyed.Known && sub.Keyed.Entries == 0) {
			for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return nil, nil, fmt.Errorf("subtask %d: %w", sub.Index, err)
				}
				keyed[e.State]++
			}
		}
		if sub.OperatorElements != nil || (sub.Operator.Known && sub.Operator.Entries == 0) {
			for name, n := range sub.OperatorElements {
				elements[name] += n
			}
			continue
		}
		for el, err := range r.Elements(ctx, op, sub.Index) {
			if err != nil {
				return nil, nil, fmt.Errorf("subtask %d: %w", sub.Index, err)
			}
			elements[el.State]++
		}
	}
	return keyed, elements, nil
}
