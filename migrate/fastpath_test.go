package migrate

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// fakeCopier is a memory writer with a KeyedCopier that copies a new
// subtask's entries itself, or declines when decline is set.
type fakeCopier struct {
	snapshot.Writer
	decline bool
	calls   atomic.Int64 // Execute writes subtasks concurrently
}

func (f *fakeCopier) SubtaskFrom(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, bool, error) {
	f.calls.Add(1)
	if f.decline {
		return nil, false, nil
	}
	sw, err := f.Writer.Subtask(ctx, newOp, index, kgs)
	if err != nil {
		return nil, true, err
	}
	for _, sub := range op.Subtasks {
		if part := sub.KeyGroups.Intersect(kgs); part.Len() > 0 {
			for e, err := range r.Entries(ctx, op, sub.Index, part) {
				if err == nil {
					err = sw.Entry(&e)
				}
				if err != nil {
					return nil, true, err
				}
			}
		}
	}
	return sw, true, nil
}

// rescaleVia is rescale with a fakeCopier as the writer.
func rescaleVia(t *testing.T, src string, req redistribute.Request, opts ExecuteOptions, decline bool) (string, int) {
	t.Helper()
	plan, err := newPlan(context.Background(), openSnap(t, src), req)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, op := range plan.Operators {
		for _, sub := range op.Subtasks {
			want += sub.KeyedBytes + sub.OperatorBytes
		}
	}
	var f *fakeCopier
	var progress int64
	opts.Progress = func(n int64) { progress += n }
	dst := rescaleInto(t, src, req, opts, func(w snapshot.Writer) snapshot.Writer {
		f = &fakeCopier{Writer: w, decline: decline}
		return f
	})
	if progress == 0 && want > 0 {
		t.Errorf("no progress reported, the plan moves %d bytes", want)
	}
	return dst, int(f.calls.Load())
}

// TestExecuteTakesKeyedCopier checks when Execute asks the writer to copy
// keyed state, and that the result is the entry-by-entry one either way.
func TestExecuteTakesKeyedCopier(t *testing.T) {
	src := writeRandom(t, 7)
	s := openSnap(t, src).Snapshot()
	newSubtasks := 3 * len(s.Operators)
	cases := []struct {
		name    string
		req     redistribute.Request
		opts    ExecuteOptions
		decline bool
		calls   int
	}{
		{"copied", redistribute.Request{Parallelism: 3}, ExecuteOptions{}, false, newSubtasks},
		{"declined", redistribute.Request{Parallelism: 3}, ExecuteOptions{}, true, newSubtasks},
		{"entry by entry", redistribute.Request{Parallelism: 3}, ExecuteOptions{EntryByEntry: true}, false, 0},
		{"max parallelism changes", redistribute.Request{Parallelism: 3, MaxParallelism: 256}, ExecuteOptions{}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, calls := rescaleVia(t, src, c.req, c.opts, c.decline)
			if calls != c.calls {
				t.Errorf("SubtaskFrom called %d times, want %d", calls, c.calls)
			}
			want := rescale(t, src, c.req, ExecuteOptions{})
			if g, w := collect(t, got), collect(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("result differs from the entry-by-entry one")
			}
			checkPlacement(t, got)
		})
	}
}
