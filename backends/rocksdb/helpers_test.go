package rocksdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

var (
	tString = snapshot.Type{Name: snapshot.TypeString}
	tInt64  = snapshot.Type{Name: snapshot.TypeInt64}
	tVoid   = snapshot.Type{Name: snapshot.TypeVoid}
	tBytes  = snapshot.Type{Name: snapshot.TypeBytes}
)

// writeSnapshot writes op's entries with the format's Writer.
func writeSnapshot(t testing.TB, loc string, op *snapshot.Operator, entries [][]snapshot.Entry) {
	t.Helper()
	ctx := context.Background()
	w, err := testReg.Create(ctx, Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeSubtasks(t, w, op, entries, func(sw snapshot.SubtaskWriter, i int) error {
		for j := range 3 {
			if err := sw.Element("offsets", []byte(fmt.Sprintf("p%d-%d", i, j))); err != nil {
				return err
			}
		}
		return sw.Raw(snapshot.RawState{Keyed: []byte{byte(i)}})
	})
	s := &snapshot.Snapshot{JobID: "job", CheckpointID: 7, Kind: snapshot.Savepoint, Operators: []*snapshot.Operator{op}}
	if err := w.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// writeSubtasks writes subtask i's entries, then whatever more adds to it,
// and closes it, for every subtask in entries.
func writeSubtasks(t testing.TB, w snapshot.Writer, op *snapshot.Operator, entries [][]snapshot.Entry, more func(sw snapshot.SubtaskWriter, i int) error) {
	t.Helper()
	for i, es := range entries {
		sw, err := w.Subtask(context.Background(), op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
		if err != nil {
			t.Fatal(err)
		}
		for j := range es {
			if err := sw.Entry(&es[j]); err != nil {
				t.Fatal(err)
			}
		}
		if err := more(sw, i); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
