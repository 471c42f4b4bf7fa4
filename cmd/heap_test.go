package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

// Commands running at once hold the sum of their limits, whatever order
// they end in, and the limit before them is back when the last ends.
func TestHeapLimitsShared(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	base := debug.SetMemoryLimit(-1)
	first, second := limitHeap(), limitHeapAbove(10<<20)
	if got, want := debug.SetMemoryLimit(-1), int64(2*copyHeapLimit+10<<20); got != want {
		t.Fatalf("limit %d with both running, want %d", got, want)
	}
	first()
	if got, want := debug.SetMemoryLimit(-1), int64(copyHeapLimit+10<<20); got != want {
		t.Fatalf("limit %d after the first ended, want the second's %d", got, want)
	}
	second()
	if got := debug.SetMemoryLimit(-1); got != base {
		t.Fatalf("limit %d after both ended, want %d again", got, base)
	}
}

// serve holds its memory limit while it serves and puts back the one it
// found when it stops: a process goes on without it.
func TestServeHoldsItsMemoryLimitWhileServing(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv(tokenEnv, "")
	base := debug.SetMemoryLimit(-1)
	out, stop := startCommand(t, "serve", example, "--listen", "127.0.0.1:0")
	if line := out.next(t); !strings.HasPrefix(line, "serving 1 snapshot(s) at ") {
		t.Fatalf("serve printed %q", line)
	}
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("limit %d while serving, want %d", got, serveMemoryLimit)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != base {
		t.Errorf("limit %d after serve stopped, want %d again", got, base)
	}
}
