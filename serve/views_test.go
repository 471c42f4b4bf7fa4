package serve

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// body is a view of n bytes, the overhead included.
func body(n int64) []byte { return make([]byte, n-viewOverhead) }

func (vs *views) state() (used int64, kept []string, waiting int) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for e := vs.lru.Front(); e != nil; e = e.Next() {
		kept = append(kept, e.Value.(*view).key)
	}
	return vs.used, kept, len(vs.queue)
}

// awaitWaiting waits until n requests wait for the budget.
func awaitWaiting(vs *views, n int) {
	for _, _, waiting := vs.state(); waiting != n; _, _, waiting = vs.state() {
		runtime.Gosched()
	}
}

func mustGet(t *testing.T, vs *views, key string, size int64, computed *int) *view {
	t.Helper()
	v, err := vs.get(context.Background(), key, size, func() ([]byte, error) {
		*computed++
		return body(size), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Kept views stay within the budget, the least recently used dropped
// first; a dropped view is computed again when asked for.
func TestServeViewsKeepWithinBudget(t *testing.T) {
	vs := newViews(10<<10, 2)
	computed := 0
	for i := range 5 {
		vs.done(mustGet(t, vs, fmt.Sprint(i), 3<<10, &computed))
		if used, _, _ := vs.state(); used > vs.limit {
			t.Fatalf("after view %d: %d bytes kept, over %d", i, used, vs.limit)
		}
	}
	vs.done(mustGet(t, vs, "2", 3<<10, &computed)) // 2 is now the most recent
	vs.done(mustGet(t, vs, "5", 3<<10, &computed))
	if _, kept, _ := vs.state(); fmt.Sprint(kept) != "[4 2 5]" {
		t.Errorf("kept %v, want [4 2 5]: the least recently used dropped", kept)
	}
	if computed != 6 {
		t.Errorf("%d computations for 6 distinct views, one of them asked twice while kept", computed)
	}
	vs.done(mustGet(t, vs, "0", 3<<10, &computed))
	if computed != 7 {
		t.Errorf("a dropped view was not computed again")
	}
}

// A view being written is not dropped; a reservation that does not fit
// waits, in order, and past maxWaiting waiting a request is refused; the
// waiting ones get their turn as views are done with.
func TestServeViewsQueueThenRefuse(t *testing.T) {
	vs := newViews(10<<10, 2)
	computed := 0
	pinned := mustGet(t, vs, "big", 9<<10, &computed)
	type result struct {
		key string
		err error
	}
	results := make(chan result, 3)
	for i, key := range []string{"a", "b"} {
		go func() {
			v, err := vs.get(context.Background(), key, 4<<10, func() ([]byte, error) { return body(4 << 10), nil })
			if err == nil {
				vs.done(v)
			}
			results <- result{key, err}
		}()
		awaitWaiting(vs, i+1)
	}
	if _, err := vs.get(context.Background(), "c", 1<<10, nil); !errors.Is(err, errBusy) {
		t.Fatalf("a third request past the budget: %v, want errBusy", err)
	}
	select {
	case r := <-results:
		t.Fatalf("%s was answered while the budget was taken", r.key)
	default:
	}
	vs.done(pinned)
	got := map[string]error{}
	for range 2 {
		r := <-results
		got[r.key] = r.err
	}
	if got["a"] != nil || got["b"] != nil {
		t.Errorf("the waiting requests: %v", got)
	}
	if used, _, _ := vs.state(); used > vs.limit {
		t.Errorf("%d bytes kept, over %d", used, vs.limit)
	}
}

// A request that stops waiting gives its place back.
func TestServeViewsWaiterLeaves(t *testing.T) {
	vs := newViews(10<<10, 1)
	computed := 0
	pinned := mustGet(t, vs, "big", 10<<10, &computed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := vs.reserve(ctx, 4<<10)
		done <- err
	}()
	awaitWaiting(vs, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("reserve: %v", err)
	}
	if _, _, waiting := vs.state(); waiting != 0 {
		t.Fatalf("%d still waiting", waiting)
	}
	vs.done(pinned)
	n, err := vs.reserve(context.Background(), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	vs.release(n)
	if used, _, _ := vs.state(); used != 0 {
		t.Errorf("%d bytes held with nothing kept or reserved", used)
	}
}

// Many requests for one view compute it once; a computation that panics
// leaves the others to compute it, not waiting forever.
func TestServeViewsComputeOnce(t *testing.T) {
	vs := newViews(1<<20, 8)
	var mu sync.Mutex
	computed := 0
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			<-start
			v, err := vs.get(context.Background(), "k", 1<<10, func() ([]byte, error) {
				mu.Lock()
				computed++
				mu.Unlock()
				return body(1 << 10), nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			vs.done(v)
		})
	}
	close(start)
	wg.Wait()
	if computed != 1 {
		t.Errorf("computed %d times", computed)
	}

	func() {
		defer func() { _ = recover() }()
		_, _ = vs.get(context.Background(), "p", 1<<10, func() ([]byte, error) { panic("boom") })
	}()
	v, err := vs.get(context.Background(), "p", 1<<10, func() ([]byte, error) { return body(1 << 10), nil })
	if err != nil || len(v.body) != 1<<10-viewOverhead {
		t.Fatalf("after a panic: %v", err)
	}
	vs.done(v)
	if used, kept, _ := vs.state(); used != int64(len(kept))*(1<<10) {
		t.Errorf("%d bytes held by %d views of 1 KiB: the panicked reservation leaked", used, len(kept))
	}
}
