package redistribute

import (
	"errors"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func twoOperators() *snapshot.Snapshot {
	return &snapshot.Snapshot{Operators: []*snapshot.Operator{
		{ID: "a", UID: "agg", Parallelism: 2, MaxParallelism: 128},
		{ID: "b", UID: "global", Parallelism: 1, MaxParallelism: 1},
	}}
}

// Flink keeps an operator of max parallelism 1 (the planner's global
// operators) at parallelism 1 when the job's parallelism changes, and its
// max parallelism at 1.
func TestPinnedOperatorStaysAtOne(t *testing.T) {
	got, err := Targets(twoOperators(), Request{Parallelism: 3, MaxParallelism: 256})
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{Parallelism: 3, MaxParallelism: 256}, {Parallelism: 1, MaxParallelism: 1}}
	if got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("targets %v, want %v", got, want)
	}
}

// Naming a pinned operator at another parallelism is refused: Flink would
// not restore it there.
func TestPinnedOperatorNamedElsewhereRefused(t *testing.T) {
	_, err := Targets(twoOperators(), Request{Operators: map[string]int{"global": 2}})
	if !errors.Is(err, keygroup.ErrInvalidParallelism) {
		t.Fatalf("%v, want an invalid parallelism", err)
	}
	if _, err := Targets(twoOperators(), Request{Operators: map[string]int{"global": 1, "agg": 4}}); err != nil {
		t.Fatalf("naming it at 1: %v", err)
	}
}
