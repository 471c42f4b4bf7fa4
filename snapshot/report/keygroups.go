package report

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// KeyGroups is the `inspect --key-groups` view.
type KeyGroups struct {
	SchemaVersion int                 `json:"schema_version"`
	Location      string              `json:"location"`
	Operators     []OperatorKeyGroups `json:"operators"`
}

// OperatorKeyGroups is one keyed operator's distribution.
type OperatorKeyGroups struct {
	ID             string          `json:"id"`
	UID            string          `json:"uid"`
	Name           string          `json:"name"`
	Parallelism    int             `json:"parallelism"`
	MaxParallelism int             `json:"max_parallelism"`
	KeyGroups      []KeyGroupRow   `json:"key_groups"`
	Subtasks       []SubtaskWeight `json:"subtasks"`
	// KeyGroupSkew is max/mean bytes over the key groups that hold state;
	// SubtaskSkew is max/mean bytes over subtasks.
	KeyGroupSkew float64 `json:"key_group_skew"`
	SubtaskSkew  float64 `json:"subtask_skew"`
}

// KeyGroupRow is one key group that holds state.
type KeyGroupRow struct {
	KeyGroup int   `json:"key_group"`
	Subtask  int   `json:"subtask"`
	Entries  int64 `json:"entries"`
	Bytes    int64 `json:"bytes"`
}

// SubtaskWeight is a subtask's share of keyed state.
type SubtaskWeight struct {
	Index   int   `json:"index"`
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

// KeyGroupDistribution computes the view for the operators selected by
// label ("" = every keyed operator).
func KeyGroupDistribution(ctx context.Context, location string, r snapshot.Reader, label string) (*KeyGroups, error) {
	r, _ = snapshot.WithoutUnreadable(r) // Summarize and inspect's warnings name it
	ops, err := selectOperators(r.Snapshot(), label)
	if err != nil {
		return nil, err
	}
	out := &KeyGroups{SchemaVersion: SchemaVersion, Location: location, Operators: []OperatorKeyGroups{}}
	for _, op := range ops {
		if len(op.KeyedStates) == 0 && label == "" {
			continue
		}
		row := OperatorKeyGroups{ID: op.ID, UID: op.UID, Name: op.Name, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism,
			KeyGroups: []KeyGroupRow{}, Subtasks: []SubtaskWeight{}}
		var groupBytes, subBytes []int64
		for _, sub := range op.Subtasks {
			stats, err := snapshot.KeyGroupStats(ctx, r, op, sub)
			if err != nil {
				return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
			}
			w := SubtaskWeight{Index: sub.Index}
			for _, g := range stats {
				row.KeyGroups = append(row.KeyGroups, KeyGroupRow{KeyGroup: g.KeyGroup, Subtask: sub.Index, Entries: g.Entries, Bytes: g.Bytes})
				groupBytes = append(groupBytes, g.Bytes)
				w.Entries += g.Entries
				w.Bytes += g.Bytes
			}
			row.Subtasks = append(row.Subtasks, w)
			subBytes = append(subBytes, w.Bytes)
		}
		row.KeyGroupSkew, row.SubtaskSkew = snapshot.Skew(groupBytes), snapshot.Skew(subBytes)
		out.Operators = append(out.Operators, row)
	}
	return out, nil
}

func selectOperators(s *snapshot.Snapshot, label string) ([]*snapshot.Operator, error) {
	if label == "" {
		return s.Operators, nil
	}
	op, ok := s.Operator(label)
	if !ok {
		var known []string
		for _, o := range s.Operators {
			known = append(known, o.Label())
		}
		return nil, fmt.Errorf("%w: no operator %q (operators: %v)", snapshot.ErrNotFound, label, known)
	}
	return []*snapshot.Operator{op}, nil
}
