package redistribute

import (
	"reflect"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

func split(names ...string) []snapshot.OperatorState {
	out := make([]snapshot.OperatorState, len(names))
	for i, n := range names {
		out[i] = snapshot.OperatorState{Name: n, Mode: snapshot.Split}
	}
	return out
}

// A source reading 5 partitions from one subtask, rescaled to 2: each
// partition goes to exactly one new subtask, the first taking the extra.
func TestSplitFivePartitionsOneToTwo(t *testing.T) {
	got := AssignOperatorState(split("offsets"), [][]int64{{5}}, 1, 2)
	want := [][][]Piece{
		{{{OldSubtask: 0, Start: 0, Count: 3}}},
		{{{OldSubtask: 0, Start: 3, Count: 2}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// The generated source holds partitions {0,2,4} and {1,3}; at parallelism
// 3 the slices run across old subtask boundaries.
func TestSplitAcrossOldSubtasks(t *testing.T) {
	got := AssignOperatorState(split("offsets"), [][]int64{{3, 2}}, 2, 3)
	want := [][][]Piece{
		{{{0, 0, 2}}},
		{{{0, 2, 1}, {1, 0, 1}}},
		{{{1, 1, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// Worked by hand: states visited in HashMap order a, b, c (buckets 1, 2,
// 3), although declared c, a, b; each starts where the previous one's
// extra elements ran out.
//
//	a: 4 over 3 from 0 -> s0 a0 a1, s1 a2, s2 a3; next start 1
//	b: 4 over 3 from 1 -> s1 b0 b1, s2 b2, s0 b3; next start 2
//	c: 2 over 3 from 2 -> s2 c0, s0 c1, s1 none
func TestSplitRotatesStartAcrossStates(t *testing.T) {
	states := split("c", "a", "b")
	got := AssignOperatorState(states, [][]int64{{2}, {4}, {4}}, 1, 3)
	want := [][][]Piece{
		{{{0, 1, 1}}, {{0, 0, 2}}, {{0, 3, 1}}},
		{nil, {{0, 2, 1}}, {{0, 0, 2}}},
		{{{0, 0, 1}}, {{0, 3, 1}}, {{0, 2, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// With no remainder the next state starts where this one did.
func TestSplitEvenKeepsStart(t *testing.T) {
	got := AssignOperatorState(split("a", "b"), [][]int64{{4}, {3}}, 1, 2)
	want := [][][]Piece{
		{{{0, 0, 2}}, {{0, 0, 2}}},
		{{{0, 2, 2}}, {{0, 2, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestUnionAndBroadcast(t *testing.T) {
	states := []snapshot.OperatorState{{Name: "u", Mode: snapshot.Union}, {Name: "b", Mode: snapshot.Broadcast}}
	got := AssignOperatorState(states, [][]int64{{1, 2}, {3, 3}}, 2, 3)
	union := []Piece{{0, 0, 1}, {1, 0, 2}}
	want := [][][]Piece{
		{union, {{0, 0, 3}}},
		{union, {{1, 0, 3}}},
		{union, {{0, 0, 3}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// Unchanged parallelism keeps every list where it is, except union.
func TestUnchangedParallelismKeepsListsButUnions(t *testing.T) {
	states := []snapshot.OperatorState{{Name: "s", Mode: snapshot.Split}, {Name: "u", Mode: snapshot.Union}}
	got := AssignOperatorState(states, [][]int64{{3, 1}, {1, 1}}, 2, 2)
	want := [][][]Piece{
		{{{0, 0, 3}}, {{0, 0, 1}, {1, 0, 1}}},
		{{{1, 0, 1}}, {{0, 0, 1}, {1, 0, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestJavaHashMapOrder(t *testing.T) {
	// "Aa" and "BB" share String.hashCode 2112 (bucket 0): insertion order.
	if got := javaHashMapOrder([]string{"c", "BB", "a", "Aa"}); !reflect.DeepEqual(got, []int{1, 3, 2, 0}) {
		t.Fatalf("order %v", got)
	}
	// 13 names grow the table to 32 buckets: "p" (112) moves from bucket 0 to 16.
	names := []string{"p", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	got := javaHashMapOrder(names)
	if got[len(got)-1] != 0 {
		t.Fatalf("with 32 buckets %q must come last, order %v", "p", got)
	}
	if got := javaHashMapOrder(names[:12]); got[0] != 0 {
		t.Fatalf("with 16 buckets %q must come first, order %v", "p", got)
	}
}

// A rescaled snapshot stores each union list once, so that Flink's union on
// restore gives every subtask each element exactly once.
func TestStoredUnionIsPartitioned(t *testing.T) {
	states := []snapshot.OperatorState{{Name: "u", Mode: snapshot.Union}}
	got := StoredOperatorState(states, [][]int64{{1, 2, 3}}, 3, 2)
	want := [][][]Piece{{{{0, 0, 1}, {2, 0, 3}}}, {{{1, 0, 2}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("3->2: got %+v, want %+v", got, want)
	}
	got = StoredOperatorState(states, [][]int64{{1, 2}}, 2, 4)
	want = [][][]Piece{{{{0, 0, 1}}}, {{{1, 0, 2}}}, {nil}, {nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("2->4: got %+v, want %+v", got, want)
	}
	got = StoredOperatorState(states, [][]int64{{1, 2}}, 2, 2)
	want = [][][]Piece{{{{0, 0, 1}}}, {{{1, 0, 2}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("2->2: got %+v, want %+v", got, want)
	}
}
