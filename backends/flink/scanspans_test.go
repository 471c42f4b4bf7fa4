package flink

import (
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// The spans a subtask's key groups are walked in cover each key group its
// handles hold once, in order, and no more spans than asked for.
func TestScanSpansCoverTheKeyGroupsOnce(t *testing.T) {
	handle := func(start, count int32) *metadata.KeyedHandle {
		return &metadata.KeyedHandle{KeyGroups: &metadata.KeyGroupsHandle{Range: metadata.KeyGroupRange{Start: start, Count: count}}}
	}
	for _, c := range []struct {
		name    string
		handles []*metadata.KeyedHandle
		n       int
		lo, hi  int
	}{
		{"one handle, two spans", []*metadata.KeyedHandle{handle(64, 64)}, 2, 64, 127},
		{"more spans than key groups", []*metadata.KeyedHandle{handle(5, 3)}, 8, 5, 7},
		{"two handles", []*metadata.KeyedHandle{handle(10, 5), handle(0, 4)}, 3, 0, 14},
		{"an empty handle among them", []*metadata.KeyedHandle{handle(0, 0), handle(3, 1)}, 2, 3, 3},
		{"one key group, one span", []*metadata.KeyedHandle{handle(0, 128)}, 1, 0, 127},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans := scanSpans(c.handles, c.n)
			if len(spans) == 0 || len(spans) > c.n {
				t.Fatalf("%d spans, want 1 to %d", len(spans), c.n)
			}
			next := c.lo
			for _, s := range spans {
				if s.Start != next || s.End < s.Start {
					t.Fatalf("spans %v: want contiguous non-empty spans from %d", spans, c.lo)
				}
				next = s.End + 1
			}
			if next != c.hi+1 {
				t.Fatalf("spans %v end at %d, want %d", spans, next-1, c.hi)
			}
		})
	}
}
