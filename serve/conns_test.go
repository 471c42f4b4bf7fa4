package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/runtime/runtimetest"
)

func newClock() *runtimetest.ManualClock {
	return runtimetest.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

var testLimits = Limits{MaxConns: 4, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, ViewBytes: 1 << 20, MaxWaiting: 2}

// guarded serves h on loopback behind a guard with the test's clock.
func guarded(t *testing.T, limits Limits, clk *runtimetest.ManualClock, h http.Handler) (*connGuard, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newConnGuard(limits, clk.Now)
	hs := g.server(h)
	go func() { _ = hs.Serve(g.listener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	return g, ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// steps are the steps of the guard's connections, oldest first.
func steps(g *connGuard) []step {
	g.mu.Lock()
	defer g.mu.Unlock()
	var conns []*guardedConn
	for c := range g.conns {
		conns = append(conns, c)
	}
	var out []step
	for len(conns) > 0 {
		oldest := 0
		for i, c := range conns {
			if c.seq < conns[oldest].seq {
				oldest = i
			}
		}
		out = append(out, conns[oldest].step)
		conns = append(conns[:oldest], conns[oldest+1:]...)
	}
	return out
}

// await waits until the guard's connections are in the steps want: what
// the client did reaches the server in its own time, and the test waits
// for it, never for a time.
func await(t *testing.T, g *connGuard, want ...step) {
	t.Helper()
	for !slices.Equal(steps(g), want) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// expire checks that the one connection, in step s, is kept until limit
// has passed on the clock, and closed when it has.
func expire(t *testing.T, g *connGuard, clk *runtimetest.ManualClock, s step, limit time.Duration) {
	t.Helper()
	await(t, g, s)
	clk.Advance(limit - time.Nanosecond)
	g.sweep()
	if got := steps(g); !slices.Equal(got, []step{s}) {
		t.Fatalf("before its %v: steps %v, want [%v]", limit, got, s)
	}
	clk.Advance(time.Nanosecond)
	g.sweep()
	if got := steps(g); len(got) != 0 {
		t.Fatalf("after its %v: steps %v, want it closed", limit, got)
	}
}

// closedByServer reads c to its end: the test's own deadline bounds it.
func closedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading to the end: %v", err)
	}
}

func get(t *testing.T, c net.Conn, r *bufio.Reader, path string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatal(err)
	}
	return res
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// A kept-alive connection is closed once idle for IdleTimeout, not before.
func TestServeGuardClosesIdleConnection(t *testing.T) {
	clk := newClock()
	g, addr := guarded(t, testLimits, clk, ok)
	c := dial(t, addr)
	r := bufio.NewReader(c)
	get(t, c, r, "/")
	await(t, g, waiting)
	clk.Advance(testLimits.IdleTimeout - time.Nanosecond)
	g.sweep()
	// Still open: a request in time is answered, and the wait starts over.
	if res := get(t, c, r, "/"); res.StatusCode != http.StatusOK {
		t.Fatalf("GET just before the idle timeout: %d", res.StatusCode)
	}
	expire(t, g, clk, waiting, testLimits.IdleTimeout)
	closedByServer(t, c)
}

// A connection that never sends a request is idle too.
func TestServeGuardClosesSilentConnection(t *testing.T) {
	clk := newClock()
	g, addr := guarded(t, testLimits, clk, ok)
	c := dial(t, addr)
	expire(t, g, clk, waiting, testLimits.IdleTimeout)
	closedByServer(t, c)
}

// Headers that trickle in are cut ReadTimeout after their first byte.
func TestServeGuardCutsSlowRequest(t *testing.T) {
	clk := newClock()
	g, addr := guarded(t, testLimits, clk, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a request that never ended reached the handler")
	}))
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	expire(t, g, clk, reading, testLimits.ReadTimeout)
	closedByServer(t, c)
}

// A client that does not read its answer is cut WriteTimeout after the
// answer's first byte, and the handler's write fails; computing the
// answer has no time limit of the connection's.
func TestServeGuardCutsSlowReader(t *testing.T) {
	clk := newClock()
	compute := make(chan struct{})
	written := make(chan error, 1)
	g, addr := guarded(t, testLimits, clk, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-compute
		_, err := w.Write(bytes.Repeat([]byte("x"), 64<<20))
		written <- err
	}))
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	await(t, g, handling)
	clk.Advance(time.Hour)
	g.sweep()
	await(t, g, handling)
	close(compute)
	expire(t, g, clk, writing, testLimits.WriteTimeout)
	if err := <-written; err == nil {
		t.Error("the answer was written whole to a client that read none of it")
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	if n >= 64<<20 {
		t.Errorf("read %d bytes: the whole answer", n)
	}
}

// An answer the handler handed over whole, but that the kernel still
// holds for a client that does not read, is cut as well.
func TestServeGuardCutsSlowReaderOfHandedOverAnswer(t *testing.T) {
	clk := newClock()
	const size = 1 << 20
	g, addr := guarded(t, testLimits, clk, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), size))
	}))
	c := dial(t, addr)
	if err := c.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Written, whether the handler still writes or has handed it all over.
	for s := steps(g); len(s) != 1 || s[0] != writing && (s[0] != waiting || !answered(g)); s = steps(g) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	clk.Advance(testLimits.WriteTimeout)
	g.sweep()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return // cut before the headers came through: cut all the same
	}
	n, _ := io.Copy(io.Discard, res.Body)
	if n >= size {
		t.Errorf("read all %d bytes of an answer cut at the write timeout", n)
	}
}

// answered reports whether the one connection has written an answer.
func answered(g *connGuard) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		return !c.answered.IsZero()
	}
	return false
}

// Past MaxConns, a new connection closes the one idle longest; when every
// one is being answered, the new one is refused with 503 and the
// server's headers.
func TestServeGuardCapsConnections(t *testing.T) {
	clk := newClock()
	release := make(chan struct{})
	g, addr := guarded(t, testLimits, clk, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	var idle []net.Conn
	for range testLimits.MaxConns {
		idle = append(idle, dial(t, addr))
		await(t, g, make([]step, len(idle))...)
	}
	for i := range 3 * testLimits.MaxConns {
		c := dial(t, addr)
		closedByServer(t, idle[0])
		idle = append(idle[1:], c)
		if i%2 == 0 {
			r := bufio.NewReader(c)
			if res := get(t, c, r, "/"); res.StatusCode != http.StatusOK {
				t.Fatalf("a connection admitted in place of an idle one: %d", res.StatusCode)
			}
			// Idle again after its answer: now the most recent.
			await(t, g, make([]step, testLimits.MaxConns)...)
		}
		if n := len(steps(g)); n > testLimits.MaxConns {
			t.Fatalf("%d connections kept, more than %d", n, testLimits.MaxConns)
		}
	}
	for _, c := range idle {
		c.Close()
	}
	await(t, g)
	var busy []net.Conn
	for range testLimits.MaxConns {
		c := dial(t, addr)
		if _, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
	}
	await(t, g, handling, handling, handling, handling)
	c := dial(t, addr)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRefusal(t, "past MaxConns", res, http.StatusServiceUnavailable)
	if res.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	close(release)
	for _, c := range busy {
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("a request answered once the others were: %v %v", res, err)
		}
	}
}

// checkRefusal checks an error answer: its status, the server's headers,
// a JSON error.
func checkRefusal(t *testing.T, what string, res *http.Response, status int) {
	t.Helper()
	body, _ := io.ReadAll(res.Body)
	var e apiError
	if res.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Error == "" {
		t.Errorf("%s: %d %q, want %d with a JSON error", what, res.StatusCode, body, status)
	}
	if got := res.Header.Get("Content-Security-Policy"); got != contentSecurityPolicy {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: headers %v", what, res.Header)
	}
}

// The requests net/http refuses itself, before any handler, are answered
// as the server's own errors are: its headers, a JSON error.
func TestServeGuardAnswersNetHTTPRefusals(t *testing.T) {
	clk := newClock()
	_, addr := guarded(t, testLimits, clk, ok)
	for _, tc := range []struct {
		what, request string
		status        int
	}{
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"a malformed request line", "NONSENSE\r\n\r\n", 400},
		{"a malformed header", "GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", 400},
		{"headers too large", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 80<<10) + "\r\n\r\n", 431},
		{"an unknown transfer encoding", "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: zip\r\n\r\n", 501},
		{"an unknown expectation", "GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", 417},
	} {
		c := dial(t, addr)
		if _, err := io.WriteString(c, tc.request); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		checkRefusal(t, tc.what, res, tc.status)
	}
}
