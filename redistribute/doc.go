// Package redistribute plans a change of parallelism (and, beyond what
// Flink itself allows, of max parallelism) of a snapshot's operators and
// assigns old state to new subtasks, following Apache Flink's rules:
//
//   - keyed state: new subtask i takes the key groups of
//     keygroup.RangeOf(maxP, newP, i), read from every old subtask whose
//     range intersects it;
//   - operator list state: split (contiguous slices over all old subtasks,
//     with a rotating start across state names), union (every new subtask
//     gets every element) and broadcast (new subtask i gets old i % oldP);
//     with unchanged parallelism elements stay where they are, except union,
//     which is still unioned.
//
// The same code serves `stateutil rescale` (NewPlan and OpenPlanned, which
// package migrate writes out) and the stream runtime restoring a snapshot
// at a new parallelism (Open). Nothing here writes.
package redistribute
