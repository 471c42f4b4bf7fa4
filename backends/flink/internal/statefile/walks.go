package statefile

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Walks keeps where the entries of heap key groups lie, from one read of
// them to the next. Opening a heap snapshot walks every value to tell
// which states can be read at all; the read that follows takes the
// entries' places from that walk instead of walking every value again.
// All the Walks of a process hold at most walksBudget bytes of places
// together: key groups past that are walked again when read. A walk is
// given out once; Drop gives back what is held.
type Walks struct {
	mu   sync.Mutex
	held int64
	m    map[walkKey][]pieceWalk
}

// walksHeld is what every Walks of the process holds.
var walksHeld atomic.Int64

// walksBudget is what they may hold: an eighth of the Go memory limit
// (the copying commands and serve set one), at most 64 MiB, the places
// of about 1.7 million entries at 40 bytes each.
func walksBudget() int64 { return min(64<<20, debug.SetMemoryLimit(-1)/8) }

// walkKey names a key group's stored bytes.
type walkKey struct {
	file string
	at   int64
	kg   int
}

// pieceWalk is how one piece of a heap key group split, in one walk, into
// its sections and their entries.
type pieceWalk struct {
	secs []section
	recs []heapRec
}

func walkSize(w []pieceWalk) int64 {
	var n int64
	for _, p := range w {
		n += int64(len(p.recs))*int64(unsafe.Sizeof(heapRec{})) + int64(len(p.secs))*int64(unsafe.Sizeof(section{}))
	}
	return n
}

// keep holds the walk of a key group, unless that would pass the budget.
func (ws *Walks) keep(k walkKey, w []pieceWalk) {
	n := walkSize(w)
	if walksHeld.Add(n) > walksBudget() {
		walksHeld.Add(-n)
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[walkKey][]pieceWalk{}
	}
	if old, ok := ws.m[k]; ok {
		ws.release(walkSize(old))
	}
	ws.m[k] = w
	ws.held += n
}

// take gives out the walk of a key group kept, and forgets it (nil: none).
func (ws *Walks) take(k walkKey) []pieceWalk {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w, ok := ws.m[k]
	if !ok {
		return nil
	}
	delete(ws.m, k)
	ws.release(walkSize(w))
	return w
}

// Drop forgets every walk held, for a reader done with its snapshot.
func (ws *Walks) Drop() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.m = nil
	ws.release(ws.held)
}

func (ws *Walks) release(n int64) {
	ws.held -= n
	walksHeld.Add(-n)
}
