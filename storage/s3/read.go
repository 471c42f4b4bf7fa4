package s3

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateutil/stateutil/storage"
)

// file reads one object. Every request carries If-Match with the ETag
// seen at Open, so an object replaced while it is read fails the read
// rather than mixing two versions.
type file struct {
	s    *store
	ctx  context.Context // Open's, without its cancellation: a file may outlive it, as on disk
	path string
	key  string
	size int64
	etag *string
	head []byte // the object's first bytes, fetched by Open

	mu     sync.Mutex
	pos    int64         // offset of the next Read; ReadAt leaves it alone
	body   io.ReadCloser // the open GET that Read consumes, at bodyAt
	bodyAt int64

	// A reader that calls ReadAt where its last call ended (a scan, in
	// chunks) continues one open GET instead of a request per chunk.
	amu     sync.Mutex
	seq     io.ReadCloser
	seqAt   int64
	lastEnd int64
}

// headBytes is how much of an object Open fetches with its first request:
// all of a small file (most of a snapshot's are), so that reading it takes
// no further request, and the start of a large one, where its header is.
const headBytes = 64 << 10

func (s *store) Open(ctx context.Context, p string) (storage.File, error) {
	k := key(p)
	if k == "" {
		return nil, fmt.Errorf("open %s: is a directory, expected a file", s.URI(p))
	}
	f := &file{s: s, ctx: context.WithoutCancel(ctx), path: p, key: k, lastEnd: -1}
	rng := fmt.Sprintf("bytes=0-%d", headBytes-1)
	out, err := s.c.api.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: &k, Range: &rng})
	if code(err) == "InvalidRange" || status(err) == 416 {
		// An empty object has no byte 0.
		head, herr := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &k})
		if herr == nil {
			f.size, f.etag = aws.ToInt64(head.ContentLength), head.ETag
			return f, nil
		}
		err = herr
	}
	if err != nil {
		if isNotFound(err) {
			if dir, derr := s.isDir(ctx, k); derr == nil && dir {
				return nil, fmt.Errorf("open %s: is a directory, expected a file", s.URI(p))
			}
		}
		return nil, s.wrap("open", p, err)
	}
	defer out.Body.Close()
	f.etag = out.ETag
	f.size = aws.ToInt64(out.ContentLength)
	if cr := aws.ToString(out.ContentRange); cr != "" {
		// "bytes 0-65535/1234567": the object's size follows the slash.
		if _, total, ok := strings.Cut(cr, "/"); ok {
			if n, err := strconv.ParseInt(total, 10, 64); err == nil {
				f.size = n
			}
		}
	}
	want := min(f.size, headBytes)
	f.head = make([]byte, want)
	if _, err := io.ReadFull(out.Body, f.head); err != nil {
		return nil, s.wrap("open", p, err)
	}
	return f, nil
}

func (f *file) Size() int64  { return f.size }
func (f *file) Name() string { return f.s.URI(f.path) }

func (f *file) Close() error {
	f.mu.Lock()
	f.drop()
	f.mu.Unlock()
	f.amu.Lock()
	f.dropSeq()
	f.amu.Unlock()
	return nil
}

func (f *file) dropSeq() {
	if f.seq != nil {
		f.seq.Close()
		f.seq = nil
	}
}

func (f *file) drop() {
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
}

// get opens a GET of [off, end) (end < 0: to the end of the object).
func (f *file) get(off, end int64) (io.ReadCloser, error) {
	rng := fmt.Sprintf("bytes=%d-", off)
	if end >= 0 {
		rng = fmt.Sprintf("bytes=%d-%d", off, end-1)
	}
	out, err := f.s.c.api.GetObject(f.ctx, &awss3.GetObjectInput{Bucket: &f.s.bucket, Key: &f.key, Range: &rng, IfMatch: f.etag})
	if err != nil {
		if code(err) == "PreconditionFailed" || status(err) == 412 {
			return nil, fmt.Errorf("read %s: the object was replaced while it was being read", f.Name())
		}
		return nil, f.s.wrap("read", f.path, err)
	}
	return out.Body, nil
}

// Read streams the object from one GET, reopened where a failure or a
// seek left it.
func (f *file) Read(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pos >= f.size {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	if f.pos < int64(len(f.head)) {
		n := copy(b, f.head[f.pos:])
		f.pos += int64(n)
		return n, nil
	}
	if f.body == nil || f.bodyAt != f.pos {
		f.drop()
		body, err := f.get(f.pos, -1)
		if err != nil {
			return 0, err
		}
		f.body, f.bodyAt = body, f.pos
	}
	b = b[:min(int64(len(b)), f.size-f.pos)]
	n, err := f.body.Read(b)
	f.pos += int64(n)
	f.bodyAt += int64(n)
	switch {
	case err == io.EOF && f.pos < f.size:
		f.drop()
		if n == 0 {
			return 0, fmt.Errorf("read %s: %w: the object ended at %d of %d bytes", f.Name(), io.ErrUnexpectedEOF, f.pos, f.size)
		}
		err = nil
	case err != nil && err != io.EOF:
		f.drop()
		return n, f.s.wrap("read", f.path, err)
	}
	if f.pos >= f.size {
		f.drop()
	}
	return n, nil
}

// ReadAt reads with one ranged GET of exactly the bytes asked for, so that
// reading one key group downloads that key group only; a call that starts
// where the previous one ended opens a GET of the rest of the object,
// which the calls after it continue while they stay sequential. Safe for
// concurrent use.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", f.Name(), off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	want := min(int64(len(b)), f.size-off)
	if off+want <= int64(len(f.head)) {
		copy(b, f.head[off:off+want])
		if want < int64(len(b)) {
			return int(want), io.EOF
		}
		return int(want), nil
	}
	if n, ok := f.readSeq(b[:want], off); ok {
		if want < int64(len(b)) {
			return n, io.EOF
		}
		return n, nil
	}
	body, err := f.get(off, off+want)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, b[:want])
	if err != nil {
		return n, f.s.wrap("read", f.path, fmt.Errorf("%w after %d of %d bytes at offset %d", io.ErrUnexpectedEOF, n, want, off))
	}
	f.amu.Lock()
	f.lastEnd = off + want
	f.amu.Unlock()
	if want < int64(len(b)) {
		return n, io.EOF
	}
	return n, nil
}

// readSeq fills b from the sequential GET when off continues it (opening
// it when off continues the last ReadAt); false when the caller must make
// a ranged GET, which a failed stream also falls back to.
func (f *file) readSeq(b []byte, off int64) (int, bool) {
	f.amu.Lock()
	defer f.amu.Unlock()
	if f.seq == nil || f.seqAt != off {
		if off != f.lastEnd || off+int64(len(b)) >= f.size {
			return 0, false
		}
		f.dropSeq()
		body, err := f.get(off, -1)
		if err != nil {
			return 0, false
		}
		f.seq, f.seqAt = body, off
	}
	n, err := io.ReadFull(f.seq, b)
	if err != nil {
		f.dropSeq()
		f.lastEnd = -1
		return 0, false
	}
	f.seqAt += int64(n)
	f.lastEnd = f.seqAt
	if f.seqAt >= f.size {
		f.dropSeq()
	}
	return n, true
}
