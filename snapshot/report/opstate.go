package report

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// OperatorStates is the `inspect --operator-state` view.
type OperatorStates struct {
	SchemaVersion int                  `json:"schema_version"`
	Location      string               `json:"location"`
	Operators     []OperatorStateUsage `json:"operators"`
}

// OperatorStateUsage lists one operator's operator states.
type OperatorStateUsage struct {
	ID          string       `json:"id"`
	UID         string       `json:"uid"`
	Name        string       `json:"name"`
	Parallelism int          `json:"parallelism"`
	States      []StateUsage `json:"states"`
}

// StateUsage is one operator state: elements per subtask, and the decoded
// elements when asked for.
type StateUsage struct {
	Name               string        `json:"name"`
	Mode               snapshot.Mode `json:"mode"`
	ElementType        snapshot.Type `json:"element_type"`
	ElementsPerSubtask []int64       `json:"elements_per_subtask"`
	Values             []ElementRow  `json:"values,omitempty"`
}

// ElementRow is one decoded element.
type ElementRow struct {
	Subtask int `json:"subtask"`
	Value   any `json:"value"`
}

// OperatorStateUsages computes the view; withValues reads and decodes the
// elements themselves.
func OperatorStateUsages(ctx context.Context, location string, r snapshot.Reader, codecs *snapshot.Codecs, label string, withValues bool) (*OperatorStates, error) {
	r, _ = snapshot.WithoutUnreadable(r) // Summarize and inspect's warnings name it
	ops, err := selectOperators(r.Snapshot(), label)
	if err != nil {
		return nil, err
	}
	out := &OperatorStates{SchemaVersion: SchemaVersion, Location: location, Operators: []OperatorStateUsage{}}
	for _, op := range ops {
		if len(op.OperatorStates) == 0 && label == "" {
			continue
		}
		u := OperatorStateUsage{ID: op.ID, UID: op.UID, Name: op.Name, Parallelism: op.Parallelism, States: []StateUsage{}}
		index := map[string]int{}
		for i, st := range op.OperatorStates {
			index[st.Name] = i
			u.States = append(u.States, StateUsage{Name: st.Name, Mode: st.Mode, ElementType: st.ElementType, ElementsPerSubtask: make([]int64, len(op.Subtasks))})
		}
		for si, sub := range op.Subtasks {
			if !withValues && sub.OperatorElements != nil {
				for name, n := range sub.OperatorElements {
					if i, ok := index[name]; ok {
						u.States[i].ElementsPerSubtask[si] = n
					}
				}
				continue
			}
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
				}
				i, ok := index[el.State]
				if !ok {
					continue
				}
				u.States[i].ElementsPerSubtask[si]++
				if withValues {
					u.States[i].Values = append(u.States[i].Values, ElementRow{Subtask: sub.Index, Value: codecs.Decode(op.OperatorStates[i].ElementType, el.Value)})
				}
			}
		}
		out.Operators = append(out.Operators, u)
	}
	return out, nil
}
