package statesql

import (
	"runtime"
	"slices"
	"testing"
)

func TestPullAcrossLockedThreads(t *testing.T) {
	var ended bool
	seq := func(yield func(int) bool) {
		defer func() { ended = true }()
		for i := range 10 {
			if !yield(i) {
				return
			}
		}
	}
	type puller struct {
		next func() (int, bool)
		stop func()
	}
	made := make(chan puller)
	var got []int
	go func() {
		// As DuckDB's scan callbacks run: on a thread cgo has locked.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		next, stop := pull(seq)
		for range 3 {
			v, _ := next()
			got = append(got, v)
		}
		made <- puller{next, stop}
	}()
	p := <-made
	p.stop()
	if !ended {
		t.Fatal("stop returned before the sequence did")
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("got %v, want [0 1 2]", got)
	}
	if v, ok := p.next(); ok {
		t.Fatalf("next after stop gave %d", v)
	}
	p.stop()
}

// A batch next gave stays as it was until the next call: the sequence
// (as lookup's grouper does) refills one buffer.
func TestPullHoldsTheSequenceWhileTheCallerReads(t *testing.T) {
	seq := func(yield func([]int) bool) {
		buf := make([]int, 4)
		for i := range 100 {
			for j := range buf {
				buf[j] = i
			}
			if !yield(buf) {
				return
			}
		}
	}
	next, stop := pull(seq)
	defer stop()
	for i := range 100 {
		b, ok := next()
		if !ok {
			t.Fatalf("sequence ended after %d batches", i)
		}
		for range 3 {
			runtime.Gosched()
		}
		if !slices.Equal(b, []int{i, i, i, i}) {
			t.Fatalf("batch %d changed under the caller: %v", i, b)
		}
	}
	if _, ok := next(); ok {
		t.Fatal("more than 100 batches")
	}
}
