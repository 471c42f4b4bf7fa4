// Package s3 is storage on Amazon S3 and S3-compatible object stores
// (MinIO, Ceph, SeaweedFS): s3://bucket/key, and Flink's s3a:// and s3p://
// spellings of the same. Credentials and region come from the AWS SDK's
// standard chain; the endpoint and path-style addressing from Options, the
// SDK's AWS_ENDPOINT_URL(_S3) or STATEUTIL_S3_PATH_STYLE.
//
// S3 has objects, not files: a directory is a key prefix, MkdirAll writes
// a zero-byte marker object ("dir/"), and a file appears whole under its
// final name when its upload completes, so nothing needs renaming. Rename
// exists (server-side copy, then delete) but is not atomic. Claims are
// created with If-None-Match: * and refreshed and released If-Match on
// the ETag last written (see objstore).
package s3

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// Schemes are the URI schemes served: stateutil's s3:// and the s3a://
// (Hadoop) and s3p:// (Presto) schemes Flink writes, all the same store.
var Schemes = []string{"s3", "s3a", "s3p"}

// Tuning. Variables so that tests and callers with unusual stores can
// adjust them before the first Resolve.
var (
	// PartSize is the size of a multipart upload's parts (S3's minimum is
	// 5 MiB), and the size up to which a file goes up with one PUT; past
	// 1000 parts each further thousand is one PartSize larger, so that
	// S3's 10,000 parts reach 440 GiB.
	PartSize = 8 << 20
	// Uploads bounds the parts in flight per store, across all files being
	// written: with the file buffers, what bounds memory. 10, like
	// PartSize 8 MiB, is the AWS CLI's default.
	Uploads = 10
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
		return c.store(u.Scheme, u.Host), nil
	}
}

// conn is one configured client and what its stores share.
type conn struct {
	api      *awss3.Client
	endpoint string // for messages; "" for AWS
	uploads  chan struct{}
	slots    chan struct{}
	dirs     objstore.Buckets
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

	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(objstore.Configure)))
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
	c := &conn{api: api, endpoint: shown, uploads: make(chan struct{}, max(1, Uploads)), slots: objstore.NewSlots()}
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

func (c *conn) store(scheme, bucket string) storage.Storage {
	b := &bucketOf{c: c, scheme: scheme, name: bucket}
	return objstore.New(b, objstore.Options{Dirs: c.dirs.Dirs(bucket), Slots: c.slots, ClaimTTLVar: "STATEUTIL_S3_CLAIM_TTL", PutLimit: PartSize})
}
