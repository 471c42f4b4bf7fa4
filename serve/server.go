// Package serve is stateutil's web UI and its JSON API: read-only views of
// the snapshots named when the server starts, in the schemas of the
// commands' -o json, with the UI's assets embedded in the binary.
package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	// or as the cookie the one-time URL sets.
	Token string
	// Classify maps an error to the commands' exit code and the message
	// they print for it.
	Classify func(error) (code int, message string)
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
	plans     *memo
	diffs     *memo
	mux       *http.ServeMux
	sqlState  sqlEngine

	mu       sync.Mutex
	oneTimes map[string]bool // one-time login codes not yet used
}

// New opens every snapshot once, so that the overview can list each one's
// format or error; a snapshot that fails to open is served as that error.
func New(ctx context.Context, cfg Config) *Server {
	s := &Server{cfg: cfg, heavy: make(chan struct{}, heavyAtOnce), plans: newMemo(64), diffs: newMemo(16), oneTimes: map[string]bool{}}
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

// OneTimeURL returns a path that sets the token's cookie once, for a
// browser to log in with (base is the server's origin).
func (s *Server) OneTimeURL(base string) (string, error) {
	code, err := randomToken()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.oneTimes[code] = true
	s.mu.Unlock()
	return base + "/login?code=" + code, nil
}

const cookieName = "stateutil_token"

// ServeHTTP sets the security headers of every response, checks the
// token, and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "read-only: only GET")
		return
	}
	if s.cfg.Token == "" && !loopbackHost(r.Host) {
		// A page elsewhere can point a name of its own at 127.0.0.1
		// (DNS rebinding); without a token, only loopback names are served.
		writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not a loopback address", r.Host))
		return
	}
	if r.URL.Path == "/login" {
		s.login(w, r)
		return
	}
	if s.cfg.Token != "" && !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "a token is required: open the one-time URL printed at start, or send Authorization: Bearer TOKEN")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && sameToken(tok, s.cfg.Token) {
		return true
	}
	c, err := r.Cookie(cookieName)
	return err == nil && sameToken(c.Value, s.cfg.Token)
}

func sameToken(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// login spends a one-time code: it sets the token's cookie and sends the
// browser to the UI, with the code gone from its address bar and history.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	s.mu.Lock()
	ok := s.cfg.Token != "" && s.oneTimes[code]
	delete(s.oneTimes, code)
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusUnauthorized, "this login URL is unknown or was used already")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cfg.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
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

// writeTimeout bounds the time a client takes to read an answer, which
// the request may hold one of the heavyAtOnce slots for.
const writeTimeout = 30 * time.Second

func writeBody(w http.ResponseWriter, status int, body []byte) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	w.Header().Set("Content-Type", "application/json")
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
	case errors.As(err, &bad):
		writeJSONStatus(w, http.StatusBadRequest, apiError{Error: bad.msg, ExitCode: exitUsage})
	case err != nil:
		s.fail(w, err)
	default:
		writeJSONStatus(w, http.StatusOK, v)
	}
}

// cached answers with key's result in m, computed once by compute while
// holding a heavyAtOnce slot, and kept encoded: the many requests for one
// view share its bytes.
func (s *Server) cached(w http.ResponseWriter, r *http.Request, m *memo, key string, compute func(context.Context) (any, error)) {
	ctx := context.WithoutCancel(r.Context())
	body, err := m.get(r.Context(), key, func(context.Context) ([]byte, error) {
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
	writeBody(w, http.StatusOK, body)
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
