package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/serve"
)

const maxp4096 = "../testdata/memory/maxp4096.dump"

// fixedNow is the time get and dump judge TTL at, in the API and the
// commands alike.
const fixedNow = "2026-01-02T04:00:00Z"

func TestGoldenServe(t *testing.T) {
	cases := map[string][]string{
		"serve-help":             {"serve", "--help"},
		"serve-no-args":          {"serve"},
		"serve-not-loopback":     {"serve", example, "--listen", "0.0.0.0:0"},
		"serve-bad-listen":       {"serve", example, "--listen", "8080"},
		"inspect-html-with-json": {"inspect", example, "--html", "x.html", "-o", "json"},
		"inspect-html-with-view": {"inspect", example, "--html", "x.html", "--key-groups"},
	}
	t.Setenv(tokenEnv, "")
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// testServer is a server started as stateutil serve starts one, on a
// loopback port of its own.
type testServer struct {
	URL    string
	srv    *serve.Server
	client *http.Client
}

func (ts *testServer) Client() *http.Client { return ts.client }

// startServer serves locations as stateutil serve does, with token.
func startServer(t *testing.T, token string, locations ...string) *testServer {
	t.Helper()
	return startServerWith(t, &serveOptions{token: tokenFlag{value: token}}, locations...)
}

// startServerWith serves locations with o's token, limits and clock; it
// stops when the test ends.
func startServerWith(t *testing.T, o *serveOptions, locations ...string) *testServer {
	t.Helper()
	srv, err := o.newServer(context.Background(), &env{reg: newRegistry(stores{}), terminal: isTerminal}, locations)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	ts := &testServer{URL: "http://" + ln.Addr().String(), srv: srv, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		ts.client.CloseIdleConnections()
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// apiGet returns the status and body of GET path.
func apiGet(t *testing.T, hs *testServer, path string) (int, []byte) {
	t.Helper()
	res, body := request(t, hs, http.MethodGet, path, nil)
	return res.StatusCode, body
}

func parseJSON(t *testing.T, what string, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, b)
	}
	return v
}

// commandJSON runs a command and parses its -o json output; code is the
// exit code it must end with.
func commandJSON(t *testing.T, code int, args ...string) any {
	t.Helper()
	got, out, errOut := run(t, args...)
	if got != code {
		t.Fatalf("stateutil %s: exit %d, want %d: %s", strings.Join(args, " "), got, code, errOut)
	}
	return parseJSON(t, strings.Join(args, " "), []byte(out))
}

func sameJSON(t *testing.T, path string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("GET %s differs from the command's JSON:\n got: %.2000s\nwant: %.2000s", path, g, w)
	}
}

// Every endpoint answers what its command prints with -o json.
func TestServeAPIMatchesCommands(t *testing.T) {
	hs := startServer(t, "", example, maxp4096)
	api := func(path string) any {
		t.Helper()
		status, body := apiGet(t, hs, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		return parseJSON(t, path, body)
	}
	sameJSON(t, "/api/snapshots", api("/api/snapshots"), parseJSON(t, "list", []byte(
		`[{"id":0,"location":"`+example+`","format":"memory"},{"id":1,"location":"`+maxp4096+`","format":"memory"}]`)))
	for id, loc := range []string{example, maxp4096} {
		p := "/api/snapshots/" + string(rune('0'+id))
		sameJSON(t, p, api(p), commandJSON(t, 0, "inspect", loc, "-o", "json"))
		sameJSON(t, p+"/key-groups", api(p+"/key-groups"), commandJSON(t, 0, "inspect", loc, "--key-groups", "-o", "json"))
		sameJSON(t, p+"/key-groups?operator=word-counter", api(p+"/key-groups?operator=word-counter"),
			commandJSON(t, 0, "inspect", loc, "--key-groups", "--operator", "word-counter", "-o", "json"))
		sameJSON(t, p+"/operator-state", api(p+"/operator-state"), commandJSON(t, 0, "inspect", loc, "--operator-state", "--values", "-o", "json"))
		for _, q := range [][]string{{"2"}, {"5", "256"}} {
			path, args := p+"/plan?parallelism="+q[0], []string{"rescale", loc, "--parallelism", q[0], "--dry-run", "-o", "json"}
			if len(q) > 1 {
				path, args = path+"&max-parallelism="+q[1], append(args, "--max-parallelism", q[1])
			}
			sameJSON(t, path, api(path), commandJSON(t, 0, args...))
		}
	}
	for _, state := range []string{"count", "recent", "by-source", "mean-length"} {
		path := "/api/snapshots/0/get?" + url.Values{"operator": {"word-counter"}, "state": {state}, "key": {"word-10"}, "now": {fixedNow}}.Encode()
		sameJSON(t, path, api(path), commandJSON(t, 0, "get", example, "--operator", "word-counter", "--state", state, "--key", "word-10", "--now", fixedNow, "-o", "json"))
	}
	for _, pair := range [][2]int{{0, 1}, {1, 0}, {0, 0}} {
		path := "/api/diff?a=" + string(rune('0'+pair[0])) + "&b=" + string(rune('0'+pair[1]))
		locs := []string{example, maxp4096}
		code := 1
		if pair[0] == pair[1] {
			code = 0
		}
		sameJSON(t, path, api(path), commandJSON(t, code, "diff", locs[pair[0]], locs[pair[1]], "--entries", "--values", "-o", "json"))
	}
}

// A key get does not find is 404, with get's message.
func TestServeGetMissingKeyIs404(t *testing.T) {
	hs := startServer(t, "", example)
	code, _, errOut := run(t, "get", example, "--operator", "word-counter", "--state", "count", "--key", "no-such-word")
	if code != ExitNotFound {
		t.Fatalf("get: exit %d, want %d", code, ExitNotFound)
	}
	status, body := apiGet(t, hs, "/api/snapshots/0/get?operator=word-counter&state=count&key=no-such-word")
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(body, &e); err != nil || status != http.StatusNotFound || e.ExitCode != ExitNotFound || "stateutil: "+e.Error+"\n" != errOut {
		t.Errorf("got %d %s, want 404 with get's message %q", status, body, errOut)
	}
}

// Pages of entries, cursor after cursor, are dump's records in dump's
// order, whatever the page size.
func TestServeEntriesPagesAreDump(t *testing.T) {
	hs := startServer(t, "", example, maxp4096)
	for _, tc := range []struct {
		id, loc, op, state string
	}{
		{"0", example, "word-counter", "recent"},
		{"0", example, "word-counter", "by-source"},
		{"1", maxp4096, "word-counter", "count"},
		{"0", example, "rules", "user-total"},
	} {
		_, out, errOut := run(t, "dump", tc.loc, "--operator", tc.op, "--state", tc.state, "--now", fixedNow)
		if errOut != "" {
			t.Fatal(errOut)
		}
		var want []any
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			want = append(want, parseJSON(t, "dump", sc.Bytes()))
		}
		if len(want) < 10 {
			t.Fatalf("dump %s %s: only %d records, too few to page", tc.loc, tc.state, len(want))
		}
		for _, limit := range []string{"1", "7", "1000"} {
			var got []any
			after, pages := "", 0
			for {
				q := url.Values{"operator": {tc.op}, "state": {tc.state}, "limit": {limit}, "now": {fixedNow}}
				if after != "" {
					q.Set("after", after)
				}
				path := "/api/snapshots/" + tc.id + "/entries?" + q.Encode()
				status, body := apiGet(t, hs, path)
				if status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, status, body)
				}
				var page struct {
					Records []any  `json:"records"`
					Next    string `json:"next"`
				}
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				got = append(got, page.Records...)
				pages++
				if page.Next == "" {
					break
				}
				if pages > len(want)+1 {
					t.Fatalf("%s: more pages than records", path)
				}
				after = page.Next
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s limit %s: %d records in %d pages differ from dump's %d", tc.loc, tc.state, limit, len(got), pages, len(want))
			}
		}
	}
}

// Bad parameters are 400 with a JSON error; a damaged snapshot is its
// error, as inspect reports it, in the list and on every endpoint.
func TestServeErrors(t *testing.T) {
	damaged := "../testdata/memory/bad-checksum.dump"
	hs := startServer(t, "", example, damaged)
	for path, want := range map[string]int{
		"/api/snapshots/2":                                                           400,
		"/api/snapshots/-1":                                                          400,
		"/api/snapshots/01":                                                          400,
		"/api/snapshots/x/key-groups":                                                400,
		"/api/snapshots/0?operator=word-counter":                                     400,
		"/api/snapshots/0/key-groups?operator=nope":                                  404,
		"/api/snapshots/0/get?operator=word-counter&state=count":                     400,
		"/api/snapshots/0/get?operator=word-counter&key=a":                           400,
		"/api/snapshots/0/get?operator=word-counter&state=nope&key=a":                404,
		"/api/snapshots/0/get?operator=word-counter&state=count&key=a&now=yesterday": 400,
		"/api/snapshots/0/entries?operator=word-counter":                             400,
		"/api/snapshots/0/entries?operator=word-counter&state=count&limit=0":         400,
		"/api/snapshots/0/entries?operator=word-counter&state=count&limit=1001":      400,
		"/api/snapshots/0/entries?operator=word-counter&state=count&after=x":         400,
		"/api/snapshots/0/entries?operator=word-counter&state=count&after=128.0":     400,
		"/api/snapshots/0/entries?operator=word-counter&state=count&after=-1.0":      400,
		"/api/snapshots/0/entries?operator=nope&state=count":                         404,
		"/api/snapshots/0/plan":                                                      400,
		"/api/snapshots/0/plan?parallelism=0":                                        400,
		"/api/snapshots/0/plan?parallelism=99999":                                    400,
		"/api/snapshots/0/plan?parallelism=200":                                      400,
		"/api/snapshots/0/plan?parallelism=2&max-parallelism=x":                      400,
		"/api/diff?a=0":               400,
		"/api/diff?a=0&b=9":           400,
		"/api/nope":                   404,
		"/nope":                       404,
		"/assets/nope.js":             404,
		"/assets/":                    404,
		"/api/snapshots/1":            422,
		"/api/snapshots/1/key-groups": 422,
		"/api/snapshots/1/entries?operator=word-counter&state=count":   422,
		"/api/snapshots/1/get?operator=word-counter&state=count&key=a": 422,
		"/api/snapshots/1/plan?parallelism=2":                          422,
		"/api/diff?a=0&b=1":                                            422,
	} {
		status, body := apiGet(t, hs, path)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || status != want {
			t.Errorf("GET %s: %d %s, want %d with a JSON error", path, status, body, want)
		}
	}
	_, _, inspectErr := run(t, "inspect", damaged)
	_, body := apiGet(t, hs, "/api/snapshots")
	var list []serve.SnapshotRef
	if err := json.Unmarshal(body, &list); err != nil || len(list) != 2 || "stateutil: "+list[1].Error+"\n" != inspectErr {
		t.Errorf("list %s: want the damaged snapshot with inspect's message %q", body, inspectErr)
	}
	res, err := hs.Client().Post(hs.URL+"/api/snapshots", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v, want 405 with Allow", res.StatusCode, res.Header)
	}
}

// No request reaches a snapshot but by the index of one served: paths,
// in any parameter or in the URL, name nothing.
func TestServeOpensNoPathFromRequest(t *testing.T) {
	other, err := filepath.Abs(maxp4096) // a snapshot that is not served
	if err != nil {
		t.Fatal(err)
	}
	hs := startServer(t, "", example)
	for _, p := range []string{other, maxp4096, "../" + maxp4096, "file://" + other} {
		e := url.QueryEscape(p)
		for _, path := range []string{
			"/api/snapshots/" + e, "/api/snapshots/" + e + "/key-groups",
			"/api/snapshots/0/key-groups?operator=" + e,
			"/api/snapshots/0/get?operator=word-counter&state=count&key=word-10&namespace=" + e,
			"/api/snapshots/0/entries?operator=" + e + "&state=count",
			"/api/snapshots/0/plan?parallelism=2&source=" + e,
			"/api/diff?a=0&b=" + e, "/api/diff?a=" + e + "&b=0",
			"/assets/" + e, "/assets/..%2f..%2f..%2fgo.mod", "/" + e,
		} {
			status, body := apiGet(t, hs, path)
			if status == http.StatusOK && !strings.HasPrefix(path, "/api/snapshots/0/plan") || strings.Contains(string(body), `"max_parallelism":4096`) {
				t.Errorf("GET %s: %d %.300s", path, status, body)
			}
		}
	}
}

// A request whose Host is not loopback is refused where no token is
// required: a rebound DNS name reaches no snapshot.
func TestServeRefusesForeignHostWithoutToken(t *testing.T) {
	hs := startServer(t, "", example)
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/snapshots", nil)
	req.Host = "attacker.example:80"
	res, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d, want 421", res.StatusCode)
	}
}

// With --token every request needs it, as a bearer token (the scheme in
// any case) or as the cookie the one-time URL sets once (HttpOnly,
// SameSite=Strict); a 401 says how to authenticate.
func TestServeToken(t *testing.T) {
	const token = "s3cret-token-0123456789abcdef"
	hs := startServer(t, token, example)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(path string, set func(*http.Request)) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		if set != nil {
			set(req)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	bearer := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	for _, path := range []string{"/", "/api/snapshots", "/api/snapshots/0", "/assets/app.js"} {
		if res := do(path, nil); res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer realm="stateutil"` {
			t.Errorf("GET %s without token: %d %v, want 401 with WWW-Authenticate", path, res.StatusCode, res.Header)
		}
		if res := do(path, bearer("Bearer wrong")); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, res.StatusCode)
		}
		for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
			if res := do(path, bearer(scheme+" "+token)); res.StatusCode != http.StatusOK {
				t.Errorf("GET %s with %s and the token: %d, want 200", path, scheme, res.StatusCode)
			}
		}
	}
	login, err := hs.srv.OneTimeURL(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(login, hs.URL)
	res := do(path, nil)
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		cookie = c
	}
	if res.StatusCode != http.StatusSeeOther || cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d %v, want a redirect setting the token's HttpOnly, SameSite=Strict cookie", res.StatusCode, res.Cookies())
	}
	if res := do("/api/snapshots", func(r *http.Request) { r.AddCookie(cookie) }); res.StatusCode != http.StatusOK {
		t.Errorf("with the cookie: %d, want 200", res.StatusCode)
	}
	if res := do(path, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the login URL again: %d, want 401", res.StatusCode)
	}
}
