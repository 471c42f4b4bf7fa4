package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/runtime/runtimetest"
	"github.com/stateutil/stateutil/serve"
)

func newTestClock() *runtimetest.ManualClock {
	return runtimetest.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// request sends GET path with headers and returns the answer, its body read.
func request(t *testing.T, hs *testServer, method, path string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, hs.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// A page of another origin cannot make a browser spend the server's work:
// what Sec-Fetch-Site or Origin says of it is refused (403) before any,
// token or not; the server's own pages, and a person typing an address,
// are served.
func TestServeRefusesOtherOrigins(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	open, locked := startServer(t, "", example), startServer(t, token, example)
	self := "http://" + strings.TrimPrefix(open.URL, "http://")
	for _, tc := range []struct {
		headers map[string]string
		want    int
	}{
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{map[string]string{"Origin": "http://localhost:9999"}, 403},
		{map[string]string{"Origin": "http://127.0.0.1:9999"}, 403},
		{map[string]string{"Origin": "null"}, 403},
		{map[string]string{"Origin": "http://" + strings.TrimPrefix(self, "http://") + ".evil.example"}, 403},
		{map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, 403},
		{map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": self}, 200},
		{map[string]string{"Sec-Fetch-Site": "none"}, 200},
		{map[string]string{}, 200},
	} {
		for _, path := range []string{"/api/snapshots/0/plan?parallelism=3&max-parallelism=4096", "/api/snapshots", "/", "/assets/app.js"} {
			res, body := request(t, open, http.MethodGet, path, tc.headers)
			if res.StatusCode != tc.want {
				t.Errorf("GET %s with %v: %d %.200s, want %d", path, tc.headers, res.StatusCode, body, tc.want)
			}
			if tc.want == 403 {
				checkError(t, fmt.Sprintf("GET %s with %v", path, tc.headers), res, body)
			}
		}
		if tc.want == 403 && tc.headers["Sec-Fetch-Site"] != "" {
			// Following a link from another site opens the UI's page (and the
			// login URL), and nothing else.
			navigate := map[string]string{"Sec-Fetch-Site": tc.headers["Sec-Fetch-Site"], "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
			for path, want := range map[string]int{"/": 200, "/api/snapshots/0/plan?parallelism=4&max-parallelism=4096": 403, "/api/snapshots": 403, "/assets/app.js": 403} {
				if res, _ := request(t, open, http.MethodGet, path, navigate); res.StatusCode != want {
					t.Errorf("a link from another site to %s: %d, want %d", path, res.StatusCode, want)
				}
			}
		}
		if tc.want == 403 {
			headers := map[string]string{"Authorization": "Bearer " + token}
			for k, v := range tc.headers {
				headers[k] = strings.Replace(v, strings.TrimPrefix(open.URL, "http://"), strings.TrimPrefix(locked.URL, "http://"), 1)
			}
			if res, body := request(t, locked, http.MethodGet, "/api/snapshots", headers); res.StatusCode != 403 {
				t.Errorf("with the token and %v: %d %s, want 403", headers, res.StatusCode, body)
			}
		}
	}
}

// checkError checks an error answer: a JSON error, as the README says.
func checkError(t *testing.T, what string, res *http.Response, body []byte) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if res.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil || e.Error == "" {
		t.Errorf("%s: %d %s %q: want a JSON error", what, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

// checkPolicy checks the headers every answer carries.
func checkPolicy(t *testing.T, what string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'; script-src 'self';") || !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("%s: Content-Security-Policy %q", what, csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, h.Get("X-Content-Type-Options"))
	}
}

// Every kind of answer carries the policy and nosniff: pages, assets,
// JSON, and every error, those net/http gives before any handler too;
// every error is the API's JSON error.
func TestServeHeadersOnEveryAnswer(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	damaged := "../testdata/memory/bad-checksum.dump"
	open := startServer(t, "", example, damaged)
	clk := newTestClock()
	locked := startServerWith(t, &serveOptions{token: tokenFlag{value: token}, now: clk.Now}, example)
	type answer struct {
		hs      *testServer
		method  string
		path    string
		headers map[string]string
		status  int
	}
	auth := map[string]string{"Authorization": "Bearer " + token}
	kinds := map[string]answer{
		"index":              {open, "GET", "/", nil, 200},
		"HEAD index":         {open, "HEAD", "/", nil, 200},
		"script":             {open, "GET", "/assets/app.js", nil, 200},
		"styles":             {open, "GET", "/assets/app.css", nil, 200},
		"tree styles":        {open, "GET", "/assets/json-formatter.css", nil, 200},
		"JSON":               {open, "GET", "/api/snapshots", nil, 200},
		"bad parameter":      {open, "GET", "/api/snapshots/7", nil, 400},
		"missing key":        {open, "GET", "/api/snapshots/0/get?operator=word-counter&state=count&key=nope", nil, 404},
		"unknown endpoint":   {open, "GET", "/api/nope", nil, 404},
		"unknown page":       {open, "GET", "/nope", nil, 404},
		"unknown asset":      {open, "GET", "/assets/nope.js", nil, 404},
		"asset folder":       {open, "GET", "/assets/", nil, 404},
		"damaged snapshot":   {open, "GET", "/api/snapshots/1", nil, 422},
		"POST":               {open, "POST", "/api/snapshots", nil, 405},
		"DELETE":             {open, "DELETE", "/", nil, 405},
		"foreign host":       {open, "GET", "/", map[string]string{"Host": "evil.example"}, 421},
		"other origin":       {open, "GET", "/", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		"login without one":  {open, "GET", "/login?code=x", nil, 404},
		"no token":           {locked, "GET", "/", nil, 401},
		"with the token":     {locked, "GET", "/api/snapshots", auth, 200},
		"login":              {locked, "GET", "/login?code=CODE", nil, 303},
		"wrong login":        {locked, "GET", "/login?code=nope", nil, 401},
		"wrong token":        {locked, "GET", "/", map[string]string{"Authorization": "Bearer nope"}, 401},
		"too many attempts":  {locked, "GET", "/", auth, 429},
		"locked, wrong page": {locked, "GET", "/nope", auth, 404},
	}
	// The locked server's answers in an order that spends its limit of
	// wrong tokens last.
	order := []string{"with the token", "locked, wrong page", "login", "wrong login", "wrong token", "no token", "too many attempts"}
	for name, a := range kinds {
		if a.hs == open {
			order = append(order, name)
		}
	}
	for _, name := range order {
		a := kinds[name]
		if name == "login" {
			login, err := locked.srv.OneTimeURL(locked.URL)
			if err != nil {
				t.Fatal(err)
			}
			a.path = strings.TrimPrefix(login, locked.URL)
		}
		if name == "too many attempts" {
			for range 9 {
				request(t, locked, "GET", "/", map[string]string{"Authorization": "Bearer nope"})
			}
		}
		res, body := request(t, a.hs, a.method, a.path, a.headers)
		if res.StatusCode != a.status {
			t.Errorf("%s: %s %s: %d %.200s, want %d", name, a.method, a.path, res.StatusCode, body, a.status)
		}
		checkPolicy(t, name, res.Header)
		if res.StatusCode >= 400 && a.method != "HEAD" {
			checkError(t, name, res, body)
		}
		switch res.StatusCode {
		case 401:
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", name)
			}
		case 405:
			if res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s: 405 with Allow %q", name, res.Header.Get("Allow"))
			}
		case 429:
			if res.Header.Get("Retry-After") == "" {
				t.Errorf("%s: 429 without Retry-After", name)
			}
		}
	}
	for name, raw := range map[string]string{
		"request without Host": "GET / HTTP/1.1\r\n\r\n",
		"malformed request":    "NONSENSE\r\n\r\n",
		"headers too large":    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("b", 80<<10) + "\r\n\r\n",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(open.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, _ := io.ReadAll(res.Body)
		c.Close()
		checkPolicy(t, name, res.Header)
		checkError(t, name, res, body)
	}
}

// After 10 wrong tokens no token is checked, the right one neither (429,
// Retry-After), until the clock gives one more attempt a second.
func TestServeLimitsWrongTokens(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	clk := newTestClock()
	hs := startServerWith(t, &serveOptions{token: tokenFlag{value: token}, now: clk.Now}, example)
	try := func(tok string) int {
		res, _ := request(t, hs, "GET", "/api/snapshots", map[string]string{"Authorization": "Bearer " + tok})
		if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "1" {
			t.Errorf("429 with Retry-After %q, want 1", res.Header.Get("Retry-After"))
		}
		return res.StatusCode
	}
	for i := range 10 {
		if got := try(fmt.Sprintf("guess-%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, got)
		}
	}
	if got := try("guess-10"); got != http.StatusTooManyRequests {
		t.Errorf("the 11th wrong token: %d, want 429", got)
	}
	if got := try(token); got != http.StatusTooManyRequests {
		t.Errorf("the right token while the limit is spent: %d, want 429 (it is not checked)", got)
	}
	if res, _ := request(t, hs, "GET", "/login?code=guess", nil); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a login code while the limit is spent: %d, want 429", res.StatusCode)
	}
	clk.Advance(time.Second)
	if got := try(token); got != http.StatusOK {
		t.Errorf("the right token a second later: %d, want 200", got)
	}
	if got := try("guess-11"); got != http.StatusUnauthorized {
		t.Errorf("a wrong token a second later: %d, want 401", got)
	}
	if got := try(token); got != http.StatusTooManyRequests {
		t.Errorf("the right token after that: %d, want 429", got)
	}
	clk.Advance(time.Hour)
	for i := range 10 {
		if got := try(fmt.Sprintf("again-%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("an hour later, wrong token %d: %d, want 401: the limit refills to 10", i+1, got)
		}
	}
}

// Computed views share a memory budget. A client that does not read a
// big answer holds it; the requests after it wait, up to MaxWaiting, and
// the next one gets 503 with Retry-After (a request from another origin
// is still refused first); once the big answer is let go, the waiting
// ones are answered.
func TestServeViewBudget(t *testing.T) {
	limits := serve.DefaultLimits
	limits.ViewBytes, limits.MaxWaiting = 8<<20, 2
	clk := newTestClock()
	hs := startServerWith(t, &serveOptions{limits: limits, now: clk.Now}, example)

	slow, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /api/snapshots/0/plan?parallelism=32768&max-parallelism=32768 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil || res.StatusCode != http.StatusOK || res.ContentLength < 2*limits.ViewBytes {
		t.Fatalf("the big plan: %v %v, want 200 with more than twice the budget", res, err)
	}

	type result struct {
		status     int
		retryAfter string
	}
	results := make(chan result, limits.MaxWaiting+1)
	for p := range limits.MaxWaiting + 1 {
		go func() {
			res, _ := request(t, hs, "GET", fmt.Sprintf("/api/snapshots/0/plan?parallelism=%d", p+2), nil)
			results <- result{res.StatusCode, res.Header.Get("Retry-After")}
		}()
	}
	if r := <-results; r.status != http.StatusServiceUnavailable || r.retryAfter == "" {
		t.Fatalf("the first answer while the budget is held: %d, Retry-After %q; want 503 with Retry-After", r.status, r.retryAfter)
	}
	if res, body := request(t, hs, "GET", "/api/snapshots/0/plan?parallelism=9", map[string]string{"Sec-Fetch-Site": "cross-site"}); res.StatusCode != http.StatusForbidden {
		t.Errorf("from another origin while the budget is held: %d %s, want 403", res.StatusCode, body)
	}
	select {
	case r := <-results:
		t.Fatalf("a request was answered (%d) while the budget was held and it waited", r.status)
	default:
	}
	slow.Close()
	for range limits.MaxWaiting {
		if r := <-results; r.status != http.StatusOK {
			t.Errorf("a waiting request once the big answer went: %d, want 200", r.status)
		}
	}
}

// readToEnd reads what the server sends on c until it closes c. The
// minute is no measure: the server closes at once, and a server that
// never does fails here rather than hangs.
func readToEnd(t *testing.T, what string, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("%s: not closed by the server: %v", what, err)
	}
}

// Connections beyond the cap close the idle ones, oldest first, and a
// request is still answered; an idle connection is closed once the
// server's clock has passed the idle timeout.
func TestServeKeepsConnectionsBounded(t *testing.T) {
	limits := serve.DefaultLimits
	limits.MaxConns = 4
	clk := newTestClock()
	hs := startServerWith(t, &serveOptions{limits: limits, now: clk.Now}, example)
	addr := strings.TrimPrefix(hs.URL, "http://")
	var conns []net.Conn
	for range 3 * limits.MaxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns[:2*limits.MaxConns] {
		readToEnd(t, fmt.Sprintf("idle connection %d of %d, past the cap of %d", i+1, len(conns), limits.MaxConns), c)
	}
	if status, body := apiGet(t, hs, "/api/snapshots"); status != http.StatusOK {
		t.Fatalf("a request among idle connections: %d %s", status, body)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /api/snapshots HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", res, err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatal(err)
	}
	// The server's sweep runs every second of real time, on the test's
	// clock; the connection turns idle in the server's own time after its
	// answer. Each round moves the clock past the idle timeout again.
	for round := 0; ; round++ {
		clk.Advance(limits.IdleTimeout)
		if err := c.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			break // closed
		}
		if round == 20 {
			t.Fatal("a connection idle past the idle timeout was not closed")
		}
	}
}

// A token comes from --token alone (made up, printed), --token=TOKEN,
// --token-file or $STATEUTIL_SERVE_TOKEN; the server then requires it.
func TestServeTokenSources(t *testing.T) {
	const token = "fedcba9876543210fedcba9876543210"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string // "": the printed one
	}{
		{"made up", []string{"--token"}, "", ""},
		{"given", []string{"--token=" + token}, "", token},
		{"file", []string{"--token-file", file}, "", token},
		{"environment", nil, token, token},
		{"flag over environment", []string{"--token-file", file}, "other-0123456789abcdefghijkl", token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenEnv, tc.env)
			out, stop := startCommand(t, append([]string{"serve", example, "--listen", "127.0.0.1:0"}, tc.args...)...)
			defer stop()
			base := regexp.MustCompile(`serving 1 snapshot\(s\) at (\S+)`).FindStringSubmatch(out.next(t))
			if base == nil {
				t.Fatal("no address printed")
			}
			want := tc.want
			line := out.next(t)
			if want == "" {
				tok, ok := strings.CutPrefix(line, "token (made up at start): ")
				if !ok || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
					t.Fatalf("printed %q, want a token of 32 random bytes in hex", line)
				}
				want, line = tok, out.next(t)
			}
			if !strings.HasPrefix(line, "open this once to log in a browser: "+base[1]+"/login?code=") {
				t.Errorf("printed %q, want the login URL", line)
			}
			hs := &testServer{URL: base[1], client: http.DefaultClient}
			if res, _ := request(t, hs, "GET", "/api/snapshots", nil); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("without the token: %d, want 401", res.StatusCode)
			}
			if res, _ := request(t, hs, "GET", "/api/snapshots", map[string]string{"Authorization": "Bearer " + want}); res.StatusCode != http.StatusOK {
				t.Errorf("with the token: %d, want 200", res.StatusCode)
			}
		})
	}
}

// lines reads what a command prints, a line at a time.
type lines struct{ sc *bufio.Scanner }

func (l *lines) next(t *testing.T) string {
	t.Helper()
	if !l.sc.Scan() {
		t.Fatalf("the command printed no more: %v", l.sc.Err())
	}
	return l.sc.Text()
}

// startCommand runs stateutil with args until stop, which checks that
// it then exits 0.
func startCommand(t *testing.T, args ...string) (*lines, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	var errOut strings.Builder
	exited := make(chan int, 1)
	go func() {
		code := Run(ctx, args, w, &errOut)
		w.Close()
		exited <- code
	}()
	return &lines{bufio.NewScanner(r)}, func() {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, r) }()
		if code := <-exited; code != ExitOK {
			t.Errorf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
	}
}

// Tokens too easy to guess, blank or from nowhere are refused (exit 1),
// before anything listens.
func TestGoldenServeTokens(t *testing.T) {
	dir := t.TempDir()
	short, big := filepath.Join(dir, "short"), filepath.Join(dir, "big")
	if err := os.WriteFile(short, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(strings.Repeat("0123456789abcdef", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hide := strings.NewReplacer(dir, "DIR").Replace
	for name, tc := range map[string]struct {
		args []string
		env  string
	}{
		"serve-token-value-apart": {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token", "a"}},
		"serve-token-short":       {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token=a"}},
		"serve-token-blank":       {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token= "}},
		"serve-token-empty":       {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token="}},
		"serve-token-plain":       {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token=aaaaaaaaaabbbbbbbbbbcccccccccc"}},
		"serve-token-odd-char":    {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token=0123456789abcdef 0123456789abcdef"}},
		"serve-token-env-short":   {args: []string{"serve", example, "--listen", "0.0.0.0:0"}, env: "hunter2"},
		"serve-token-file-short":  {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token-file", short}},
		"serve-token-file-big":    {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token-file", big}},
		"serve-token-file-none":   {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token-file", filepath.Join(dir, "none")}},
		"serve-token-file-dir":    {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token-file", dir}},
		// A FIFO is refused before it is opened: opening it would wait for a writer.
		"serve-token-file-fifo": {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token-file", fifo}},
		"serve-token-both":      {args: []string{"serve", example, "--listen", "0.0.0.0:0", "--token", "--token-file", short}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(tokenEnv, tc.env)
			runGoldenReplacing(t, name, hide, tc.args...)
		})
	}
}
