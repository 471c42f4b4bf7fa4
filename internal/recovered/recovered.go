// Package recovered turns a panic in a goroutine into an error its caller
// sees, so that a bug in decoding hostile input ends a command with an
// internal error rather than a crash that looks like any other exit.
package recovered

import (
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// Capture, deferred, turns a panic into *Error in *err.
func Capture(err *error) {
	if p := recover(); p != nil {
		*err = &Error{Value: p, Stack: debug.Stack()}
	}
}
