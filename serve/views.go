package serve

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"sync"
)

// errBusy refuses a request that found the views' memory taken and too
// many requests waiting for it already: 503, with Retry-After.
var errBusy = errors.New("busy: the memory for computed views is taken and other requests wait for it; try again")

// viewOverhead is what a kept view costs beside its bytes: its key, its
// entries in the map and the list.
const viewOverhead = 512

// views is the server's memory budget for computed views. An answer being
// computed holds an estimate of what computing it takes, reserved before
// it starts; an answer kept for the next requests holds its size, and the
// least recently used one that no request is writing goes first when room
// is needed. A request that finds no room waits its turn, in order; past
// maxWaiting waiting, it is refused with errBusy. Snapshots do not change
// while they are served, so nothing kept expires.
type views struct {
	limit      int64
	maxWaiting int

	mu    sync.Mutex
	used  int64
	kept  map[string]*view
	lru   *list.List // of *view, the least recently used first
	calls map[string]*call
	queue []*waiter
}

// view is one computed answer: its JSON, or the error computing it gave.
type view struct {
	key  string
	body []byte
	err  error
	size int64
	pins int // requests writing it; a pinned view is not dropped
	elem *list.Element
}

// call is a view being computed; v is set when done closes.
type call struct {
	done chan struct{}
	v    *view
}

type waiter struct {
	need    int64
	granted chan struct{}
}

func newViews(limit int64, maxWaiting int) *views {
	return &views{limit: limit, maxWaiting: maxWaiting, kept: map[string]*view{}, lru: list.New(), calls: map[string]*call{}}
}

// get returns key's view pinned, for the caller to unpin with done: the
// kept one, the one another request is computing, or one computed with
// compute after reserving estimate bytes. Only waiting is cut short by
// ctx: a computation begun goes on for the next requests.
func (vs *views) get(ctx context.Context, key string, estimate int64, compute func() ([]byte, error)) (*view, error) {
	for {
		vs.mu.Lock()
		if v := vs.kept[key]; v != nil {
			v.pins++
			vs.lru.MoveToBack(v.elem)
			vs.mu.Unlock()
			return v, nil
		}
		if c := vs.calls[key]; c != nil {
			vs.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if c.v == nil {
				continue // its computer found no room; try for ourselves
			}
			vs.mu.Lock()
			c.v.pins++
			vs.mu.Unlock()
			return c.v, nil
		}
		c := &call{done: make(chan struct{})}
		vs.calls[key] = c
		vs.mu.Unlock()
		need, err := vs.reserve(ctx, estimate)
		if err != nil {
			vs.mu.Lock()
			delete(vs.calls, key)
			vs.mu.Unlock()
			close(c.done)
			return nil, err
		}
		return vs.compute(key, c, need, compute), nil
	}
}

// compute makes key's view with fn, on need bytes reserved, and keeps it;
// the reservation becomes the view's size.
func (vs *views) compute(key string, c *call, need int64, fn func() ([]byte, error)) (v *view) {
	defer func() {
		vs.mu.Lock()
		delete(vs.calls, key)
		vs.used -= need
		if v != nil {
			vs.used += v.size
			v.elem = vs.lru.PushBack(v)
			vs.kept[key] = v
			c.v = v
		}
		vs.settleLocked()
		vs.mu.Unlock()
		close(c.done) // after a panic too: the waiting requests compute it themselves
	}()
	body, err := fn()
	v = &view{key: key, body: body, err: err, size: int64(cap(body)) + viewOverhead, pins: 1}
	if err != nil {
		v.size += int64(len(err.Error()))
	}
	return v
}

// done unpins a view get returned.
func (vs *views) done(v *view) {
	vs.mu.Lock()
	v.pins--
	vs.settleLocked()
	vs.mu.Unlock()
}

// reserve takes need bytes (at most the whole budget) for an answer being
// computed, waiting its turn for them; the caller gives back what it
// returns with release.
func (vs *views) reserve(ctx context.Context, need int64) (int64, error) {
	need = min(need, vs.limit)
	vs.mu.Lock()
	if len(vs.queue) == 0 && vs.fitLocked(need) {
		vs.used += need
		vs.mu.Unlock()
		return need, nil
	}
	if len(vs.queue) >= vs.maxWaiting {
		vs.mu.Unlock()
		return 0, errBusy
	}
	w := &waiter{need: need, granted: make(chan struct{})}
	vs.queue = append(vs.queue, w)
	vs.mu.Unlock()
	select {
	case <-w.granted:
		return need, nil
	case <-ctx.Done():
		vs.mu.Lock()
		defer vs.mu.Unlock()
		select {
		case <-w.granted:
			vs.used -= need
		default:
			vs.queue = slices.DeleteFunc(vs.queue, func(o *waiter) bool { return o == w })
		}
		vs.settleLocked()
		return 0, ctx.Err()
	}
}

func (vs *views) release(n int64) {
	vs.mu.Lock()
	vs.used -= n
	vs.settleLocked()
	vs.mu.Unlock()
}

// fitLocked drops kept views no one is writing, the least recently used
// first, until need fits; it reports whether it does.
func (vs *views) fitLocked(need int64) bool {
	for e := vs.lru.Front(); e != nil && vs.used+need > vs.limit; {
		next := e.Next()
		if v := e.Value.(*view); v.pins == 0 {
			vs.lru.Remove(e)
			delete(vs.kept, v.key)
			vs.used -= v.size
		}
		e = next
	}
	return vs.used+need <= vs.limit
}

// settleLocked grants the waiting reservations that fit, in order, and
// then brings what is kept back under the budget if it has grown past it.
func (vs *views) settleLocked() {
	for len(vs.queue) > 0 && vs.fitLocked(vs.queue[0].need) {
		w := vs.queue[0]
		vs.queue = vs.queue[1:]
		vs.used += w.need
		close(w.granted)
	}
	vs.fitLocked(0)
}
