// Command servetrials tries a running stateutil serve as a hostile web page
// and careless clients would, and prints the counts: a flood of distinct
// expensive requests from another origin (refused) and from the server's
// own (served within the memory budget), hundreds of idle connections, a
// client that reads an answer too slowly, token guessing, and the headers
// of every answer. scripts/hostile-trials-serve.sh starts the servers and
// runs it; it exits 1 when a bound does not hold.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stateutil/stateutil/serve"
)

// rssBound is the serving process's peak resident memory allowed.
const rssBound = 256 << 20

func main() {
	open := flag.String("url", "", "base URL of a server without a token, serving the example snapshot as 0")
	pid := flag.Int("pid", 0, "that server's process id: its peak RSS and open files are read from /proc")
	locked := flag.String("locked-url", "", "base URL of a server that requires -token")
	token := flag.String("token", "", "the locked server's token")
	flood := flag.Int("flood", 1000, "distinct expensive requests of each flood")
	idle := flag.Int("idle", 800, "idle connections")
	guesses := flag.Int("guesses", 1000, "wrong tokens guessed")
	flag.Parse()
	if *open == "" || *pid == 0 || *locked == "" || *token == "" {
		flag.Usage()
		os.Exit(2)
	}
	t := &trials{open: *open, locked: *locked, pid: *pid, client: &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: 32},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	var slow slowResult
	var wg sync.WaitGroup
	// The slow reader takes the write timeout; the rest runs meanwhile.
	wg.Go(func() { slow = t.slowReader() })
	crossRefused, crossServed := t.crossSiteFlood(*flood)
	served, busy := t.distinctPlans(*flood)
	idleRes := t.idleConnections(*idle)
	checked, unchecked, accepted, bound := t.guessTokens(*token, *guesses)
	kindsOK, kinds := t.everyKind(*token)
	wg.Wait()
	peak, _ := procStatus(t.pid, "VmHWM")

	fmt.Printf("cross-site flood: %d distinct expensive requests, %d refused (403), %d served\n", *flood, crossRefused, crossServed)
	fmt.Printf("same-origin flood: %d distinct expensive requests, %d served, %d busy (503 with Retry-After)\n", *flood, served, busy)
	fmt.Printf("idle connections: %d opened, %d closed at once, %d kept (server's open files %d, %d before), %d still open after the idle timeout\n",
		*idle, idleRes.closedAtOnce, *idle-idleRes.closedAtOnce, idleRes.fds, idleRes.fdsBefore, idleRes.survivors)
	fmt.Printf("slow reader of /assets/app.js: %s\n", slow)
	fmt.Printf("token guessing: %d wrong tokens, %d checked (401), %d refused unchecked (429), %d accepted; at most %d may be checked\n",
		*guesses, checked, unchecked, accepted, bound)
	fmt.Printf("answers: %d of %d kinds as expected, %d answers in all, %d without Content-Security-Policy or nosniff\n", kindsOK, kinds, t.answers.Load(), t.unsafe.Load())
	fmt.Printf("peak RSS: %d MiB (bound %d MiB)\n", peak>>20, rssBound>>20)

	var failed []string
	check := func(ok bool, what string) {
		if !ok {
			failed = append(failed, what)
		}
	}
	check(crossServed == 0, "a cross-site request was served")
	check(served+busy == int64(*flood), "a same-origin request failed otherwise than busy")
	check(idleRes.fds <= idleRes.fdsBefore+serve.DefaultLimits.MaxConns+8, "idle connections held more files than the connection cap")
	check(idleRes.survivors == 0, "idle connections outlived the idle timeout")
	check(idleRes.servedMeanwhile, "a request was not served while idle connections were open")
	check(slow.cut, "the slow reader was not cut by the write timeout")
	check(accepted == 0 && checked <= bound, "token guesses beyond the limit were checked")
	check(t.unsafe.Load() == 0, "answers without the security headers")
	check(kindsOK == kinds, "an answer of an unexpected status")
	check(peak > 0 && peak < rssBound, "peak RSS over the bound")
	if len(failed) > 0 {
		fmt.Printf("FAILED: %s\n", strings.Join(failed, "; "))
		os.Exit(1)
	}
	fmt.Println("every bound held")
}

type trials struct {
	open, locked string
	pid          int
	client       *http.Client
	answers      atomic.Int64
	unsafe       atomic.Int64
}

// get asks for path with headers, reads the answer whole, and counts it.
func (t *trials) get(base, method, path string, headers map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	t.count(res.Header)
	return res, err
}

func (t *trials) count(h http.Header) {
	t.answers.Add(1)
	if !strings.HasPrefix(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("X-Content-Type-Options") != "nosniff" {
		t.unsafe.Add(1)
	}
}

// parallel runs fn(0..n-1) on workers goroutines.
func parallel(n, workers int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// planPath is the i-th of distinct rescale plans to the most key groups
// Flink allows, each of thousands of new subtasks.
func planPath(i, n int) string {
	return fmt.Sprintf("/api/snapshots/0/plan?parallelism=%d&max-parallelism=32768", 32768-i*(32768-1024)/n)
}

// crossSiteFlood is a page of another origin embedding distinct
// expensive requests, as <img> tags would: some with Sec-Fetch-Site, some
// with an Origin of another local port.
func (t *trials) crossSiteFlood(n int) (refused, served int64) {
	var r, s atomic.Int64
	parallel(n, 16, func(i int) {
		headers := map[string]string{"Sec-Fetch-Site": "cross-site"}
		switch i % 3 {
		case 1:
			headers = map[string]string{"Sec-Fetch-Site": "same-site"}
		case 2:
			headers = map[string]string{"Origin": "http://localhost:1"}
		}
		res, err := t.get(t.open, "GET", planPath(i, n), headers)
		switch {
		case err == nil && res.StatusCode == http.StatusForbidden:
			r.Add(1)
		default:
			s.Add(1)
		}
	})
	return r.Load(), s.Load()
}

// distinctPlans asks the server's own way for distinct expensive views.
func (t *trials) distinctPlans(n int) (served, busy int64) {
	var s, b atomic.Int64
	parallel(n, 16, func(i int) {
		res, err := t.get(t.open, "GET", planPath(i, n), nil)
		switch {
		case err != nil:
		case res.StatusCode == http.StatusOK:
			s.Add(1)
		case res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "":
			b.Add(1)
		}
	})
	return s.Load(), b.Load()
}

type idleResult struct {
	closedAtOnce, survivors int
	fdsBefore, fds          int
	servedMeanwhile         bool
}

// idleConnections opens n connections that send nothing: past the cap,
// the server closes the idle ones; the rest go at the idle timeout.
func (t *trials) idleConnections(n int) idleResult {
	var res idleResult
	res.fdsBefore = openFiles(t.pid)
	addr := strings.TrimPrefix(t.open, "http://")
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dial: %v\n", err)
			break
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The server accepts them in its own time: the last one admitted is
	// the one a request can be answered on.
	last := conns[len(conns)-1]
	if _, err := io.WriteString(last, "GET /api/snapshots HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err == nil {
		if r, err := http.ReadResponse(bufio.NewReader(last), nil); err == nil {
			t.count(r.Header)
			r.Body.Close()
			res.servedMeanwhile = r.StatusCode == http.StatusOK
		}
	}
	res.fds = openFiles(t.pid)
	open := conns[:0]
	for _, c := range conns {
		if closed(c, 50*time.Millisecond) {
			res.closedAtOnce++
		} else {
			open = append(open, c)
		}
	}
	deadline := time.Now().Add(serve.DefaultLimits.IdleTimeout + 5*time.Second)
	for _, c := range open {
		if !closed(c, time.Until(deadline)) {
			res.survivors++
		}
	}
	return res
}

// closed reports whether the server closed c within wait.
func closed(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(max(wait, time.Millisecond)))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

type slowResult struct {
	read, size int64
	cut        bool
}

func (r slowResult) String() string {
	verdict := "served in full"
	if r.cut {
		verdict = "cut"
	}
	return fmt.Sprintf("%s: %d KiB of %d KiB read, a few hundred bytes a second for %v, then as fast as they came (write timeout %v)",
		verdict, r.read>>10, r.size>>10, serve.DefaultLimits.WriteTimeout+5*time.Second, serve.DefaultLimits.WriteTimeout)
}

// slowReader reads the UI's script a few hundred bytes a second.
func (t *trials) slowReader() slowResult {
	addr := strings.TrimPrefix(t.open, "http://")
	// A small receive buffer from the start: what the client has not read
	// stays with the server, as over a slow network.
	d := net.Dialer{Control: func(_, _ string, raw syscall.RawConn) error {
		return raw.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return slowResult{}
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, "GET /assets/app.js HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		return slowResult{}
	}
	br := bufio.NewReaderSize(c, 512)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return slowResult{}
	}
	t.count(res.Header)
	r := slowResult{size: res.ContentLength}
	// Slowly until past the write timeout, then as fast as it comes: what
	// arrives whole was not cut.
	buf := make([]byte, 256)
	fast := serve.DefaultLimits.WriteTimeout + 5*time.Second
	for {
		n, err := res.Body.Read(buf)
		r.read += int64(n)
		if err != nil {
			break
		}
		if time.Since(start) < fast {
			time.Sleep(time.Second)
		}
	}
	r.cut = r.read < r.size
	return r
}

// guessTokens sends wrong tokens as fast as it can: the server checks a
// burst of them, then one a second.
func (t *trials) guessTokens(token string, n int) (checked, unchecked, accepted, bound int64) {
	var c, u, a atomic.Int64
	start := time.Now()
	parallel(n, 8, func(i int) {
		guess := fmt.Sprintf("%064x", i)
		if guess == token {
			guess = "0" + guess
		}
		path, headers := "/api/snapshots", map[string]string{"Authorization": "Bearer " + guess}
		if i%4 == 0 {
			path, headers = "/login?code="+guess[:32], nil
		}
		res, err := t.get(t.locked, "GET", path, headers)
		switch {
		case err != nil:
		case res.StatusCode == http.StatusUnauthorized:
			c.Add(1)
		case res.StatusCode == http.StatusTooManyRequests:
			u.Add(1)
		default:
			a.Add(1)
		}
	})
	return c.Load(), u.Load(), a.Load(), 10 + int64(time.Since(start)/time.Second) + 1
}

// everyKind asks for an answer of every kind, errors too: how many kinds
// answered as expected, of how many.
func (t *trials) everyKind(token string) (int, int) {
	auth := map[string]string{"Authorization": "Bearer " + token}
	kinds := []struct {
		base, method, path string
		headers            map[string]string
		status             int
	}{
		{t.open, "GET", "/", nil, 200},
		{t.open, "HEAD", "/", nil, 200},
		{t.open, "GET", "/assets/app.js", nil, 200},
		{t.open, "GET", "/assets/app.css", nil, 200},
		{t.open, "GET", "/assets/json-formatter.css", nil, 200},
		{t.open, "GET", "/api/snapshots", nil, 200},
		{t.open, "GET", "/api/snapshots/0/key-groups", nil, 200},
		{t.open, "GET", "/api/snapshots/0/entries?operator=word-counter&state=count", nil, 200},
		{t.open, "GET", "/api/snapshots/7", nil, 400},
		{t.open, "GET", "/api/snapshots/0/get?operator=word-counter&state=count&key=nope", nil, 404},
		{t.open, "GET", "/api/nope", nil, 404},
		{t.open, "GET", "/nope", nil, 404},
		{t.open, "GET", "/assets/nope.js", nil, 404},
		{t.open, "POST", "/api/snapshots", nil, 405},
		{t.open, "GET", "/", map[string]string{"Host": "evil.example"}, 421},
		{t.open, "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{t.locked, "GET", "/", nil, 401},
		{t.locked, "GET", "/", auth, 0}, // 200, or 429 right after the guessing
	}
	n := 0
	for _, k := range kinds {
		res, err := t.get(k.base, k.method, k.path, k.headers)
		if err == nil && (res.StatusCode == k.status || k.status == 0) {
			n++
		} else {
			fmt.Fprintf(os.Stderr, "%s %s: %v %v, want %d\n", k.method, k.path, res, err, k.status)
		}
	}
	addr := strings.TrimPrefix(t.open, "http://")
	raws := []string{"NONSENSE\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 80<<10) + "\r\n\r\n"}
	for _, raw := range raws {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			continue
		}
		if _, err := io.WriteString(c, raw); err == nil {
			if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				t.count(res.Header)
				if res.StatusCode >= 400 {
					n++
				}
			}
		}
		c.Close()
	}
	return n, len(kinds) + len(raws)
}

// procStatus reads a figure in bytes from /proc/PID/status.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

func openFiles(pid int) int {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(entries)
}
