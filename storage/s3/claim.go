package s3

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
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateutil/stateutil/storage"
)

// A claim on S3 is an object beside the destination, named as on local
// disk and HDFS (storage.TempPrefix + "claim-" + base), created with a
// conditional PUT (If-None-Match: *) so that of two writers exactly one
// creates it. S3 has no leases: the holder rewrites the object every
// TTL/4 (If-Match on its ETag, so that it notices a takeover), and a claim
// not rewritten for its TTL, by the server's clock, is stale: the next
// claimer replaces it with If-Match on the ETag it read, so that of two
// claimers taking over one stale claim exactly one succeeds. Release
// deletes the object, If-Match on the ETag last written.
type claimRecord struct {
	Holder string `json:"holder"`
	Token  string `json:"token"`
	TTL    string `json:"ttl"`
	Seq    int64  `json:"seq"` // changes the ETag on every refresh
}

// claimKey is the key of the claim on p.
func claimKey(p string) string {
	dir, base := path.Split(path.Clean("/" + p))
	return key(dir + storage.TempPrefix + "claim-" + base)
}

func claimTTL() (time.Duration, error) {
	v := os.Getenv("STATEUTIL_S3_CLAIM_TTL")
	if v == "" {
		return ClaimTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("STATEUTIL_S3_CLAIM_TTL=%q: want a positive duration such as 60s", v)
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

	mu   sync.Mutex
	etag *string
	lost error // set when another writer took the claim over

	once sync.Once
	err  error
}

func (s *store) Claim(ctx context.Context, p string) (storage.Claim, error) {
	ttl, err := claimTTL()
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

func (c *claim) uri() string { return c.s.URI("/" + c.key) }

// put writes the claim record: new (ifMatch nil) or over the object whose
// ETag is ifMatch. It returns the new ETag, or ok=false when the condition
// did not hold.
func (c *claim) put(ctx context.Context, ifMatch *string) (etag *string, ok bool, err error) {
	body, _ := json.Marshal(c.rec)
	in := &awss3.PutObjectInput{Bucket: &c.s.bucket, Key: &c.key, Body: strings.NewReader(string(body)), ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String("application/json")}
	if ifMatch == nil {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = ifMatch
	}
	out, err := c.s.c.api.PutObject(ctx, in)
	if err != nil {
		// 412: the condition failed; 409: a concurrent conditional write
		// of the same key won.
		if code(err) == "PreconditionFailed" || code(err) == "ConditionalRequestConflict" || status(err) == 412 || status(err) == 409 {
			return nil, false, nil
		}
		if ifMatch == nil && (code(err) == "NotImplemented" || status(err) == 501) {
			return nil, false, fmt.Errorf("claim %s: %w (%s)", c.s.URI(c.p), ErrNoConditionalWrites, describe(err))
		}
		return nil, false, c.s.wrap("claim", c.p, err)
	}
	return out.ETag, true, nil
}

// take creates the claim, or takes over a stale one.
func (c *claim) take(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		etag, ok, err := c.put(ctx, nil)
		if err != nil {
			return err
		}
		if ok {
			// A server that ignores If-None-Match lets this second create
			// succeed too (the same bytes, so the claim stands as it was).
			_, again, err := c.put(ctx, nil)
			if err != nil {
				return errors.Join(err, c.remove(etag))
			}
			if again {
				return errors.Join(fmt.Errorf("claim %s: %w; use a server that supports them (AWS S3 and current MinIO do)", c.s.URI(c.p), ErrNoConditionalWrites), c.remove(etag))
			}
			c.etag = etag
			return nil
		}
		held, err := c.read(ctx)
		if errors.Is(err, storage.ErrNotFound) && attempt < 3 {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		if !held.stale {
			return fmt.Errorf("%s: %w (%s holds %s, refreshed %s ago; it goes stale after %s without a refresh)",
				c.s.URI(c.p), storage.ErrInUse, held.holder, c.uri(), held.age.Round(time.Second), held.ttl)
		}
		etag, ok, err = c.put(ctx, held.etag)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w (another writer took over the stale claim %s first)", c.s.URI(c.p), storage.ErrInUse, c.uri())
		}
		c.etag = etag
		return nil
	}
}

type heldClaim struct {
	holder string
	etag   *string
	age    time.Duration
	ttl    time.Duration
	stale  bool
}

// read reads the claim object and judges it by the server's clock: its
// age is the server's time of this answer less the object's last write.
func (c *claim) read(ctx context.Context) (heldClaim, error) {
	out, err := c.s.c.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &c.s.bucket, Key: &c.key})
	if err != nil {
		return heldClaim{}, c.s.wrap("claim", c.p, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, 4096))
	if err != nil {
		return heldClaim{}, c.s.wrap("claim", c.p, err)
	}
	var rec claimRecord
	h := heldClaim{holder: "an unknown writer", etag: out.ETag, ttl: ClaimTTL}
	if json.Unmarshal(body, &rec) == nil {
		if rec.Holder != "" {
			h.holder = rec.Holder
		}
		if d, err := time.ParseDuration(rec.TTL); err == nil && d > 0 {
			h.ttl = d
		}
	}
	now, ok := awsmiddleware.GetServerTime(out.ResultMetadata)
	if !ok {
		now = time.Now()
	}
	h.age = max(0, now.Sub(aws.ToTime(out.LastModified)))
	// LastModified and Date have whole seconds: one more second of margin.
	h.stale = h.age > h.ttl+time.Second
	return h, nil
}

// refresh rewrites the claim every TTL/4 until Release, and stops, noting
// the loss, if another writer has taken it over.
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
		// change the ETag unseen, and the conditional delete would then
		// leave the claim behind.
		etag, ok, err := c.put(context.WithoutCancel(ctx), c.etag)
		switch {
		case err != nil:
			// Unreachable for now: try again at the next tick; past the
			// TTL the claim may be taken over, and the next put says so.
		case !ok:
			c.lost = fmt.Errorf("%s: lost the claim %s: another writer took it over after this one did not refresh it for %s", c.s.URI(c.p), c.uri(), c.ttl)
			c.mu.Unlock()
			return
		default:
			c.etag = etag
		}
		c.mu.Unlock()
	}
}

// remove deletes the claim object if it still is the one written with
// etag.
func (c *claim) remove(etag *string) error {
	ctx := context.Background()
	_, err := c.s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &c.s.bucket, Key: &c.key, IfMatch: etag})
	if code(err) == "NotImplemented" || status(err) == 501 {
		// A store without conditional deletes: ours, unless lost.
		_, err = c.s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &c.s.bucket, Key: &c.key})
	}
	switch {
	case err == nil, isNotFound(err):
		return nil
	case code(err) == "PreconditionFailed" || status(err) == 412:
		return fmt.Errorf("%s: the claim %s is no longer this writer's: another writer took it over", c.s.URI(c.p), c.uri())
	}
	return c.s.wrap("release claim", c.p, err)
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
		c.err = c.remove(c.etag)
	})
	return c.err
}
