package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// A claim is an object beside the destination, named as on local disk and
// HDFS (storage.TempPrefix + "claim-" + base), created on the condition
// that no object is there, so that of two writers exactly one creates it.
// Object stores have no leases: the holder rewrites the object every
// TTL/4 (on the condition that it still is the version it wrote, so that
// it notices a takeover), and a claim not rewritten for its TTL, by the
// server's clock, is stale: the next claimer replaces it on the condition
// that it is the version it read, so that of two claimers taking over one
// stale claim exactly one succeeds. Release deletes the object, on the
// condition that it is the version last written.
type claimRecord struct {
	Holder string `json:"holder"`
	Token  string `json:"token"`
	TTL    string `json:"ttl"`
	Seq    int64  `json:"seq"` // changes the version on every refresh
}

// claimKey is the key of the claim on p.
func claimKey(p string) string {
	dir, base := path.Split(path.Clean("/" + p))
	return key(dir + storage.TempPrefix + "claim-" + base)
}

func (s *store) claimTTL() (time.Duration, error) {
	v := os.Getenv(s.ttlVar)
	if v == "" || s.ttlVar == "" {
		return ClaimTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 60s", s.ttlVar, v)
	}
	return d, nil
}

type claim struct {
	s    *store
	p    string
	key  string
	rec  claimRecord
	ttl  time.Duration
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	version string
	lost    error // set when another writer took the claim over

	once sync.Once
	err  error
}

func (s *store) Claim(ctx context.Context, p string) (storage.Claim, error) {
	ttl, err := s.claimTTL()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var tok [8]byte
	rand.Read(tok[:])
	c := &claim{s: s, p: p, key: claimKey(p), ttl: ttl,
		rec: claimRecord{Holder: fmt.Sprintf("pid %d on %s", os.Getpid(), host), Token: hex.EncodeToString(tok[:]), TTL: ttl.String()}}
	if err := c.take(ctx); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c.stop, c.done = stop, make(chan struct{})
	go c.refresh(rctx)
	return c, nil
}

func (c *claim) uri() string { return c.s.b.URI(c.key) }

// put writes the claim record on condition cond. It returns the new
// version, or ok=false when the condition did not hold.
func (c *claim) put(ctx context.Context, cond Cond) (version string, ok bool, err error) {
	body, _ := json.Marshal(c.rec)
	version, err = c.s.b.Put(ctx, c.key, body, cond)
	if errors.Is(err, ErrPrecondition) {
		return "", false, nil
	}
	if err != nil {
		return "", false, c.s.wrap("claim", c.p, err)
	}
	return version, true, nil
}

// take creates the claim, or takes over a stale one.
func (c *claim) take(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		version, ok, err := c.put(ctx, Cond{Absent: true})
		if err != nil {
			return err
		}
		if ok {
			c.version = version
			return nil
		}
		held, err := c.read(ctx)
		if errors.Is(err, storage.ErrNotFound) && attempt < 3 {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		if held.token == c.rec.Token {
			// Our own create, which the client sent again after its
			// answer was lost.
			c.version = held.version
			return nil
		}
		if !held.stale {
			return fmt.Errorf("%s: %w (%s holds %s, refreshed %s ago; it goes stale after %s without a refresh)",
				c.s.URI(c.p), storage.ErrInUse, held.holder, c.uri(), held.age.Round(time.Second), held.ttl)
		}
		version, ok, err = c.put(ctx, Cond{Version: held.version})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w (another writer took over the stale claim %s first)", c.s.URI(c.p), storage.ErrInUse, c.uri())
		}
		c.version = version
		return nil
	}
}

type heldClaim struct {
	holder  string
	token   string
	version string
	age     time.Duration
	ttl     time.Duration
	stale   bool
}

// read reads the claim object and judges it by the server's clock: its
// age is the server's time of this answer less the object's last write.
func (c *claim) read(ctx context.Context) (heldClaim, error) {
	o, body, err := c.s.b.Get(ctx, c.key, "", 0, -1)
	if err != nil {
		return heldClaim{}, c.s.wrap("claim", c.p, err)
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 4096))
	if err != nil {
		return heldClaim{}, c.s.wrap("claim", c.p, err)
	}
	var rec claimRecord
	h := heldClaim{holder: "an unknown writer", version: o.Version, ttl: ClaimTTL}
	if json.Unmarshal(b, &rec) == nil {
		if rec.Holder != "" {
			h.holder = rec.Holder
		}
		h.token = rec.Token
		if d, err := time.ParseDuration(rec.TTL); err == nil && d > 0 {
			h.ttl = d
		}
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	h.age = max(0, now.Sub(o.ModTime))
	// Times in HTTP headers have whole seconds: one more second of margin.
	h.stale = h.age > h.ttl+time.Second
	return h, nil
}

// refresh rewrites the claim every TTL/4 until Release.
func (c *claim) refresh(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(max(c.ttl/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		c.rec.Seq++
		// Not cut off by Release: a write the server has taken would
		// change the version unseen, and the conditional delete would
		// then leave the claim behind.
		version, ok, err := c.put(context.WithoutCancel(ctx), Cond{Version: c.version})
		switch {
		case err != nil:
			// Unreachable for now: try again at the next tick; past the
			// TTL the claim may be taken over, and the next put says so.
		case !ok:
			c.lost = fmt.Errorf("%s: lost the claim %s: another writer took it over after this one did not refresh it for %s", c.s.URI(c.p), c.uri(), c.ttl)
			c.mu.Unlock()
			return
		default:
			c.version = version
		}
		c.mu.Unlock()
	}
}

func (c *claim) Release() error {
	c.once.Do(func() {
		c.stop()
		<-c.done
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.lost != nil {
			c.err = c.lost
			return
		}
		err := c.s.b.Delete(context.Background(), c.key, Cond{Version: c.version})
		switch {
		case err == nil, errors.Is(err, storage.ErrNotFound):
		case errors.Is(err, ErrPrecondition):
			c.err = fmt.Errorf("%s: the claim %s is no longer this writer's: another writer took it over", c.s.URI(c.p), c.uri())
		default:
			c.err = c.s.wrap("release claim", c.p, err)
		}
	})
	return c.err
}
