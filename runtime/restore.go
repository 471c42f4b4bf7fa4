package runtime

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// planRestore opens, through the redistribute package, what each subtask
// of op restores at parallelism newP and max parallelism maxP: its key
// groups' entries and its share of operator state (split slices, all of
// union state, its copy of broadcast state). Close the result after use.
func planRestore(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, newP, maxP int) (*redistribute.Assignment, error) {
	a, err := redistribute.Open(ctx, r, op, redistribute.Target{Parallelism: newP, MaxParallelism: maxP}, redistribute.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIncompatibleSnapshot, err)
	}
	return a, nil
}

// offset is a source partition's position: the element of OffsetsState.
type offset struct {
	Partition int   `msgpack:"partition" json:"partition"`
	Offset    int64 `msgpack:"offset" json:"offset"`
}

// sourceAssignments decides which partitions, from which offsets, each
// source subtask reads. restored[i] are subtask i's restored elements (nil
// without a restore). Split mode: a subtask owns exactly the partitions of
// its elements. Union mode: every subtask sees the union of all pairs and
// takes those with partition % p == i. Partitions no snapshot mentions
// start at 0 on subtask partition % p. The assignment is computed once
// for all subtasks, so a partition can never be read twice.
func sourceAssignments(src Source, mode snapshot.Mode, p int, restored [][]offset) ([][]offset, error) {
	n := src.Partitions()
	out := make([][]offset, p)
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	take := func(i int, o offset) error {
		if o.Partition < 0 || o.Partition >= n {
			return fmt.Errorf("%w: restored offset names partition %d; the source has %d", ErrIncompatibleSnapshot, o.Partition, n)
		}
		if owner[o.Partition] >= 0 {
			return fmt.Errorf("%w: partition %d is assigned to subtasks %d and %d", ErrIncompatibleSnapshot, o.Partition, owner[o.Partition], i)
		}
		owner[o.Partition] = i
		out[i] = append(out[i], o)
		return nil
	}
	if mode == snapshot.Union {
		// Every subtask sees the union; each takes partition % p == its index.
		union := map[int]offset{}
		for _, offs := range restored {
			for _, o := range offs {
				if prev, ok := union[o.Partition]; ok && prev != o {
					return nil, fmt.Errorf("%w: partition %d has offsets %d and %d in union state", ErrIncompatibleSnapshot, o.Partition, prev.Offset, o.Offset)
				}
				union[o.Partition] = o
			}
		}
		restored = make([][]offset, p)
		for _, part := range slices.Sorted(maps.Keys(union)) {
			o := union[part]
			if o.Partition >= 0 {
				restored[o.Partition%p] = append(restored[o.Partition%p], o)
			} else {
				restored[0] = append(restored[0], o)
			}
		}
	}
	for i, offs := range restored {
		for _, o := range offs {
			if err := take(i, o); err != nil {
				return nil, err
			}
		}
	}
	for part := range n {
		if owner[part] < 0 {
			if err := take(part%p, offset{Partition: part}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// decodeOffsets reads the OffsetsState elements of a restore stream.
func decodeOffsets(elements snapshot.Elements) ([]offset, error) {
	var out []offset
	for e, err := range elements {
		if err != nil {
			return nil, err
		}
		if e.State != OffsetsState {
			continue
		}
		var o offset
		if err := safemsgpack.Unmarshal(e.Value, &o); err != nil {
			return nil, fmt.Errorf("%w: undecodable source offset: %v", snapshot.ErrCorrupt, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// allElements streams every element of every old subtask of op.
func allElements(ctx context.Context, r snapshot.Reader, op *snapshot.Operator) iter.Seq2[snapshot.Element, error] {
	return func(yield func(snapshot.Element, error) bool) {
		for j := range op.Parallelism {
			for e, err := range r.Elements(ctx, op, j) {
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
	}
}
