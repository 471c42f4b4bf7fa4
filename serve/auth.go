package serve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tokens a server accepts: long enough and varied enough to stand for
// 16 random bytes or more (openssl rand -hex 16 gives 32 characters,
// -base64 16 gives 24, a UUID 36), in characters that a header and a
// cookie carry as they are.
const (
	minTokenLength   = 24
	minTokenDistinct = 10
	tokenChars       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/="
)

// CheckToken refuses a token that is too short or too plain to stand for
// 16 random bytes, or holds characters other than tokenChars.
func CheckToken(tok string) error {
	distinct := map[rune]bool{}
	for _, c := range tok {
		if !strings.ContainsRune(tokenChars, c) {
			return fmt.Errorf("a token holds only letters, digits and - . _ ~ + / =, not %q", c)
		}
		distinct[c] = true
	}
	if len(tok) < minTokenLength || len(distinct) < minTokenDistinct {
		return fmt.Errorf("too easy to guess (%d characters, %d different): a token needs %d random characters or more, %d of them different (openssl rand -hex 16)",
			len(tok), len(distinct), minTokenLength, minTokenDistinct)
	}
	return nil
}

// NewToken makes a token of 32 random bytes, in hex.
func NewToken() (string, error) { return randomHex(32) }

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

const cookieName = "stateutil_token"

// authorized reports whether r carries the token, as a bearer token (the
// scheme in any case) or as the login cookie; when it does not, it has
// answered: 401, or 429 while failed attempts are over their limit.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	var given []string
	if scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "Bearer") {
		given = append(given, strings.TrimSpace(tok))
	}
	if c, err := r.Cookie(cookieName); err == nil {
		given = append(given, c.Value)
	}
	if len(given) == 0 {
		unauthorized(w, "a token is required: open the one-time URL printed at start, or send Authorization: Bearer TOKEN")
		return false
	}
	if !s.mayGuess(w) {
		return false
	}
	for _, tok := range given {
		if sameToken(tok, s.cfg.Token) {
			return true
		}
	}
	s.guesses.failed()
	unauthorized(w, "wrong token")
	return false
}

// mayGuess checks that a credential may be tried now; when not, it has
// answered 429.
func (s *Server) mayGuess(w http.ResponseWriter) bool {
	wait := s.guesses.wait()
	if wait == 0 {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	writeError(w, http.StatusTooManyRequests, "too many wrong tokens: no token is checked until the limit recovers")
	return false
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="stateutil"`)
	writeError(w, http.StatusUnauthorized, msg)
}

func sameToken(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// login spends a one-time code: it sets the token's cookie and sends the
// browser to the UI, with the code gone from its address bar and history.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		writeError(w, http.StatusNotFound, "no login: this server needs no token")
		return
	}
	if !s.mayGuess(w) {
		return
	}
	code := r.URL.Query().Get("code")
	s.mu.Lock()
	ok := s.oneTimes[code]
	delete(s.oneTimes, code)
	s.mu.Unlock()
	if !ok {
		s.guesses.failed()
		unauthorized(w, "this login URL is unknown or was used already")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cfg.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// Failed attempts allowed: a burst, then one per interval. The limit is
// the server's, not a client's: whoever guesses, guesses slowly.
const (
	guessBurst    = 10
	guessInterval = time.Second
)

// guesses is a bucket of the failed attempts allowed, refilled one per
// guessInterval up to guessBurst.
type guesses struct {
	now func() time.Time

	mu   sync.Mutex
	left float64
	at   time.Time
}

func newGuesses(now func() time.Time) *guesses {
	return &guesses{now: now, left: guessBurst, at: now()}
}

// refillLocked adds what the time since the last look refills.
func (g *guesses) refillLocked() {
	now := g.now()
	if elapsed := now.Sub(g.at); elapsed > 0 {
		g.left = min(guessBurst, g.left+float64(elapsed)/float64(guessInterval))
	}
	g.at = now
}

// wait is how long until an attempt may be made; 0 now.
func (g *guesses) wait() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refillLocked()
	if g.left >= 1 {
		return 0
	}
	return time.Duration((1 - g.left) * float64(guessInterval))
}

func (g *guesses) failed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refillLocked()
	g.left = max(0, g.left-1)
}
