package redistribute

import (
	"slices"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Piece is a contiguous run of one operator state's elements in one old
// subtask: elements [Start, Start+Count) of that subtask's list.
type Piece struct {
	OldSubtask int   `json:"old_subtask"`
	Start      int64 `json:"start"`
	Count      int64 `json:"count"`
}

// AssignOperatorState computes which elements of each operator state every
// new subtask restores. counts[s][i] is the number of elements of state
// op.OperatorStates[s] held by old subtask i. The result is indexed
// [new subtask][state] and lists the pieces in restore order.
//
// Split states are dealt out as Flink's round-robin repartitioner does:
// the elements of a state over all old subtasks, in subtask order, are cut
// into newP contiguous slices, total/newP each and one more for the first
// total%newP; the subtask receiving the first slice of a state is the one
// where the previous state's extra elements ran out. States are visited in
// the iteration order of the Java HashMap Flink groups them in.
func AssignOperatorState(states []snapshot.OperatorState, counts [][]int64, oldP, newP int) [][][]Piece {
	return assign(states, counts, oldP, newP, true)
}

// StoredOperatorState is where a rescaled snapshot stores each element, so
// that restoring it at newP gives every subtask what AssignOperatorState
// gives when restoring the original at newP. It differs for union state
// only: as Flink unions it again on restore, each old list is stored once,
// old list i in new subtask i % newP, so that scaling up and back down
// gives back the original lists; with unchanged parallelism nothing moves.
// (Flink defines no order among the lists a union restores.)
func StoredOperatorState(states []snapshot.OperatorState, counts [][]int64, oldP, newP int) [][][]Piece {
	return assign(states, counts, oldP, newP, false)
}

func assign(states []snapshot.OperatorState, counts [][]int64, oldP, newP int, restore bool) [][][]Piece {
	out := make([][][]Piece, newP)
	for j := range out {
		out[j] = make([][]Piece, len(states))
	}
	if oldP == newP {
		for s, st := range states {
			for j := range newP {
				if st.Mode == snapshot.Union && restore {
					out[j][s] = wholeLists(counts[s], 0, oldP)
				} else {
					out[j][s] = wholeLists(counts[s], j, j+1)
				}
			}
		}
		return out
	}
	var split []int
	for s, st := range states {
		switch st.Mode {
		case snapshot.Union:
			for j := range newP {
				if restore {
					out[j][s] = wholeLists(counts[s], 0, oldP)
				} else {
					for i := j; i < oldP; i += newP {
						out[j][s] = append(out[j][s], wholeLists(counts[s], i, i+1)...)
					}
				}
			}
		case snapshot.Broadcast:
			for j := range newP {
				out[j][s] = wholeLists(counts[s], j%oldP, j%oldP+1)
			}
		default:
			split = append(split, s)
		}
	}
	names := make([]string, len(split))
	for i, s := range split {
		names[i] = states[s].Name
	}
	start := 0
	for _, k := range javaHashMapOrder(names) {
		s := split[k]
		start = splitState(out, s, counts[s], newP, start)
	}
	return out
}

// splitState deals one split state's elements out to the new subtasks,
// beginning with subtask start, and returns where the next state begins.
func splitState(out [][][]Piece, s int, counts []int64, newP, start int) int {
	var total int64
	for _, n := range counts {
		total += n
	}
	base, extra := total/int64(newP), total%int64(newP)
	next := start
	old, offset := 0, int64(0)
	for i := range newP {
		j := (i + start) % newP
		want := base
		if int64(i) < extra {
			want++
		} else if int64(i) == extra {
			next = j
		}
		for want > 0 {
			for offset == counts[old] {
				old, offset = old+1, 0
			}
			n := min(want, counts[old]-offset)
			out[j][s] = append(out[j][s], Piece{OldSubtask: old, Start: offset, Count: n})
			offset += n
			want -= n
		}
	}
	return next
}

// wholeLists is the full lists of old subtasks [from, to) that hold elements.
func wholeLists(counts []int64, from, to int) []Piece {
	var out []Piece
	for i := from; i < to && i < len(counts); i++ {
		if counts[i] > 0 {
			out = append(out, Piece{OldSubtask: i, Count: counts[i]})
		}
	}
	return out
}

// javaHashMapOrder returns the indexes of names in the order a
// java.util.HashMap with default settings, filled with them, iterates its
// keys: by bucket ((h ^ h>>>16) & (capacity-1) of String.hashCode), then
// insertion order within a bucket.
func javaHashMapOrder(names []string) []int {
	capacity := 16
	for len(names) > capacity*3/4 {
		capacity *= 2
	}
	bucket := func(name string) int {
		h := uint32(keygroup.HashString(name))
		return int((h ^ h>>16) & uint32(capacity-1))
	}
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bucket(names[a]) - bucket(names[b]) })
	return idx
}
