package serve

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits bound what clients can hold of a server: connections and the time
// each may take in each step, and the memory of computed views.
type Limits struct {
	// MaxConns is the most connections open at once. Past it, a new
	// connection closes the one that has waited longest without a request
	// being answered on it (idle, or still sending its headers); when every
	// one is being answered, the new one is refused with 503.
	MaxConns int
	// ReadTimeout bounds a request, from its first byte to the end of its
	// headers. It is the whole request: the server never reads a body (a
	// connection that sends one is closed after the answer).
	ReadTimeout time.Duration
	// WriteTimeout bounds an answer, from its first byte written to its
	// last, however slowly the client reads.
	WriteTimeout time.Duration
	// IdleTimeout bounds a connection waiting for a request: a new one, or
	// one kept alive after an answer.
	IdleTimeout time.Duration
	// ViewBytes is the memory of computed views (plans, diffs, summaries,
	// pages): those being computed hold an estimate, those kept for the
	// next requests their size.
	ViewBytes int64
	// MaxWaiting is the most requests waiting for view memory; past it, a
	// request is refused with 503 and Retry-After.
	MaxWaiting int
}

// DefaultLimits are what stateutil serve runs with.
var DefaultLimits = Limits{
	MaxConns:     256,
	ReadTimeout:  10 * time.Second,
	WriteTimeout: 30 * time.Second,
	IdleTimeout:  30 * time.Second,
	ViewBytes:    96 << 20,
	MaxWaiting:   128,
}

// of is the timeout of a step; 0 for none.
func (l Limits) of(s step) time.Duration {
	switch s {
	case waiting:
		return l.IdleTimeout
	case reading:
		return l.ReadTimeout
	case writing:
		return l.WriteTimeout
	}
	return 0
}

// step is what a connection is doing, and so which timeout applies.
type step int

const (
	waiting  step = iota // for a request's first byte: IdleTimeout
	reading              // a request's headers: ReadTimeout
	handling             // a handler computes the answer: bounded by the views' budget, not by time
	writing              // the answer, from its first byte: WriteTimeout
)

// connGuard keeps a server's connections: at most MaxConns open, each
// closed when it overstays its step. Its clock is the server's; sweep is
// what closes the overstaying ones, every second while serving (tests call
// it when they move their clock).
type connGuard struct {
	limits Limits
	now    func() time.Time

	mu    sync.Mutex
	conns map[*guardedConn]struct{}
	seq   uint64 // orders steps begun at one reading of a clock that stands still
}

func newConnGuard(limits Limits, now func() time.Time) *connGuard {
	return &connGuard{limits: limits, now: now, conns: map[*guardedConn]struct{}{}}
}

// guardedConn is a connection the guard keeps; its fields but Conn and g
// are under the guard's lock.
type guardedConn struct {
	net.Conn
	g     *connGuard
	step  step
	since time.Time
	seq   uint64
	// answered is when the last answer's first byte was written: until the
	// kernel has sent all of it, the write timeout still runs.
	answered time.Time
	refused  bool // net/http refused its request itself: see Write
}

type connKey struct{}

// server is an http.Server answering with h on the guard's connections
// (listen through listener).
func (g *connGuard) server(h http.Handler) *http.Server {
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c, ok := r.Context().Value(connKey{}).(*guardedConn); ok {
				g.enter(c, handling)
			}
			h.ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, state http.ConnState) {
			gc, ok := c.(*guardedConn)
			if !ok {
				return
			}
			switch state {
			case http.StateIdle:
				g.enter(gc, waiting)
			case http.StateClosed, http.StateHijacked:
				g.forget(gc)
			}
		},
		MaxHeaderBytes: 64 << 10,
	}
}

// listener accepts through ln the connections the guard admits.
func (g *connGuard) listener(ln net.Listener) net.Listener { return &guardedListener{ln, g} }

type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// admit keeps c, making room for it by closing the connection that has
// waited longest for a request to be answered; nil when every connection
// is being answered, and c has been refused.
func (g *connGuard) admit(c net.Conn) *guardedConn {
	g.mu.Lock()
	if len(g.conns) >= g.limits.MaxConns {
		var oldest *guardedConn
		for o := range g.conns {
			if s, _ := o.stepLocked(); s <= reading && (oldest == nil || o.seq < oldest.seq) {
				oldest = o
			}
		}
		if oldest == nil {
			g.mu.Unlock()
			// A fresh connection's send buffer is empty: this small answer
			// does not wait for the client; the deadline is only a backstop.
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(rawAnswer(http.StatusServiceUnavailable,
				fmt.Sprintf("busy: %d connections are being answered; try again", g.limits.MaxConns), http.Header{"Retry-After": {"1"}}))
			_ = c.Close()
			return nil
		}
		g.closeLocked(oldest)
	}
	gc := &guardedConn{Conn: c, g: g}
	g.conns[gc] = struct{}{}
	g.enterLocked(gc, waiting)
	g.mu.Unlock()
	return gc
}

func (g *connGuard) enter(c *guardedConn, s step) {
	g.mu.Lock()
	g.enterLocked(c, s)
	g.mu.Unlock()
}

func (g *connGuard) enterLocked(c *guardedConn, s step) {
	g.seq++
	c.step, c.since, c.seq = s, g.now(), g.seq
}

func (g *connGuard) forget(c *guardedConn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

func (g *connGuard) closeLocked(c *guardedConn) {
	delete(g.conns, c)
	_ = c.Conn.Close()
}

// sweep closes every connection that has overstayed its step.
func (g *connGuard) sweep() {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		s, since := c.stepLocked()
		if limit := g.limits.of(s); limit > 0 && now.Sub(since) >= limit {
			if tc, ok := c.Conn.(*net.TCPConn); ok && s == writing {
				// Cut: what the kernel holds of the answer goes too.
				_ = tc.SetLinger(0)
			}
			g.closeLocked(c)
		}
	}
}

// stepLocked is c's step and since when, as the timeouts see it: an answer
// the handler has handed over whole may still be in the kernel, waiting
// for a client that reads slowly, and is still being written.
func (c *guardedConn) stepLocked() (step, time.Time) {
	if c.step == waiting && !c.answered.IsZero() && unsent(c.Conn) > 0 {
		return writing, c.answered
	}
	return c.step, c.since
}

// Read marks the first byte of a request.
func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.g.mu.Lock()
		if c.step == waiting {
			c.g.enterLocked(c, reading)
		}
		c.g.mu.Unlock()
	}
	return n, err
}

// Write marks the first byte of an answer. Bytes written before any
// handler runs are net/http refusing a request it could not read
// (malformed, headers too large): they are replaced by the same refusal
// as the server's own answers are made, with their headers and a JSON
// error.
func (c *guardedConn) Write(p []byte) (int, error) {
	c.g.mu.Lock()
	s := c.step
	if s == handling {
		c.g.enterLocked(c, writing)
		c.answered = c.since
	}
	refusedBefore := c.refused
	if s < handling {
		c.refused = true
	}
	c.g.mu.Unlock()
	if s >= handling {
		return c.Conn.Write(p)
	}
	if !refusedBefore {
		if _, err := c.Conn.Write(refusal(p)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// refusal is net/http's own error answer p ("HTTP/1.1 400 Bad Request:
// reason...") as the server answers errors.
func refusal(p []byte) []byte {
	status, msg := http.StatusBadRequest, "bad request"
	line, _, _ := bytes.Cut(p, []byte("\r\n"))
	if f := strings.SplitN(string(line), " ", 3); len(f) == 3 {
		if n, err := strconv.Atoi(f[1]); err == nil && n >= 400 && n < 600 {
			status, msg = n, f[2]
		}
	}
	return rawAnswer(status, msg, nil)
}

// rawAnswer is a whole HTTP/1.1 answer with the server's headers and a
// JSON error, for a connection no handler answers on; it closes the
// connection.
func rawAnswer(status int, msg string, extra http.Header) []byte {
	body, _ := encode(apiError{Error: msg})
	h := http.Header{}
	setSecurityHeaders(h)
	for k, v := range extra {
		h[k] = v
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}
