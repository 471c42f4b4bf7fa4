package statesql

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// An operator state's table holds every element of that state and none
// of another's, subtask by subtask, each in list order: many more
// elements than one batch carries, another state's elements written
// between them, and a subtask with none.
func TestOperatorStateTableIsEveryElement(t *testing.T) {
	ctx := context.Background()
	reg := snapshot.NewRegistry(storage.NewRegistry())
	memory.Register(reg)
	f, _ := reg.Writable(memory.Name)
	path := filepath.Join(t.TempDir(), "elements.dump")
	w, err := reg.Create(ctx, f, path, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tString := snapshot.Type{Name: snapshot.TypeString}
	op := &snapshot.Operator{ID: "00112233445566778899aabbccddeeff", UID: "source", Parallelism: 3, MaxParallelism: 128,
		OperatorStates: []snapshot.OperatorState{
			{Name: "offsets", Mode: snapshot.Split, ElementType: tString},
			{Name: "marks", Mode: snapshot.Union, ElementType: tString},
		}}
	perSubtask := []int{3*batchRecords + 17, 0, 5}
	var want []string
	for sub, n := range perSubtask {
		sw, err := w.Subtask(ctx, op, sub, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			v := fmt.Sprintf("partition-%d-%d", sub, i)
			want = append(want, fmt.Sprintf("%d %s", sub, v))
			if err := sw.Element("offsets", []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.Element("marks", []byte(fmt.Sprintf("mark-%d", sub))); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(ctx, &snapshot.Snapshot{JobID: "00000000000000000000000000000001", CheckpointID: 1, Kind: snapshot.Savepoint,
		Operators: []*snapshot.Operator{op}}); err != nil {
		t.Fatal(err)
	}
	r, err := reg.Open(ctx, path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	e, err := Open(ctx, []Snapshot{{Reader: r, Location: path}}, Options{Codecs: reg.Codecs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })

	_, got, err := rows(t, e, `SELECT subtask, mode, value FROM "source"."offsets"`)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range got {
		if row[1] != "split" {
			t.Fatalf("row %v: mode %v, want split", row, row[1])
		}
		lines = append(lines, fmt.Sprintf("%v %v", row[0], row[2]))
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("offsets: %d rows, want %d; first difference at %d", len(lines), len(want), firstDifference(lines, want))
	}
	_, marks, err := rows(t, e, `SELECT subtask, value FROM "source"."marks"`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(marks) != "[[0 mark-0] [1 mark-1] [2 mark-2]]" {
		t.Fatalf("marks: %v", marks)
	}
}

// firstDifference is the first index where a and b differ.
func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
