package statesql

import (
	"iter"
	"sync"
)

// pull is iter.Pull with the sequence on a goroutine of its own. DuckDB
// calls the table functions on threads cgo has locked and the query ends on
// the caller's, unlocked one; iter.Pull's coroutines must be resumed from
// threads locked alike (the runtime aborts otherwise), a goroutine need
// not. As with iter.Pull, the sequence runs only while next waits for it:
// a value next gave (a batch the sequence reuses) stays the caller's until
// the caller calls next or stop again. stop waits for the sequence to
// return; next after stop gives nothing.
func pull[V any](seq iter.Seq[V]) (next func() (V, bool), stop func()) {
	want := make(chan struct{})
	items := make(chan V)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(items)
		select {
		case <-want:
		case <-done:
			return
		}
		for v := range seq {
			select {
			case items <- v:
			case <-done:
				return
			}
			select {
			case <-want:
			case <-done:
				return
			}
		}
	}()
	next = func() (V, bool) {
		var zero V
		select {
		case want <- struct{}{}:
		case <-finished:
			return zero, false
		}
		v, ok := <-items
		return v, ok
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
	return next, stop
}
