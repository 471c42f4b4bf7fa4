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

func TestPull2Whole(t *testing.T) {
	seq := func(yield func(string, error) bool) {
		for _, s := range []string{"a", "b"} {
			if !yield(s, nil) {
				return
			}
		}
	}
	next, stop := pull2(seq)
	defer stop()
	var got []string
	for {
		s, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %v", got)
	}
}
