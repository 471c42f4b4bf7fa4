package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// upload is a multipart upload whose parts are sent while the caller
// goes on writing, at most Uploads at once per client. S3 shows nothing
// at the key until the upload completes.
type upload struct {
	b    *bucketOf
	ctx  context.Context // cancels part uploads on Abort
	stop context.CancelFunc
	key  string
	buf  []byte

	id   *string // once started
	next int32   // number of the next part
	wg   sync.WaitGroup
	mu   sync.Mutex
	done []types.CompletedPart
	err  error // the first failed part
}

var bufPool sync.Pool

// partChecksum is the checksum every part carries and the upload declares
// up front, as the AWS CLI does: the store checks each part as it arrives
// and keeps a checksum of the part checksums, instead of checksumming the
// whole object again when the upload completes.
const partChecksum = types.ChecksumAlgorithmCrc32

func (b *bucketOf) Upload(ctx context.Context, k string) objstore.Upload {
	ctx, stop := context.WithCancel(ctx)
	return &upload{b: b, ctx: ctx, stop: stop, key: k, next: 1}
}

// partSize is the size of part n (1-based).
func partSize(n int32) int {
	return PartSize * (1 + int(n-1)/1000)
}

func (u *upload) Write(b []byte) (int, error) {
	if err := u.failed(); err != nil {
		return 0, err
	}
	written := 0
	for len(b) > 0 {
		size := partSize(u.next)
		if u.buf == nil {
			u.buf = getBuf(size)
		}
		n := min(len(b), size-len(u.buf))
		u.buf = append(u.buf, b[:n]...)
		b = b[n:]
		written += n
		if len(u.buf) == size {
			if err := u.sendPart(); err != nil {
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

func (u *upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *upload) fail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = err
	}
}

// sendPart starts the multipart upload if need be and sends the buffer as
// the next part in the background, once one of the client's upload slots
// is free: a writer faster than the network waits here.
func (u *upload) sendPart() error {
	if u.id == nil {
		out, err := u.b.c.api.CreateMultipartUpload(u.ctx, &awss3.CreateMultipartUploadInput{Bucket: &u.b.name, Key: &u.key,
			ChecksumAlgorithm: partChecksum})
		if err != nil {
			err = u.b.err(err, u.key)
			u.fail(err)
			return err
		}
		u.id = out.UploadId
	}
	select {
	case u.b.c.uploads <- struct{}{}:
	case <-u.ctx.Done():
		u.fail(u.ctx.Err())
		return u.ctx.Err()
	}
	buf, n := u.buf, u.next
	u.buf = nil
	u.next++
	u.wg.Go(func() {
		defer func() { <-u.b.c.uploads }()
		defer putBuf(buf)
		out, err := u.b.c.api.UploadPart(u.ctx, &awss3.UploadPartInput{
			Bucket: &u.b.name, Key: &u.key, UploadId: u.id, PartNumber: aws.Int32(n), ChecksumAlgorithm: partChecksum,
			Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		})
		if err != nil {
			u.fail(fmt.Errorf("part %d: %w", n, u.b.err(err, u.key)))
			return
		}
		u.mu.Lock()
		u.done = append(u.done, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256})
		u.mu.Unlock()
	})
	return nil
}

// Commit sends what is buffered as the last part, waits for the parts in
// flight and completes the upload; on failure it aborts it.
func (u *upload) Commit() error {
	defer u.stop()
	if len(u.buf) > 0 && u.failed() == nil {
		u.sendPart()
	}
	u.wg.Wait()
	if err := u.failed(); err != nil {
		return errors.Join(err, u.abort())
	}
	slices.SortFunc(u.done, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	_, err := u.b.c.api.CompleteMultipartUpload(u.ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: &u.b.name, Key: &u.key, UploadId: u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.done},
	})
	if err != nil {
		return errors.Join(u.b.err(err, u.key), u.abort())
	}
	return nil
}

// Abort cancels the parts still in flight and aborts the upload, which
// discards the parts S3 holds.
func (u *upload) Abort() error {
	u.stop()
	u.wg.Wait()
	putBuf(u.buf)
	u.buf = nil
	return u.abort()
}

func (u *upload) abort() error {
	if u.id == nil {
		return nil
	}
	_, err := u.b.c.api.AbortMultipartUpload(context.WithoutCancel(u.ctx), &awss3.AbortMultipartUploadInput{
		Bucket: &u.b.name, Key: &u.key, UploadId: u.id,
	})
	if err != nil && kind(err) != storage.ErrNotFound {
		return u.b.err(err, u.key)
	}
	return nil
}
