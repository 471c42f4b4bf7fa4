package cmd

import (
	"runtime"
	"testing"
)

// Commands running at once share one raise, undone when the last ends;
// a GOMAXPROCS variable is left to rule.
func TestMoreProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	base := runtime.GOMAXPROCS(0)
	want := base + min(base, 4)
	first, second := moreProcs(), moreProcs()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("raised to %d, want %d", got, want)
	}
	first()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("%d after one of two ended, want %d still", got, want)
	}
	second()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Fatalf("%d after both ended, want %d again", got, base)
	}
	t.Setenv("GOMAXPROCS", "3")
	restore := moreProcs()
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Errorf("raised to %d although GOMAXPROCS is set", got)
	}
	restore()
}
