package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stateutil/stateutil/storage"
)

// pending writes one object under its final name. Up to PartSize it is
// held in memory and sent with one PUT on Commit; past that it becomes a
// multipart upload whose parts are sent while the caller goes on writing,
// at most Uploads at once per store. Either way S3 shows nothing at the
// key until Commit: a PUT that never ran, or an upload never completed,
// leaves no object.
type pending struct {
	s    *store
	ctx  context.Context // cancels part uploads on Abort
	stop context.CancelFunc
	path string
	key  string
	buf  []byte
	done bool

	upload *string // multipart upload id, once started
	next   int32   // number of the next part
	wg     sync.WaitGroup
	mu     sync.Mutex
	parts  []types.CompletedPart
	err    error // the first failed part
}

var bufPool sync.Pool

func (s *store) Create(ctx context.Context, p string) (storage.Pending, error) {
	k := key(p)
	if k == "" {
		return nil, fmt.Errorf("create %s: is a directory", s.URI(p))
	}
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("create", p, err)
	}
	// Local disk and HDFS refuse a file in a directory that does not
	// exist; so does this, so that a mistyped location fails at once.
	if parent := path.Dir(k); parent != "." && !s.knownDir(parent) {
		dir, err := s.isDir(ctx, parent)
		if err != nil {
			return nil, s.wrap("create", p, err)
		}
		if !dir {
			return nil, fmt.Errorf("create %s: %w: no directory %s", s.URI(p), storage.ErrNotFound, s.URI("/"+parent))
		}
		s.rememberDir(parent)
	}
	wctx, stop := context.WithCancel(ctx)
	return &pending{s: s, ctx: wctx, stop: stop, path: p, key: k, next: 1}, nil
}

// partSize is the size of part n (1-based).
func partSize(n int32) int {
	return PartSize * (1 + int(n-1)/1000)
}

func (w *pending) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("write %s: already committed or aborted", w.s.URI(w.path))
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	written := 0
	for len(b) > 0 {
		size := partSize(w.next)
		if w.buf == nil && w.upload != nil {
			w.buf = getBuf(size)
		}
		n := min(len(b), size-len(w.buf))
		w.buf = append(w.buf, b[:n]...)
		b = b[n:]
		written += n
		if len(w.buf) == size {
			if err := w.sendPart(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func getBuf(size int) []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

func putBuf(b []byte) {
	if cap(b) >= PartSize {
		bufPool.Put(&b)
	}
}

func (w *pending) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *pending) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// sendPart starts the multipart upload if need be and sends the buffer as
// the next part in the background, once one of the store's upload slots
// is free: a writer faster than the network waits here.
func (w *pending) sendPart() error {
	if w.upload == nil {
		out, err := w.s.c.api.CreateMultipartUpload(w.ctx, &awss3.CreateMultipartUploadInput{Bucket: &w.s.bucket, Key: &w.key})
		if err != nil {
			err = w.s.wrap("write", w.path, err)
			w.fail(err)
			return err
		}
		w.upload = out.UploadId
	}
	select {
	case w.s.c.uploads <- struct{}{}:
	case <-w.ctx.Done():
		err := w.s.wrap("write", w.path, w.ctx.Err())
		w.fail(err)
		return err
	}
	buf, n := w.buf, w.next
	w.buf = nil
	w.next++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.s.c.uploads }()
		defer putBuf(buf)
		out, err := w.s.c.api.UploadPart(w.ctx, &awss3.UploadPartInput{
			Bucket: &w.s.bucket, Key: &w.key, UploadId: w.upload, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		})
		if err != nil {
			w.fail(w.s.wrap("write", w.path, fmt.Errorf("part %d: %w", n, err)))
			return
		}
		w.mu.Lock()
		w.parts = append(w.parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256})
		w.mu.Unlock()
	}()
	return nil
}

// Commit puts the object in place: one PUT, or the last part and the
// upload's completion.
func (w *pending) Commit() error {
	if w.done {
		return fmt.Errorf("commit %s: already committed or aborted", w.s.URI(w.path))
	}
	w.done = true
	defer w.stop()
	if w.upload == nil {
		body := w.buf
		w.buf = nil
		_, err := w.s.c.api.PutObject(w.ctx, &awss3.PutObjectInput{
			Bucket: &w.s.bucket, Key: &w.key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		})
		if err != nil {
			return w.s.wrap("commit", w.path, err)
		}
		w.s.rememberDir(path.Dir(w.key))
		return nil
	}
	if len(w.buf) > 0 && w.failed() == nil {
		if err := w.sendPart(); err != nil {
			w.stop()
			w.wg.Wait()
			return errors.Join(err, w.abortUpload())
		}
	}
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return errors.Join(err, w.abortUpload())
	}
	slices.SortFunc(w.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	_, err := w.s.c.api.CompleteMultipartUpload(w.ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: &w.s.bucket, Key: &w.key, UploadId: w.upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
	})
	if err != nil {
		return errors.Join(w.s.wrap("commit", w.path, err), w.abortUpload())
	}
	w.s.rememberDir(path.Dir(w.key))
	return nil
}

// Abort drops what was written: parts still in flight are cancelled and
// the upload aborted, which discards the parts S3 holds.
func (w *pending) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.stop()
	w.wg.Wait()
	putBuf(w.buf)
	w.buf = nil
	if w.upload == nil {
		return nil
	}
	return w.abortUpload()
}

func (w *pending) abortUpload() error {
	_, err := w.s.c.api.AbortMultipartUpload(context.WithoutCancel(w.ctx), &awss3.AbortMultipartUploadInput{
		Bucket: &w.s.bucket, Key: &w.key, UploadId: w.upload,
	})
	if err != nil && !isNotFound(err) {
		return w.s.wrap("abort", w.path, err)
	}
	return nil
}
