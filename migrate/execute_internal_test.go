package migrate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEachSubtask(t *testing.T) {
	t.Run("all", func(t *testing.T) {
		var seen [7]atomic.Int32
		if err := forEachSubtask(context.Background(), len(seen), func(_ context.Context, i int) error {
			seen[i].Add(1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if n := seen[i].Load(); n != 1 {
				t.Errorf("subtask %d written %d times", i, n)
			}
		}
	})
	t.Run("first error cancels the rest", func(t *testing.T) {
		boom := errors.New("boom")
		var running atomic.Int32
		err := forEachSubtask(context.Background(), 50, func(ctx context.Context, i int) error {
			running.Add(1)
			defer running.Add(-1)
			if i == 1 {
				return boom
			}
			if subtaskWriters(50) > 1 && i == 0 {
				<-ctx.Done() // the failure of subtask 1 cancels it
				return ctx.Err()
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
		if n := running.Load(); n != 0 {
			t.Fatalf("%d subtasks still running after return", n)
		}
	})
	t.Run("parent canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := forEachSubtask(ctx, 3, func(ctx context.Context, i int) error { return ctx.Err() })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}
