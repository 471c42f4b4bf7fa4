package cmd

import (
	"os"
	"runtime/debug"
	"sync"
)

// copyHeapLimit is the Go heap the commands that copy a snapshot (convert,
// rescale, operator) hold to. Their working set is bounded by design —
// fixed read buffers and, per subtask being written, at most one key
// group's entries to sort — so the collector is asked to keep the heap
// near it rather than let it grow to twice the live data between
// collections. A larger working set only makes collections more frequent.
// GOMEMLIMIT, when set, decides instead.
const copyHeapLimit = 128 << 20

// heapLimits is the memory limit that shareHeapLimit shares among the
// commands running at once (tests run several in one process): the sum
// of their limits while any runs, the limit before the first once none
// does. Each setting its own limit and putting back the one it found
// would, as they end out of order, leave one in force after them all.
var heapLimits struct {
	sync.Mutex
	sum, saved int64
	users      int
}

// limitHeap applies copyHeapLimit and returns what undoes it.
func limitHeap() (restore func()) { return limitHeapAbove(0) }

// limitHeapAbove applies copyHeapLimit plus what a command holds beside
// the copy's working set (load's records): a limit below the live heap
// would have the collector run without pause.
func limitHeapAbove(held int64) (restore func()) { return shareHeapLimit(copyHeapLimit + held) }

// shareHeapLimit adds limit to the Go memory limit until restore is
// called, unless GOMEMLIMIT decides.
func shareHeapLimit(limit int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	heapLimits.Lock()
	defer heapLimits.Unlock()
	if heapLimits.users == 0 {
		heapLimits.saved = debug.SetMemoryLimit(-1)
	}
	heapLimits.users++
	heapLimits.sum += limit
	debug.SetMemoryLimit(heapLimits.sum)
	return func() {
		heapLimits.Lock()
		defer heapLimits.Unlock()
		heapLimits.sum -= limit
		if heapLimits.users--; heapLimits.users == 0 {
			debug.SetMemoryLimit(heapLimits.saved)
		} else {
			debug.SetMemoryLimit(heapLimits.sum)
		}
	}
}
