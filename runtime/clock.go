package runtime

import (
	"time"
)

// Clock is the processing-time clock TTL is measured on.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }
