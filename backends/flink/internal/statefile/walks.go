package statefile

import (
	"sync"
	"unsafe"
)

// Walks keeps where the entries of heap key groups lie, from one read of
// them to the next. Opening a heap snapshot walks every value to tell
// which states can be read at all; the read that follows takes the
// entries' places from that walk instead of walking every value again.
// It holds at most walksHeld bytes of places: key groups past that are
// walked again when read. A walk is given out once.
type Walks struct {
	mu   sync.Mutex
	held int
	m    map[walkKey][]pieceWalk
}

// walksHeld bounds what Walks holds: 40 bytes an entry, so the places of
// about 1.7 million entries.
const walksHeld = 64 << 20

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

func walkSize(w []pieceWalk) int {
	n := 0
	for _, p := range w {
		n += len(p.recs)*int(unsafe.Sizeof(heapRec{})) + len(p.secs)*int(unsafe.Sizeof(section{}))
	}
	return n
}

// keep holds the walk of a key group, unless that would pass the bound.
func (ws *Walks) keep(k walkKey, w []pieceWalk) {
	n := walkSize(w)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.held+n > walksHeld {
		return
	}
	if ws.m == nil {
		ws.m = map[walkKey][]pieceWalk{}
	}
	if old, ok := ws.m[k]; ok {
		ws.held -= walkSize(old)
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
	ws.held -= walkSize(w)
	return w
}
