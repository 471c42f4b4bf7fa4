package s3_test

// These tests talk to a real S3-compatible server (moto, on loopback):
//
//	scripts/s3-start.sh && . .cache/s3.env && go test ./storage/s3/
//
// Without it they skip, except under CI=true or STATEUTIL_REQUIRE_S3=1,
// where they fail. TestServerStopsMidWrite restarts the server, which
// empties it: it runs last, and nothing else may use the server meanwhile
// (scripts/test.sh runs this package before the others).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3"
	"github.com/stateutil/stateutil/storage/s3/s3test"
	"github.com/stateutil/stateutil/storage/storagetest"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	if storagetest.RunChild(s3test.Registry()) {
		return
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	s3test.Location(t)
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return s3test.Resolve(t, s3test.Dir(t))
	})
}

// Claims, killed writers and deferred commits, as every object store.
func TestObjectStore(t *testing.T) {
	s3test.Location(t)
	storagetest.RunObjectStore(t, s3test.Server, "STATEUTIL_S3_CLAIM_TTL", s3.PartSize)
}

// Flink's s3a:// and s3p:// name the same objects as s3://, and each
// storage renders locations in the scheme it was reached by.
func TestSchemesShareObjects(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("same")); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"s3a", "s3p"} {
		uri := scheme + strings.TrimPrefix(dir, "s3") + "/f"
		other, q := s3test.Resolve(t, uri)
		b, err := storage.ReadAll(ctx, other, q, 100)
		if err != nil || string(b) != "same" {
			t.Fatalf("%s: %q, %v", uri, b, err)
		}
		if got := other.URI(q); got != uri {
			t.Fatalf("URI = %q, want %q", got, uri)
		}
	}
}

// proxy is a reverse proxy in front of the test server that counts what
// passes: response bytes, and part uploads in flight.
type proxy struct {
	*httptest.Server
	received atomic.Int64
	gets     atomic.Int32 // GETs of objects
	parts    atomic.Int32 // part uploads in flight
	maxParts atomic.Int32
	// gate, when set, holds every part upload until this many are in
	// flight at once (or 30 s pass), proving they are sent in parallel.
	gate     int32
	gateOpen chan struct{}
	gateOnce sync.Once
	// intercept, when set, sees every request first; it answers those it
	// returns true for itself.
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	s3test.Location(t)
	target, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{gateOpen: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		r.Body = &countingBody{ReadCloser: r.Body, n: &p.received}
		return nil
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.intercept != nil && p.intercept(w, r) {
			return
		}
		if r.Method == http.MethodGet && !r.URL.Query().Has("list-type") {
			p.gets.Add(1)
		}
		if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") != "" {
			n := p.parts.Add(1)
			defer p.parts.Add(-1)
			for m := p.maxParts.Load(); n > m && !p.maxParts.CompareAndSwap(m, n); m = p.maxParts.Load() {
			}
			if p.gate > 0 {
				if n >= p.gate {
					p.gateOnce.Do(func() { close(p.gateOpen) })
				}
				select {
				case <-p.gateOpen:
				case <-time.After(30 * time.Second):
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// via resolves uri through the proxy.
func (p *proxy) via(t *testing.T, uri string) (storage.Storage, string) {
	t.Helper()
	r := storage.NewRegistry()
	s3.Register(r, &s3.Options{Endpoint: p.URL})
	st, q, err := r.Resolve(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	return st, q
}

func setPartSize(t *testing.T, n int) {
	old := s3.PartSize
	s3.PartSize = n
	t.Cleanup(func() { s3.PartSize = old })
}

// A file larger than a part goes up as a multipart upload whose parts are
// in flight together, never more of them than s3.Uploads.
func TestMultipartInParallel(t *testing.T) {
	setPartSize(t, 5<<20)
	px := newProxy(t)
	px.gate = 2
	st, p := px.via(t, s3test.Dir(t))
	data := make([]byte, 6*s3.PartSize+12345)
	rand.New(rand.NewSource(7)).Read(data)
	f := path.Join(p, "big")
	w, err := st.Create(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	for b := data; len(b) > 0; {
		n := min(len(b), 1<<20+3)
		if _, err := w.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if _, err := st.Stat(ctx, f); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat before Commit = %v, want not found", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-px.gateOpen:
	default:
		t.Fatal("no two parts were ever in flight at once")
	}
	if m := px.maxParts.Load(); m > int32(s3.Uploads) {
		t.Fatalf("%d parts in flight at once, more than s3.Uploads = %d", m, s3.Uploads)
	}
	t.Logf("at most %d parts in flight", px.maxParts.Load())
	got, err := storage.ReadAll(ctx, st, f, 1<<30)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(data))
	}
	api, bucket, key := rawClient(t, s3test.Location(t), f)
	head, err := api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || !strings.HasSuffix(strings.Trim(*head.ETag, `"`), "-7") {
		t.Fatalf("ETag %v (%v): want a 7-part multipart upload", head.ETag, err)
	}
	// The store kept the parts' CRC32s, not one it computed over the whole
	// object on completion.
	if head.ChecksumCRC32 == nil {
		t.Fatal("no CRC32 checksum on the object, want the composite of its parts'")
	}
	var crcs []byte
	for b := data; len(b) > 0; b = b[min(len(b), s3.PartSize):] {
		crcs = binary.BigEndian.AppendUint32(crcs, crc32.ChecksumIEEE(b[:min(len(b), s3.PartSize)]))
	}
	want := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(crcs)))
	if got, _, _ := strings.Cut(*head.ChecksumCRC32, "-"); got != want {
		t.Fatalf("composite CRC32 %s, want %s (the CRC32 of the parts' CRC32s)", *head.ChecksumCRC32, want)
	}
}

// isCompletion reports whether r completes the multipart upload of an
// object whose key ends in name.
func isCompletion(r *http.Request, name string) bool {
	return r.Method == http.MethodPost && r.URL.Query().Has("uploadId") && strings.HasSuffix(r.URL.Path, "/"+name)
}

// writeFile writes data to p of st through a Pending created under ctx.
func writeFile(t *testing.T, ctx context.Context, st storage.Storage, p string, data []byte) storage.Pending {
	t.Helper()
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	return w
}

// Under storage.DeferCommits a multipart upload completes in the
// background: its Commit returns with the object not yet in place, the
// next file goes up meanwhile, and Wait returns once both are there. The
// proxy holds the first file's completion until the second file arrives.
func TestDeferredCommitOverlapsNextFile(t *testing.T) {
	setPartSize(t, 5<<20)
	px := newProxy(t)
	secondSent := make(chan struct{})
	var once sync.Once
	var overlapped atomic.Bool
	px.intercept = func(_ http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/second"):
			once.Do(func() { close(secondSent) })
		case isCompletion(r, "first"):
			select {
			case <-secondSent:
				overlapped.Store(true)
			case <-time.After(30 * time.Second):
			}
		}
		return false
	}
	st, p := px.via(t, s3test.Dir(t))
	dctx, commits := storage.DeferCommits(ctx)
	first := bytes.Repeat([]byte("first "), s3.PartSize/3)
	if err := writeFile(t, dctx, st, path.Join(p, "first"), first).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, path.Join(p, "first")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat of first while its completion is held = %v, want not found", err)
	}
	if err := writeFile(t, dctx, st, path.Join(p, "second"), []byte("second")).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := commits.Wait(); err != nil {
		t.Fatal(err)
	}
	if !overlapped.Load() {
		t.Fatal("first's upload completed before second was sent")
	}
	for name, want := range map[string][]byte{"first": first, "second": []byte("second")} {
		got, err := storage.ReadAll(ctx, st, path.Join(p, name), 1<<30)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s read back: %d bytes (%v), want the %d written", name, len(got), err, len(want))
		}
	}
}

// A deferred commit that fails is Wait's error, naming the file, and
// leaves neither the object nor its upload.
func TestDeferredCommitFailureIsReported(t *testing.T) {
	setPartSize(t, 5<<20)
	px := newProxy(t)
	px.intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if !isCompletion(r, "refused") {
			return false
		}
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return true
	}
	dir := s3test.Dir(t)
	st, p := px.via(t, dir)
	f := path.Join(p, "refused")
	dctx, commits := storage.DeferCommits(ctx)
	if err := writeFile(t, dctx, st, f, make([]byte, 2*s3.PartSize+1)).Commit(); err != nil {
		t.Fatal(err)
	}
	err := commits.Wait()
	if !errors.Is(err, storage.ErrPermission) || !strings.Contains(err.Error(), dir+"/refused") {
		t.Fatalf("Wait = %v, want permission denied naming the file", err)
	}
	if _, err := st.Stat(ctx, f); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after the failed completion = %v, want not found", err)
	}
	api, bucket, key := rawClient(t, dir, f)
	if n := uploads(t, api, bucket, key); n != 0 {
		t.Fatalf("%d uploads left after the failed completion", n)
	}
}

// rawClient is an SDK client for checks the storage does not expose.
func rawClient(t *testing.T, base, p string) (*awss3.Client, string, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	api := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: ptr(os.Getenv("AWS_ENDPOINT_URL")), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), "")})
	return api, u.Host, strings.TrimPrefix(p, "/")
}

func ptr(s string) *string { return &s }

// uploads lists the multipart uploads under way below prefix.
func uploads(t *testing.T, api *awss3.Client, bucket, prefix string) int {
	t.Helper()
	out, err := api.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// Abort of a multipart upload leaves neither an object nor the upload.
func TestAbortMultipart(t *testing.T) {
	setPartSize(t, 5<<20)
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	f := path.Join(p, "aborted")
	w, err := st.Create(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 3*s3.PartSize)); err != nil {
		t.Fatal(err)
	}
	api, bucket, key := rawClient(t, dir, f)
	if n := uploads(t, api, bucket, key); n != 1 {
		t.Fatalf("%d uploads under way while writing, want 1", n)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, f); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after Abort = %v, want not found", err)
	}
	if n := uploads(t, api, bucket, key); n != 0 {
		t.Fatalf("%d uploads left after Abort", n)
	}
}

// ReadAt fetches the bytes asked for, not the object: reading one key
// group must not download a whole state file.
func TestReadAtFetchesOnlyTheRange(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	data := make([]byte, 16<<20)
	rand.New(rand.NewSource(3)).Read(data)
	f := path.Join(p, "state")
	if err := storage.WriteFile(ctx, st, f, data); err != nil {
		t.Fatal(err)
	}
	px := newProxy(t)
	pst, q := px.via(t, dir)
	r, err := pst.Open(ctx, path.Join(q, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := px.received.Load()
	buf := make([]byte, 1000)
	if _, err := r.ReadAt(buf, 10<<20); err != nil || !bytes.Equal(buf, data[10<<20:10<<20+1000]) {
		t.Fatalf("ReadAt: %v, or wrong bytes", err)
	}
	if got := px.received.Load() - before; got > 64<<10 {
		t.Fatalf("ReadAt of 1000 bytes fetched %d bytes", got)
	}

	// A scan in chunks, as the formats' readers make, continues one GET
	// rather than making one per chunk.
	gets := px.gets.Load()
	chunk := make([]byte, 1<<20)
	for off := int64(1 << 20); off < int64(len(data)); off += int64(len(chunk)) {
		n, err := r.ReadAt(chunk, off)
		if n != len(chunk) || (err != nil && err != io.EOF) || !bytes.Equal(chunk, data[off:off+int64(n)]) {
			t.Fatalf("ReadAt(off %d) = %d, %v, or wrong bytes", off, n, err)
		}
	}
	if got := px.gets.Load() - gets; got > 3 {
		t.Fatalf("15 sequential ReadAts made %d GETs, want at most 3", got)
	}
}

// Missing keys and buckets are storage.ErrNotFound, naming what is missing.
func TestNotFound(t *testing.T) {
	base := s3test.Location(t)
	u, _ := url.Parse(base)
	st, _ := s3test.Resolve(t, "s3://no-such-bucket-stateutil/x")
	_, err := st.Stat(ctx, "/x")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "no-such-bucket-stateutil") {
		t.Fatalf("Stat in a missing bucket = %v, want not found naming the bucket", err)
	}
	st, _ = s3test.Resolve(t, "s3://"+u.Host+"/")
	_, err = st.Open(ctx, "/no/such/key")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "s3://"+u.Host+"/no/such/key") {
		t.Fatalf("Open of a missing key = %v, want not found naming the URI", err)
	}
}

// A closed loopback port stands in for an endpoint that is down.
func TestUnreachableEndpoint(t *testing.T) {
	s3test.Location(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := storage.NewRegistry()
	s3.Register(r, &s3.Options{Endpoint: "http://" + addr})
	st, p, err := r.Resolve(ctx, "s3://bucket/snapshots/1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, p)
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "storage unavailable") ||
		!strings.Contains(err.Error(), "s3://bucket/snapshots/1") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Stat against a closed port = %v, want storage unavailable naming the URI and endpoint", err)
	}
	t.Logf("error: %v", err)
}

// Credentials the server does not accept are storage.ErrPermission,
// naming bucket and key. A second moto, with authentication on, answers.
func TestAccessDenied(t *testing.T) {
	s3test.Location(t)
	server := strings.Fields(os.Getenv("STATEUTIL_TEST_S3_SERVER"))
	if len(server) != 2 {
		t.Fatal("STATEUTIL_TEST_S3_SERVER is not set (scripts/s3-start.sh writes it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	c := exec.Command(server[0], server[1], "127.0.0.1", port, path.Join(t.TempDir(), "ready"))
	c.Env = append(os.Environ(), "INITIAL_NO_AUTH_ACTION_COUNT=0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	r := storage.NewRegistry()
	s3.Register(r, &s3.Options{Endpoint: "http://" + addr})
	st, p, err := r.Resolve(ctx, "s3://locked/dir/file")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = storage.WriteFile(ctx, st, p, []byte("x"))
		if !errors.Is(err, storage.ErrUnavailable) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // still starting
	}
	if !errors.Is(err, storage.ErrPermission) || !strings.Contains(err.Error(), `bucket "locked", key "dir/file"`) {
		t.Fatalf("write with credentials the server rejects = %v, want permission denied naming bucket and key", err)
	}
	t.Logf("error: %v", err)
}

// The endpoint may come from Options alone (the --s3-endpoint flag), a
// bare host:port is https, and STATEUTIL_S3_PATH_STYLE must be a boolean.
func TestEndpointOption(t *testing.T) {
	dir := s3test.Dir(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	st, p := s3test.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("via env")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	os.Unsetenv("AWS_ENDPOINT_URL")
	t.Setenv("STATEUTIL_S3_PATH_STYLE", "true")
	r := storage.NewRegistry()
	s3.Register(r, &s3.Options{Endpoint: endpoint, PathStyle: true})
	other, q, err := r.Resolve(ctx, dir+"/f")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := storage.ReadAll(ctx, other, q, 100); err != nil || string(b) != "via env" {
		t.Fatalf("read through Options.Endpoint: %q, %v", b, err)
	}
	t.Setenv("STATEUTIL_S3_PATH_STYLE", "maybe")
	if _, _, err := r.Resolve(ctx, dir+"/f"); err == nil || !strings.Contains(err.Error(), "STATEUTIL_S3_PATH_STYLE") {
		t.Fatalf("Resolve with STATEUTIL_S3_PATH_STYLE=maybe = %v, want an error naming it", err)
	}
}

// A listing of more keys than S3 returns at once (1000) follows its
// pages, and removing the tree deletes them all.
func TestListingsFollowPages(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	const n = 1001
	if err := st.MkdirAll(ctx, path.Join(p, "d")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := storage.WriteFile(ctx, st, path.Join(p, "d", fmt.Sprintf("f%04d", i)), nil); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	entries, err := st.List(ctx, path.Join(p, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n || entries[0].Name != "f0000" || entries[n-1].Name != fmt.Sprintf("f%04d", n-1) {
		t.Fatalf("List of %d files: %d entries", n, len(entries))
	}
	if err := st.RemoveAll(ctx, path.Join(p, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, path.Join(p, "d")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after RemoveAll of %d files = %v, want not found", n, err)
	}
}

// Credentials come from the SDK's standard chain: with none in the
// environment, from the profile AWS_PROFILE names in the shared
// credentials file.
func TestCredentialsFromProfile(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("chain")); err != nil {
		t.Fatal(err)
	}
	px := newProxy(t)
	var auth atomic.Value
	px.intercept = func(_ http.ResponseWriter, r *http.Request) bool {
		auth.Store(r.Header.Get("Authorization"))
		return false
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	read := func() (string, error) {
		st, q := px.via(t, dir+"/f")
		b, err := storage.ReadAll(ctx, st, q, 100)
		return string(b), err
	}

	creds := path.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("[stateutil]\naws_access_key_id = from-profile\naws_secret_access_key = secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_PROFILE", "stateutil")
	if b, err := read(); err != nil || b != "chain" {
		t.Fatalf("read with the profile's credentials: %q, %v", b, err)
	}
	if a := auth.Load().(string); !strings.Contains(a, "Credential=from-profile/") {
		t.Fatalf("request signed as %q, want the profile's key", a)
	}
}

// Web identity (IRSA): with only a token file and a role in the
// environment, the credentials come from STS's AssumeRoleWithWebIdentity,
// here moto's STS behind the proxy (AWS_ENDPOINT_URL_STS), and requests are
// signed with the temporary key it returns.
func TestCredentialsFromWebIdentity(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("chain")); err != nil {
		t.Fatal(err)
	}
	px := newProxy(t)
	var mu sync.Mutex
	var assumed url.Values
	var s3Auth string
	px.intercept = func(_ http.ResponseWriter, r *http.Request) bool {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		defer mu.Unlock()
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") == "AssumeRoleWithWebIdentity" {
			assumed = form
		} else if r.Method == http.MethodGet {
			s3Auth = r.Header.Get("Authorization")
		}
		return false
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	tmp := t.TempDir()
	token := path.Join(tmp, "token")
	empty := path.Join(tmp, "empty")
	for _, f := range []string{token, empty} {
		content := ""
		if f == token {
			content = "a-web-identity-token"
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/stateutil-reader")
	t.Setenv("AWS_ROLE_SESSION_NAME", "stateutil-test")
	t.Setenv("AWS_ENDPOINT_URL_STS", px.URL)

	via, q := px.via(t, dir+"/f")
	if b, err := storage.ReadAll(ctx, via, q, 100); err != nil || string(b) != "chain" {
		t.Fatalf("read with web identity credentials: %q, %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if assumed == nil {
		t.Fatal("no AssumeRoleWithWebIdentity call reached STS")
	}
	if assumed.Get("WebIdentityToken") != "a-web-identity-token" || assumed.Get("RoleArn") != "arn:aws:iam::123456789012:role/stateutil-reader" {
		t.Fatalf("AssumeRoleWithWebIdentity with token %q and role %q, want the token file's and AWS_ROLE_ARN", assumed.Get("WebIdentityToken"), assumed.Get("RoleArn"))
	}
	// STS's temporary keys start with ASIA; nothing else here could sign
	// with one.
	if !strings.Contains(s3Auth, "Credential=ASIA") {
		t.Fatalf("read signed as %q, want STS's temporary key", s3Auth)
	}
}

func TestLocationsNeedABucket(t *testing.T) {
	for _, loc := range []string{"s3:///path", "s3://bucket:9000/path"} {
		if _, _, err := s3test.Registry().Resolve(ctx, loc); err == nil {
			t.Errorf("Resolve(%q) succeeded, want an error", loc)
		}
	}
}

// A writer killed mid-upload leaves no object, only an upload under way,
// which RemoveAll of the directory aborts.
func TestKilledUploadLeavesNothing(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	f := path.Join(p, "state")
	storagetest.Kill(t, storagetest.StartChild(t, "upload", dir+"/state", 3*s3.PartSize+100))
	if _, err := st.Stat(ctx, f); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after the writer was killed = %v, want not found", err)
	}
	if names, err := st.List(ctx, p); err != nil || len(names) != 0 {
		t.Fatalf("List after the writer was killed = %v, %v; want nothing", names, err)
	}
	api, bucket, key := rawClient(t, dir, p)
	if n := uploads(t, api, bucket, key+"/"); n != 1 {
		t.Fatalf("%d uploads under way after the kill, want the killed writer's 1", n)
	}
	if err := st.RemoveAll(ctx, p); err != nil {
		t.Fatal(err)
	}
	if n := uploads(t, api, bucket, key+"/"); n != 0 {
		t.Fatalf("%d uploads left after RemoveAll", n)
	}
}

// The server stopping mid-write fails the write with storage unavailable,
// naming the file. Runs last: the restart empties the server.
func TestServerStopsMidWrite(t *testing.T) {
	setPartSize(t, 5<<20)
	old := s3.IOTimeout
	s3.IOTimeout = 5 * time.Second
	t.Cleanup(func() { s3.IOTimeout = old })
	storagetest.ServerStopsMidWrite(t, s3test.Server, s3.PartSize)
}
