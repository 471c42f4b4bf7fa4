// Package gcs is storage on Google Cloud Storage: gs://bucket/path, as
// Flink writes it. Credentials are Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata server); with
// STORAGE_EMULATOR_HOST set the client talks to that emulator instead,
// without credentials; Options.Endpoint names another endpoint.
//
// Directories are name prefixes, with a zero-byte marker object "dir/" for
// an empty one, as the Cloud Console and Hadoop's GCS connector make them.
// Claims are created with ifGenerationMatch=0 and refreshed and released
// on the generation last written (see objstore).
package gcs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	gcs "cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// Scheme is the URI scheme served.
const Scheme = "gs"

// Attempts is how often a request that failed for want of the store is
// made before its error is returned (a few seconds in all).
var Attempts = 5

// ChunkSize is the size of the chunks a large object goes up in, one at a
// time per file (a multiple of 256 KiB).
var ChunkSize = 8 << 20

// Options are the settings that do not come from the environment.
// Register reads them when a location is resolved, so flags may fill them
// in after the registry is built.
type Options struct {
	// Endpoint is the JSON API's URL (https://storage.googleapis.com/storage/v1/
	// by default, or STORAGE_EMULATOR_HOST's when that is set).
	Endpoint string
}

// Register makes gs:// URIs resolve to Google Cloud Storage with o.
func Register(r *storage.Registry, o *Options) {
	r.Register(Scheme, Opener(o))
}

// Opener returns the storage.Opener of gs://bucket/path.
func Opener(o *Options) storage.Opener {
	return func(ctx context.Context, u *url.URL) (storage.Storage, error) {
		if u.Host == "" {
			return nil, fmt.Errorf("%q names no bucket (want gs://bucket/path)", u.String())
		}
		if u.User != nil || u.Port() != "" {
			return nil, fmt.Errorf("%q: a Google Cloud Storage location is gs://bucket/path; give the endpoint with --gcs-endpoint or STORAGE_EMULATOR_HOST", u.String())
		}
		var opts Options
		if o != nil {
			opts = *o
		}
		c, err := client(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("connect gs://%s/: %w", u.Host, err)
		}
		return c.store(u.Host), nil
	}
}

// conn is one configured client and what its stores share.
type conn struct {
	api      *gcs.Client
	endpoint string // for messages
	clock    *clock
	mu       sync.Mutex
	dirs     map[string]*objstore.Dirs // by bucket
	slots    chan struct{}
}

var (
	connsMu sync.Mutex
	// Storage has no Close: clients are shared per configuration rather
	// than one connection pool per Resolve.
	conns = map[string]*conn{}
)

// client returns the shared client for o and the environment.
func client(ctx context.Context, o Options) (*conn, error) {
	emulator := os.Getenv("STORAGE_EMULATOR_HOST")
	k := strings.Join([]string{o.Endpoint, emulator, os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")}, "\x00")
	connsMu.Lock()
	defer connsMu.Unlock()
	if c, ok := conns[k]; ok {
		return c, nil
	}
	clk := &clock{base: objstore.Transport()}
	var auth []option.ClientOption
	if emulator != "" {
		auth = append(auth, option.WithoutAuthentication())
	} else {
		auth = append(auth, option.WithScopes(gcs.ScopeFullControl))
	}
	rt, err := htransport.NewTransport(ctx, clk, auth...)
	if err != nil {
		return nil, fmt.Errorf("%w: Application Default Credentials: %v", storage.ErrPermission, err)
	}
	opts := []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: rt}), gcs.WithDisabledClientMetrics()}
	shown := "Google Cloud Storage"
	switch {
	case o.Endpoint != "":
		opts = append(opts, option.WithEndpoint(o.Endpoint))
		shown = o.Endpoint
	case emulator != "":
		shown = emulator
	}
	api, err := gcs.NewClient(ctx, opts...)
	if err != nil {
		return nil, err
	}
	// The client would retry a store that is down for as long as the
	// context lets it: a few seconds, then the caller hears of it.
	api.SetRetry(gcs.WithMaxAttempts(Attempts), gcs.WithBackoff(gax.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}))
	c := &conn{api: api, endpoint: shown, clock: clk, dirs: map[string]*objstore.Dirs{}, slots: objstore.NewSlots()}
	conns[k] = c
	return c, nil
}

func (c *conn) store(bucket string) storage.Storage {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.dirs[bucket]
	if !ok {
		d = objstore.NewDirs()
		c.dirs[bucket] = d
	}
	return objstore.New(&bucketOf{c: c, name: bucket, h: c.api.Bucket(bucket)}, objstore.Options{Dirs: d, Slots: c.slots, ClaimTTLVar: "STATEUTIL_GCS_CLAIM_TTL"})
}

// clock remembers the server's time from the Date of its latest answer,
// by which claims are judged stale.
type clock struct {
	base http.RoundTripper
	mu   sync.Mutex
	date time.Time // the server's
	at   time.Time // ours, when it came
}

func (c *clock) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.base.RoundTrip(r)
	if err == nil {
		if d, perr := http.ParseTime(res.Header.Get("Date")); perr == nil {
			c.mu.Lock()
			c.date, c.at = d, time.Now()
			c.mu.Unlock()
		}
	}
	return res, err
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.date.IsZero() {
		return time.Time{}
	}
	return c.date.Add(time.Since(c.at))
}

// bucketOf is one bucket as an objstore.Bucket.
type bucketOf struct {
	c    *conn
	name string
	h    *gcs.BucketHandle
}

func (b *bucketOf) URI(k string) string { return "gs://" + b.name + "/" + k }

func (b *bucketOf) object(k string, c objstore.Cond) (*gcs.ObjectHandle, error) {
	o := b.h.Object(k)
	switch {
	case c.Absent:
		o = o.If(gcs.Conditions{DoesNotExist: true})
	case c.Version != "":
		gen, err := strconv.ParseInt(c.Version, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("generation %q: %w", c.Version, err)
		}
		o = o.If(gcs.Conditions{GenerationMatch: gen})
	}
	return o, nil
}

func (b *bucketOf) describe(k string, a *gcs.ObjectAttrs, updated time.Time) objstore.Object {
	return objstore.Object{Key: k, Size: a.Size, ModTime: updated, Version: strconv.FormatInt(a.Generation, 10), Dir: strings.HasSuffix(k, "/"), Now: b.c.clock.now()}
}

func (b *bucketOf) Head(ctx context.Context, k string) (objstore.Object, error) {
	a, err := b.h.Object(k).Attrs(ctx)
	if err != nil {
		return objstore.Object{}, b.err(err)
	}
	return b.describe(k, a, a.Updated), nil
}

func (b *bucketOf) Get(ctx context.Context, k, version string, off, n int64) (objstore.Object, io.ReadCloser, error) {
	o := b.h.Object(k).ReadCompressed(true)
	if version != "" {
		gen, err := strconv.ParseInt(version, 10, 64)
		if err != nil {
			return objstore.Object{}, nil, fmt.Errorf("generation %q: %w", version, err)
		}
		o = o.Generation(gen)
	}
	r, err := o.NewRangeReader(ctx, off, n)
	var api *googleapi.Error
	if off == 0 && errors.As(err, &api) && api.Code == http.StatusRequestedRangeNotSatisfiable {
		// An empty object has no byte 0.
		a, err := o.Attrs(ctx)
		if err != nil {
			return objstore.Object{}, nil, b.err(err)
		}
		return b.describe(k, a, a.Updated), io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return objstore.Object{}, nil, b.err(err)
	}
	a := r.Attrs
	return objstore.Object{Key: k, Size: a.Size, ModTime: a.LastModified, Version: strconv.FormatInt(a.Generation, 10),
		Dir: strings.HasSuffix(k, "/"), Now: b.c.clock.now()}, r, nil
}

func (b *bucketOf) List(ctx context.Context, prefix string, delimited bool, max int, fn func(objstore.Object) error) error {
	q := &gcs.Query{Prefix: prefix}
	if delimited {
		q.Delimiter = "/"
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Generation"}); err != nil {
		return err
	}
	it := b.h.Objects(ctx, q)
	if max > 0 {
		it.PageInfo().MaxSize = max
	}
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return b.err(err)
		}
		o := objstore.Object{Key: strings.TrimSuffix(a.Prefix, "/"), Dir: true}
		if a.Prefix == "" {
			o = b.describe(a.Name, a, a.Updated)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
}

func (b *bucketOf) Put(ctx context.Context, k string, data []byte, c objstore.Cond) (string, error) {
	o, err := b.object(k, c)
	if err != nil {
		return "", err
	}
	w := o.NewWriter(ctx)
	w.ChunkSize = 0 // one request
	w.CRC32C = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	w.SendCRC32C = true
	if _, err := w.Write(data); err != nil {
		w.Close()
		return "", b.err(err)
	}
	if err := w.Close(); err != nil {
		return "", b.err(err)
	}
	return strconv.FormatInt(w.Attrs().Generation, 10), nil
}

// upload is a resumable upload: its chunks go up while the caller
// writes, and the object appears when the last one has.
type upload struct {
	b      *bucketOf
	w      *gcs.Writer
	cancel context.CancelFunc
}

func (b *bucketOf) Upload(ctx context.Context, k string) objstore.Upload {
	ctx, cancel := context.WithCancel(ctx)
	w := b.h.Object(k).NewWriter(ctx)
	w.ChunkSize = ChunkSize
	return &upload{b: b, w: w, cancel: cancel}
}

func (u *upload) Write(p []byte) (int, error) {
	n, err := u.w.Write(p)
	return n, u.b.errOrNil(err)
}

func (u *upload) Commit() error {
	defer u.cancel()
	return u.b.errOrNil(u.w.Close())
}

// Abort cancels the upload's context, which ends it without an object.
func (u *upload) Abort() error {
	u.cancel()
	u.w.Close()
	return nil
}

func (b *bucketOf) Mkdir(ctx context.Context, k string) error {
	_, err := b.Put(ctx, k+"/", nil, objstore.Cond{})
	return err
}

// Delete of a version deletes that generation, on the condition that it
// is the live one: a store that ignored the condition would still leave
// a newer generation alone.
func (b *bucketOf) Delete(ctx context.Context, k string, c objstore.Cond) error {
	o, err := b.object(k, c)
	if err != nil || c.Version == "" {
		if err == nil {
			err = b.errOrNil(o.Delete(ctx))
		}
		return err
	}
	gen, _ := strconv.ParseInt(c.Version, 10, 64)
	err = b.errOrNil(o.Generation(gen).Delete(ctx))
	if errors.Is(err, storage.ErrNotFound) {
		// That generation is gone: replaced, if the key has another.
		if _, herr := b.h.Object(k).Attrs(ctx); herr == nil {
			return fmt.Errorf("%w: generation %d is no longer the object's", objstore.ErrPrecondition, gen)
		}
	}
	return err
}

func (b *bucketOf) Copy(ctx context.Context, from, to string) error {
	_, err := b.h.Object(to).CopierFrom(b.h.Object(from)).Run(ctx)
	return b.errOrNil(err)
}

func (b *bucketOf) errOrNil(err error) error {
	if err == nil {
		return nil
	}
	return b.err(err)
}

// err classifies an error of the client onto storage's sentinels and
// ErrPrecondition, with what the service said.
func (b *bucketOf) err(err error) error {
	var api *googleapi.Error
	switch {
	case errors.Is(err, gcs.ErrObjectNotExist):
		return fmt.Errorf("%w: no such object", storage.ErrNotFound)
	case errors.Is(err, gcs.ErrBucketNotExist):
		return fmt.Errorf("%w: no bucket %q", storage.ErrNotFound, b.name)
	case errors.As(err, &api):
		detail := fmt.Sprintf("HTTP %d: %s", api.Code, api.Message)
		switch {
		case api.Code == 412:
			return fmt.Errorf("%w (%s)", objstore.ErrPrecondition, detail)
		case api.Code == 404:
			return fmt.Errorf("%w: %s", storage.ErrNotFound, detail)
		case api.Code == 401 || api.Code == 403:
			return fmt.Errorf("%w (bucket %q): %s", storage.ErrPermission, b.name, detail)
		case api.Code == 429 || api.Code >= 500:
			return fmt.Errorf("%w (%s): %s", storage.ErrUnavailable, b.c.endpoint, detail)
		}
		return errors.New(detail)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	}
	if objstore.Unreachable(err) {
		return fmt.Errorf("%w (%s): %v", storage.ErrUnavailable, b.c.endpoint, objstore.Innermost(err))
	}
	return err
}
