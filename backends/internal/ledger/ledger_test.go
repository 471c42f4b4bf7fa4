package ledger

import (
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func op(id string, p int) *snapshot.Operator {
	return &snapshot.Operator{ID: id, UID: "uid-" + id, Parallelism: p, MaxParallelism: 128}
}

func kgs(o *snapshot.Operator, i int) keygroup.Range {
	return keygroup.RangeOf(o.MaxParallelism, o.Parallelism, i)
}

func TestCommitFillsEmptySubtasksInOrder(t *testing.T) {
	var l Ledger[string]
	a, b := op("a", 3), op("b", 2)
	for _, i := range []int{2, 0} {
		if _, err := l.Start(a, i, kgs(a, i)); err != nil {
			t.Fatal(err)
		}
		l.Finish(a, i, &snapshot.Subtask{Index: i, KeyGroups: kgs(a, i)}, "a"+string(rune('0'+i)))
	}
	vals, err := l.Commit(&snapshot.Snapshot{Operators: []*snapshot.Operator{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(vals[0], ","); got != "a0,,a2" {
		t.Errorf("values of a: %q", got)
	}
	if len(vals[1]) != 2 || len(b.Subtasks) != 2 || len(a.Subtasks) != 3 {
		t.Fatalf("shapes: %v %d %d", vals, len(a.Subtasks), len(b.Subtasks))
	}
	for i, sub := range []*snapshot.Subtask{a.Subtasks[1], b.Subtasks[0], b.Subtasks[1]} {
		if sub == nil || !sub.Keyed.Known || sub.Keyed.Entries != 0 || !sub.Operator.Known {
			t.Fatalf("empty subtask %d: %+v", i, sub)
		}
	}
	if a.Subtasks[1].KeyGroups != kgs(a, 1) || b.Subtasks[1].KeyGroups != kgs(b, 1) {
		t.Errorf("empty subtasks' key groups: %v %v", a.Subtasks[1].KeyGroups, b.Subtasks[1].KeyGroups)
	}
	if _, err := l.Start(a, 1, kgs(a, 1)); err == nil {
		t.Error("Start after Commit accepted")
	}
}

func TestCommitRefuses(t *testing.T) {
	a := op("a", 2)
	for name, c := range map[string]struct {
		setup func(l *Ledger[int])
		snap  *snapshot.Snapshot
		want  string
	}{
		"unfinished": {func(l *Ledger[int]) { l.Start(a, 0, kgs(a, 0)) }, &snapshot.Snapshot{Operators: []*snapshot.Operator{a}}, "not closed"},
		"twice":      {func(*Ledger[int]) {}, &snapshot.Snapshot{Operators: []*snapshot.Operator{a, op("a", 2)}}, "appears twice"},
		"unknown": {func(l *Ledger[int]) {
			x := op("x", 1)
			l.Start(x, 0, kgs(x, 0))
			l.Finish(x, 0, &snapshot.Subtask{}, 1)
		}, &snapshot.Snapshot{Operators: []*snapshot.Operator{a}}, "does not have"},
		"beyond parallelism": {func(l *Ledger[int]) {
			wide := op("a", 4)
			l.Start(wide, 3, kgs(wide, 3))
			l.Finish(wide, 3, &snapshot.Subtask{}, 1)
		}, &snapshot.Snapshot{Operators: []*snapshot.Operator{a}}, "for parallelism 2"},
	} {
		t.Run(name, func(t *testing.T) {
			var l Ledger[int]
			c.setup(&l)
			if _, err := l.Commit(c.snap); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Commit = %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestStartRefuses(t *testing.T) {
	a := op("a", 2)
	var l Ledger[int]
	if _, err := l.Start(a, 2, kgs(a, 1)); err == nil {
		t.Error("index beyond parallelism accepted")
	}
	if _, err := l.Start(a, 0, keygroup.Range{Start: 0, End: 200}); err == nil {
		t.Error("key groups beyond max parallelism accepted")
	}
	if _, err := l.Start(a, 0, kgs(a, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(a, 0, kgs(a, 0)); err == nil {
		t.Error("a subtask started twice accepted")
	}
	if seq, err := l.Start(op("b", 1), 0, kgs(op("b", 1), 0)); err != nil || seq != 1 {
		t.Errorf("second operator: seq %d, %v", seq, err)
	}
	l.Abort()
	if _, err := l.Start(a, 1, kgs(a, 1)); err == nil {
		t.Error("Start after Abort accepted")
	}
}
