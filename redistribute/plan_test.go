package redistribute

import (
	"context"
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

// An operator whose channels hold records in flight stays where it is
// under the job's parallelism, for Flink to redistribute them at restore,
// and its plan says so; naming it, or a new max parallelism, moves it
// (which a copy then refuses, migrate's inFlightCopy), and channels that
// hold no records keep nothing in place.
func TestOperatorHoldingRecordsInFlightStays(t *testing.T) {
	s := &snapshot.Snapshot{Operators: []*snapshot.Operator{
		{ID: "a", UID: "held", Parallelism: 2, MaxParallelism: 128, Subtasks: []*snapshot.Subtask{
			{Index: 0}, {Index: 1, InFlight: []snapshot.InFlight{{Direction: snapshot.InputChannel, Buffers: 1, Bytes: 9}}}}},
		{ID: "b", UID: "empty", Parallelism: 2, MaxParallelism: 128, Subtasks: []*snapshot.Subtask{
			{Index: 0, InFlight: []snapshot.InFlight{{Direction: snapshot.ResultSubpartition, Buffers: 1}}}, {Index: 1}}},
	}}
	for _, c := range []struct {
		req  Request
		want []Target
	}{
		{Request{Parallelism: 3}, []Target{{2, 128}, {3, 128}}},
		{Request{Parallelism: 3, Operators: map[string]int{"held": 4}}, []Target{{4, 128}, {3, 128}}},
		{Request{MaxParallelism: 256}, []Target{{2, 256}, {2, 256}}},
	} {
		got, err := Targets(s, c.req)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != c.want[0] || got[1] != c.want[1] {
			t.Errorf("%+v: targets %v, want %v", c.req, got, c.want)
		}
	}
	req := Request{Parallelism: 3}
	for i, want := range []string{inFlightNote, ""} {
		op := s.Operators[i]
		// Stateless operators: no state is read to plan them.
		p, err := planOperator(context.Background(), nil, op, []Target{{2, 128}, {3, 128}}[i], req)
		if err != nil {
			t.Fatal(err)
		}
		if p.Note != want {
			t.Errorf("operator %s: note %q, want %q", op.UID, p.Note, want)
		}
	}
}
