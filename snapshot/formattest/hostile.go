package formattest

import (
	"testing"
	"time"
)

// boundedTimeLimit is hundreds of times what any read a test bounds
// takes, on any machine.
const boundedTimeLimit = time.Minute

// Bounded runs f and fails t, naming what f does, when f has not returned
// within a minute: a reader that waits on a FIFO, or loops, would never
// return, and the test must fail rather than hang. f runs on another
// goroutine, so it must not call t.FailNow.
func Bounded(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(boundedTimeLimit):
		t.Fatalf("%s took longer than %v", what, boundedTimeLimit)
	}
}
