// Package s3 is storage on Amazon S3 and S3-compatible object stores
// (MinIO, Ceph, SeaweedFS): s3://bucket/key, and Flink's s3a:// and s3p://
// spellings of the same. Credentials and region come from the AWS SDK's
// standard chain; the endpoint and path-style addressing from Options, the
// SDK's AWS_ENDPOINT_URL(_S3) or STATEUTIL_S3_PATH_STYLE.
//
// S3 has objects, not files: a directory is a key prefix, MkdirAll writes
// a zero-byte marker object ("dir/"), and a file appears whole under its
// final name when its upload completes, so nothing needs renaming. Rename
// exists (server-side copy, then delete) but is not atomic.
package s3

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateutil/stateutil/storage"
)

// Schemes are the URI schemes served: stateutil's s3:// and the s3a://
// (Hadoop) and s3p:// (Presto) schemes Flink writes, all the same store.
var Schemes = []string{"s3", "s3a", "s3p"}

// Tuning. Variables so that tests and callers with unusual stores can
// adjust them before the first Resolve.
var (
	// DialTimeout bounds connecting to the endpoint, so that one that is
	// down fails fast.
	DialTimeout = 5 * time.Second
	// IOTimeout bounds each network read or write once connected, so that
	// a hung server surfaces as storage.ErrUnavailable.
	IOTimeout = 60 * time.Second
	// PartSize is the size of a multipart upload's parts (S3's minimum is
	// 5 MiB); past 1000 parts each further thousand is one PartSize larger,
	// so that S3's 10,000 parts reach 440 GiB.
	PartSize = 8 << 20
	// Uploads bounds the requests with a body in flight per store (parts,
	// and the PUTs of deferred commits), across all files being written:
	// with the file buffers, what bounds memory. 10, like PartSize 8 MiB,
	// is the AWS CLI's default.
	Uploads = 10
	// ClaimTTL is how long a claim stays valid without a refresh; its
	// holder refreshes it every ClaimTTL/4. STATEUTIL_S3_CLAIM_TTL (a Go
	// duration) overrides it.
	ClaimTTL = 60 * time.Second
)

// Options are the settings that do not come from the AWS configuration.
// Register reads them when a location is resolved, so flags may fill them
// in after the registry is built.
type Options struct {
	// Endpoint is the store's URL (http://127.0.0.1:9000); empty means
	// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, or
	// AWS itself. A bare host:port means https.
	Endpoint string
	// PathStyle addresses buckets as endpoint/bucket/key instead of
	// bucket.endpoint/key. STATEUTIL_S3_PATH_STYLE=1 sets it too, and it
	// is implied for an endpoint that is an IP address or localhost.
	PathStyle bool
}

// Register makes every scheme of Schemes resolve to S3 with o.
func Register(r *storage.Registry, o *Options) {
	for _, scheme := range Schemes {
		r.Register(scheme, Opener(o))
	}
}

// Opener returns the storage.Opener of S3 URIs: scheme://bucket/key.
func Opener(o *Options) storage.Opener {
	return func(ctx context.Context, u *url.URL) (storage.Storage, error) {
		if u.Host == "" {
			return nil, fmt.Errorf("%q names no bucket (want %s://bucket/path)", u.String(), u.Scheme)
		}
		if u.User != nil || u.Port() != "" {
			return nil, fmt.Errorf("%q: an S3 location is %s://bucket/path; give the endpoint with --s3-endpoint or AWS_ENDPOINT_URL", u.String(), u.Scheme)
		}
		var opts Options
		if o != nil {
			opts = *o
		}
		c, err := client(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("connect %s://%s/: %w", u.Scheme, u.Host, err)
		}
		return &store{c: c, scheme: u.Scheme, bucket: u.Host}, nil
	}
}

// conn is one configured client and what its stores share.
type conn struct {
	api      *awss3.Client
	endpoint string // for messages; "" for AWS
	uploads  chan struct{}
	dirs     sync.Map // "bucket/key" of directories known to exist: time.Time
}

var (
	connsMu sync.Mutex
	// Storage has no Close: clients are shared per configuration rather
	// than one connection pool per Resolve.
	conns = map[string]*conn{}
)

// client returns the shared client for o and the AWS environment.
func client(ctx context.Context, o Options) (*conn, error) {
	if v := os.Getenv("STATEUTIL_S3_PATH_STYLE"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("STATEUTIL_S3_PATH_STYLE=%q: want true or false", v)
		}
		o.PathStyle = o.PathStyle || on
	}
	endpoint := o.Endpoint
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	key := fmt.Sprintf("%s|%v|%s", endpoint, o.PathStyle, strings.Join(env, "\x00"))
	connsMu.Lock()
	defer connsMu.Unlock()
	if c, ok := conns[key]; ok {
		return c, nil
	}

	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &deadlineConn{Conn: c}, nil
		}
		tr.MaxIdleConnsPerHost = 32
		tr.ResponseHeaderTimeout = IOTimeout
	})
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(httpClient))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		// Signing needs one; custom endpoints rarely care which, and on
		// AWS a bucket elsewhere is refused until AWS_REGION names it.
		cfg.Region = "us-east-1"
	}
	api := awss3.NewFromConfig(cfg, func(so *awss3.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
		base := endpoint
		if so.BaseEndpoint != nil {
			base = *so.BaseEndpoint
		}
		so.UsePathStyle = o.PathStyle || hostIsLiteral(base)
		// Stores that send no checksum with a GET (moto, many others) would
		// make the SDK log a line to stderr for every read.
		so.DisableLogOutputChecksumValidationSkipped = true
	})
	shown := endpoint
	if shown == "" && cfg.BaseEndpoint != nil {
		shown = *cfg.BaseEndpoint
	}
	c := &conn{api: api, endpoint: shown, uploads: make(chan struct{}, max(1, Uploads))}
	conns[key] = c
	return c, nil
}

// hostIsLiteral reports whether endpoint's host is an IP address or
// localhost, where a bucket cannot be a subdomain.
func hostIsLiteral(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || net.ParseIP(h) != nil
}

// deadlineConn gives every read and write a deadline, so that a server that
// stops answering mid-transfer fails the request instead of hanging it.
type deadlineConn struct{ net.Conn }

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(IOTimeout))
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(IOTimeout))
	return c.Conn.Write(b)
}

// store is one bucket.
type store struct {
	c      *conn
	scheme string
	bucket string
}

func (s *store) URI(p string) string { return s.scheme + "://" + s.bucket + p }

// key is the object key of a storage path: no leading slash, "" for the
// bucket's root.
func key(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// dirPrefix is the prefix of what lies below key: "key/", or "" at the root.
func dirPrefix(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}

// Directories this process made or saw are remembered (with a time for
// Stat), which saves the requests that a format's probes, MkdirAll and
// Create would otherwise repeat; RemoveAll and Remove forget them.
func (s *store) knownDir(k string) bool {
	_, ok := s.c.dirs.Load(s.bucket + "/" + k)
	return ok
}

func (s *store) dirTime(k string) (time.Time, bool) {
	v, ok := s.c.dirs.Load(s.bucket + "/" + k)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

func (s *store) rememberDir(k string) { s.rememberDirAt(k, time.Now()) }

func (s *store) rememberDirAt(k string, t time.Time) {
	for ; k != "" && k != "."; k = path.Dir(k) {
		if _, loaded := s.c.dirs.LoadOrStore(s.bucket+"/"+k, t); loaded {
			return
		}
	}
}

// forgetDirs drops k and everything below it from the known directories.
func (s *store) forgetDirs(k string) {
	prefix := s.bucket + "/" + k
	s.c.dirs.Range(func(d, _ any) bool {
		if name := d.(string); name == prefix || strings.HasPrefix(name, prefix+"/") || k == "" && strings.HasPrefix(name, s.bucket+"/") {
			s.c.dirs.Delete(d)
		}
		return true
	})
}
