package cmd

import (
	"os"
	"runtime/debug"
)

// copyHeapLimit is the Go heap the commands that copy a snapshot (convert,
// rescale, operator) hold to. Their working set is bounded by design —
// fixed read buffers and, per subtask being written, at most one key
// group's entries to sort — so the collector is asked to keep the heap
// near it rather than let it grow to twice the live data between
// collections. A larger working set only makes collections more frequent.
// GOMEMLIMIT, when set, decides instead.
const copyHeapLimit = 128 << 20

// limitHeap applies copyHeapLimit and returns what undoes it.
func limitHeap() (restore func()) { return limitHeapAbove(0) }

// limitHeapAbove applies copyHeapLimit plus what a command holds beside
// the copy's working set (load's records): a limit below the live heap
// would have the collector run without pause.
func limitHeapAbove(held int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(copyHeapLimit + held)
	return func() { debug.SetMemoryLimit(old) }
}
