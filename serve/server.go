// Package serve is stateutil's web UI and its JSON API: read-only views of
// the snapshots named when the server starts, in the schemas of the
// commands' -o json, with the UI's assets embedded in the binary.
package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stateutil/stateutil/snapshot"
)

// Config is what a Server serves and how it judges errors.
type Config struct {
	Registry *snapshot.Registry
	// Locations are the snapshots, in command-line order: the only ones
	// any request can reach, by their index.
	Locations []string
	Open      snapshot.OpenOptions
	// Token, when set, is required of every request: as a bearer token,
	// or as the cookie the one-time URL sets. CheckToken says which are
	// accepted.
	Token string
	// Classify maps an error to the commands' exit code and the message
	// they print for it.
	Classify func(error) (code int, message string)
	// Limits bound what clients can hold; the zero value is DefaultLimits.
	Limits Limits
	// Now is the clock of the timeouts and of the failed logins' limit
	// (nil: time.Now).
	Now func() time.Time
}

// Exit codes Classify returns that the API maps to statuses of their own;
// every other non-zero code is a snapshot that could not be read (422).
const (
	exitUsage    = 1
	exitNotFound = 3
	exitInternal = 70
)

// heavyAtOnce bounds the requests that read state at once; the others
// wait their turn, holding nothing but their goroutine.
const heavyAtOnce = 4

// Server serves the UI and the API.
type Server struct {
	cfg       Config
	snapshots []*source
	heavy     chan struct{}
	views     *views
	guesses   *guesses
	mux       *http.ServeMux
	sqlState  sqlEngine

	mu       sync.Mutex
	oneTimes map[string]bool // one-time login codes not yet used
}

// New opens every snapshot once, so that the overview can list each one's
// format or error; a snapshot that fails to open is served as that error.
func New(ctx context.Context, cfg Config) *Server {
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, heavy: make(chan struct{}, heavyAtOnce), views: newViews(cfg.Limits.ViewBytes, cfg.Limits.MaxWaiting),
		guesses: newGuesses(cfg.Now), oneTimes: map[string]bool{}}
	for i, loc := range cfg.Locations {
		s.snapshots = append(s.snapshots, openSource(ctx, i, loc, cfg))
	}
	s.routes()
	return s
}

// Close closes every reader the server opened.
func (s *Server) Close() error {
	var errs []error
	for _, src := range s.snapshots {
		errs = append(errs, src.close())
	}
	errs = append(errs, s.sqlState.close())
	return errors.Join(errs...)
}

// shutdownGrace is how long the answers in flight get to finish once
// serving is asked to stop.
const shutdownGrace = 5 * time.Second

// Serve answers on ln until ctx is done, then lets the answers in flight
// finish, for shutdownGrace at most. Connections are kept as Limits say.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	g := newConnGuard(s.cfg.Limits, s.cfg.Now)
	hs := g.server(s)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				g.sweep()
			case <-stop:
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(g.listener(ln)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
}

// OneTimeURL returns a path that sets the token's cookie once, for a
// browser to log in with (base is the server's origin).
func (s *Server) OneTimeURL(base string) (string, error) {
	code, err := randomHex(16)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.oneTimes[code] = true
	s.mu.Unlock()
	return base + "/login?code=" + code, nil
}

// ServeHTTP sets the security headers of every response, refuses what
// no page of this server asks for, checks the token, and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setSecurityHeaders(h)
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		// A body is never read: the connection ends with this answer
		// rather than after reading what is left of it.
		h.Set("Connection", "close")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "read-only: only GET and HEAD")
		return
	}
	if s.cfg.Token == "" && !loopbackHost(r.Host) {
		// A page elsewhere can point a name of its own at 127.0.0.1
		// (DNS rebinding); without a token, only loopback names are served.
		writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not a loopback address", r.Host))
		return
	}
	if from := otherOrigin(r); from != "" {
		// A page of another origin can make a browser ask for anything
		// (an <img> needs no script); what it asks costs before the answer
		// is hidden from it.
		writeError(w, http.StatusForbidden, "refused: a request from a page of another origin ("+from+")")
		return
	}
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if s.cfg.Token != "" && !s.authorized(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// setSecurityHeaders sets what every answer carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// otherOrigin names what shows that a browser sends r for a page of
// another origin ("" when nothing does): Sec-Fetch-Site cross-site or
// same-site (another port of this host is same-site), or an Origin other
// than the server's own. Following a link to the UI's page or to the
// one-time login URL is the exception: it opens the UI in its own tab,
// which computes nothing until the UI itself asks.
func otherOrigin(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document" && (r.URL.Path == "/" || r.URL.Path == "/login") {
		return ""
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "Sec-Fetch-Site: " + site
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
		return "Origin: " + origin
	}
	return ""
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost or a loopback IP, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether a listen address binds only loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return loopbackHost(host)
}

// apiError is every error response's body.
type apiError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSONStatus(w, status, apiError{Error: msg})
}

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	body, err := encode(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`+"\n")
	}
	writeBody(w, status, body)
}

// encode is v as the commands print it with -o json, but for the indent.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail answers with err as the commands judge it: a usage error is 400,
// not found 404, a snapshot that cannot be read 422.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code, msg := s.cfg.Classify(err)
	status := http.StatusUnprocessableEntity
	switch code {
	case exitUsage:
		status = http.StatusBadRequest
	case exitNotFound:
		status = http.StatusNotFound
	case exitInternal:
		status = http.StatusInternalServerError
	}
	writeJSONStatus(w, status, apiError{Error: msg, ExitCode: code})
}

// badRequest is a parameter the API itself refuses.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Sprintf(format, args...)}
}

// answer writes v, or err as fail judges it.
func (s *Server) answer(w http.ResponseWriter, v any, err error) {
	var bad *badRequest
	switch {
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case errors.As(err, &bad):
		writeJSONStatus(w, http.StatusBadRequest, apiError{Error: bad.msg, ExitCode: exitUsage})
	case err != nil:
		s.fail(w, err)
	default:
		writeJSONStatus(w, http.StatusOK, v)
	}
}

// cached answers with key's view, computed once by compute while holding a
// heavyAtOnce slot and estimate bytes of the views' budget, and kept
// encoded: the many requests for one view share its bytes.
func (s *Server) cached(w http.ResponseWriter, r *http.Request, key string, estimate int64, compute func(context.Context) (any, error)) {
	ctx := context.WithoutCancel(r.Context())
	v, err := s.views.get(r.Context(), key, estimate, func() ([]byte, error) {
		var body []byte
		err := s.withHeavy(ctx, func() error {
			v, err := compute(ctx)
			if err == nil {
				body, err = encode(v)
			}
			return err
		})
		return body, err
	})
	if err != nil {
		s.answer(w, nil, err)
		return
	}
	defer s.views.done(v)
	if v.err != nil {
		s.answer(w, nil, v.err)
		return
	}
	writeBody(w, http.StatusOK, v.body)
}

// intParam reads an optional positive integer parameter; 0 when absent.
func intParam(r *http.Request, name string, limit int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > limit {
		return 0, badRequestf("%s must be an integer from 1 to %d, not %q", name, limit, v)
	}
	return n, nil
}

// withHeavy runs fn while holding one of the heavyAtOnce slots.
func (s *Server) withHeavy(ctx context.Context, fn func() error) error {
	select {
	case s.heavy <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.heavy }()
	return fn()
}
