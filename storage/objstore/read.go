package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/stateutil/stateutil/storage"
)

// file reads one object. Every request names the version seen at Open, so
// an object replaced while it is read fails the read rather than mixing
// two versions.
type file struct {
	s       *store
	ctx     context.Context // Open's, without its cancellation: a file may outlive it, as on disk
	path    string
	key     string
	size    int64
	version string
	head    []byte // the object's first bytes, fetched by Open

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
	obj, body, err := s.b.Get(ctx, k, "", 0, headBytes)
	if errors.Is(err, storage.ErrNotFound) {
		if dir, derr := s.isDir(ctx, k); derr == nil && dir {
			return nil, fmt.Errorf("open %s: is a directory, expected a file", s.URI(p))
		}
	}
	if err != nil {
		return nil, s.wrap("open", p, err)
	}
	defer body.Close()
	if obj.Dir {
		return nil, fmt.Errorf("open %s: is a directory, expected a file", s.URI(p))
	}
	f := &file{s: s, ctx: context.WithoutCancel(ctx), path: p, key: k, size: obj.Size, version: obj.Version, lastEnd: -1}
	f.head = make([]byte, min(f.size, headBytes))
	if _, err := io.ReadFull(body, f.head); err != nil {
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
	n := int64(-1)
	if end >= 0 {
		n = end - off
	}
	_, body, err := f.s.b.Get(f.ctx, f.key, f.version, off, n)
	if errors.Is(err, ErrPrecondition) || errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("read %s: the object was replaced or removed while it was being read", f.Name())
	}
	if err != nil {
		return nil, f.s.wrap("read", f.path, err)
	}
	return body, nil
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
	var eof error
	if want < int64(len(b)) {
		eof = io.EOF
	}
	if off+want <= int64(len(f.head)) {
		copy(b, f.head[off:off+want])
		return int(want), eof
	}
	if n, ok := f.readSeq(b[:want], off); ok {
		return n, eof
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
	return n, eof
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
