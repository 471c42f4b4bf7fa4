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
// leaves no object. Created under storage.DeferCommits, Commit hands the
// PUT or the last part to an upload slot and returns; the upload
// completes in the background.
type pending struct {
	s       *store
	ctx     context.Context // cancels part uploads on Abort
	stop    context.CancelFunc
	commits *storage.Commits // set when Commit is deferred
	detach  func() bool      // ends the Create context's hold on ctx
	path    string
	key     string
	buf     []byte
	done    bool

	upload *string // multipart upload id, once started
	next   int32   // number of the next part
	wg     sync.WaitGroup
	mu     sync.Mutex
	parts  []types.CompletedPart
	err    error // the first failed part
}

var bufPool sync.Pool

// partChecksum is the checksum every part carries and the upload declares
// up front, as the AWS CLI does: the store checks each part as it arrives
// and keeps a checksum of the part checksums, instead of checksumming the
// whole object again when the upload completes.
const partChecksum = types.ChecksumAlgorithmCrc32

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
	w := &pending{s: s, path: p, key: k, next: 1, commits: storage.DeferredCommits(ctx)}
	if w.commits == nil {
		w.ctx, w.stop = context.WithCancel(ctx)
		return w, nil
	}
	// Until Commit, ending ctx stops the upload; after it, only the
	// group's context does.
	w.ctx, w.stop = context.WithCancel(w.commits.Context())
	w.detach = context.AfterFunc(ctx, w.stop)
	return w, nil
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
		out, err := w.s.c.api.CreateMultipartUpload(w.ctx, &awss3.CreateMultipartUploadInput{Bucket: &w.s.bucket, Key: &w.key,
			ChecksumAlgorithm: partChecksum})
		if err != nil {
			err = w.s.wrap("write", w.path, err)
			w.fail(err)
			return err
		}
		w.upload = out.UploadId
	}
	if err := w.slot(); err != nil {
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
			Bucket: &w.s.bucket, Key: &w.key, UploadId: w.upload, PartNumber: aws.Int32(n), ChecksumAlgorithm: partChecksum,
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

// slot waits for one of the store's upload slots; whoever gets it frees
// it when its request is done.
func (w *pending) slot() error {
	select {
	case w.s.c.uploads <- struct{}{}:
		return nil
	case <-w.ctx.Done():
		return w.s.wrap("write", w.path, w.ctx.Err())
	}
}

// Commit puts the object in place: one PUT, or the last part and the
// upload's completion. A deferred Commit returns once the PUT or the last
// part holds an upload slot.
func (w *pending) Commit() error {
	if w.done {
		return fmt.Errorf("commit %s: already committed or aborted", w.s.URI(w.path))
	}
	w.done = true
	if w.commits == nil {
		defer w.stop()
		if w.upload == nil {
			return w.put()
		}
		if err := w.sendLast(); err != nil {
			return err
		}
		return w.complete()
	}
	w.detach()
	if w.upload == nil {
		// The body waits for a slot here, not in the background: what
		// deferred files hold stays bounded by the slots.
		if err := w.slot(); err != nil {
			w.stop()
			return err
		}
		w.commits.Go(func() error {
			defer w.stop()
			defer func() { <-w.s.c.uploads }()
			return w.put()
		})
		return nil
	}
	if err := w.sendLast(); err != nil {
		w.stop()
		return err
	}
	w.commits.Go(func() error {
		defer w.stop()
		return w.complete()
	})
	return nil
}

func (w *pending) put() error {
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

// sendLast sends what is buffered as the last part; on failure the
// upload is aborted.
func (w *pending) sendLast() error {
	if len(w.buf) == 0 || w.failed() != nil {
		return nil
	}
	if err := w.sendPart(); err != nil {
		w.stop()
		w.wg.Wait()
		return errors.Join(err, w.abortUpload())
	}
	return nil
}

// complete waits for the parts in flight and completes the upload, or
// aborts it if a part failed.
func (w *pending) complete() error {
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
	if w.detach != nil {
		w.detach()
	}
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
