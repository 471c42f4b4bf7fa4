package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// bucketOf is one bucket as an objstore.Bucket. An object's version is
// its ETag, which conditions go on as If-Match, and a create as
// If-None-Match: *.
type bucketOf struct {
	c      *conn
	scheme string
	name   string
}

func (b *bucketOf) URI(k string) string { return b.scheme + "://" + b.name + "/" + k }

// serverTime is the server's clock when it answered, zero if it did not
// say.
func serverTime(m middleware.Metadata) time.Time {
	t, _ := awsmiddleware.GetServerTime(m)
	return t
}

func (b *bucketOf) Head(ctx context.Context, k string) (objstore.Object, error) {
	out, err := b.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &b.name, Key: &k})
	if err != nil {
		return objstore.Object{}, b.err(err, k)
	}
	return objstore.Object{Key: k, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified),
		Version: aws.ToString(out.ETag), Dir: strings.HasSuffix(k, "/"), Now: serverTime(out.ResultMetadata)}, nil
}

func (b *bucketOf) Get(ctx context.Context, k, version string, off, n int64) (objstore.Object, io.ReadCloser, error) {
	in := &awss3.GetObjectInput{Bucket: &b.name, Key: &k}
	switch {
	case n >= 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	if version != "" {
		in.IfMatch = &version
	}
	out, err := b.c.api.GetObject(ctx, in)
	if off == 0 && (code(err) == "InvalidRange" || status(err) == 416) {
		// An empty object has no byte 0.
		o, err := b.Head(ctx, k)
		if err != nil {
			return objstore.Object{}, nil, err
		}
		return o, io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return objstore.Object{}, nil, b.err(err, k)
	}
	o := objstore.Object{Key: k, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified),
		Version: aws.ToString(out.ETag), Dir: strings.HasSuffix(k, "/"), Now: serverTime(out.ResultMetadata)}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		// "bytes 0-65535/1234567": the object's size follows the slash.
		if _, total, ok := strings.Cut(cr, "/"); ok {
			if size, err := strconv.ParseInt(total, 10, 64); err == nil {
				o.Size = size
			}
		}
	}
	return o, out.Body, nil
}

func (b *bucketOf) List(ctx context.Context, prefix string, delimited bool, max int, fn func(objstore.Object) error) error {
	in := &awss3.ListObjectsV2Input{Bucket: &b.name, Prefix: &prefix}
	if delimited {
		in.Delimiter = aws.String("/")
	}
	if max > 0 {
		in.MaxKeys = aws.Int32(int32(min(max, 1000)))
	}
	pages := awss3.NewListObjectsV2Paginator(b.c.api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return b.err(err, prefix)
		}
		// A page holds objects and prefixes apart, each in key order.
		objs, dirs := page.Contents, page.CommonPrefixes
		for len(objs)+len(dirs) > 0 {
			var o objstore.Object
			if len(dirs) == 0 || len(objs) > 0 && aws.ToString(objs[0].Key) < aws.ToString(dirs[0].Prefix) {
				k := aws.ToString(objs[0].Key)
				o = objstore.Object{Key: k, Size: aws.ToInt64(objs[0].Size), ModTime: aws.ToTime(objs[0].LastModified),
					Version: aws.ToString(objs[0].ETag), Dir: strings.HasSuffix(k, "/")}
				objs = objs[1:]
			} else {
				o = objstore.Object{Key: strings.TrimSuffix(aws.ToString(dirs[0].Prefix), "/"), Dir: true}
				dirs = dirs[1:]
			}
			if err := fn(o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bucketOf) Put(ctx context.Context, k string, data []byte, c objstore.Cond) (string, error) {
	in := &awss3.PutObjectInput{Bucket: &b.name, Key: &k, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
	switch {
	case c.Absent:
		in.IfNoneMatch = aws.String("*")
	case c.Version != "":
		in.IfMatch = aws.String(c.Version)
	}
	out, err := b.c.api.PutObject(ctx, in)
	switch {
	case err == nil:
		return aws.ToString(out.ETag), nil
	case c != objstore.Cond{} && status(err) == 409:
		// A concurrent conditional write of the same key won.
		return "", fmt.Errorf("%w (%s)", objstore.ErrPrecondition, describe(err))
	case c.Absent && notImplemented(err):
		return "", fmt.Errorf("%w (%s)", ErrNoConditionalWrites, describe(err))
	}
	return "", b.err(err, k)
}

func (b *bucketOf) Mkdir(ctx context.Context, k string) error {
	_, err := b.Put(ctx, k+"/", nil, objstore.Cond{})
	return err
}

// Delete of a version is If-Match on its ETag; a store without
// conditional deletes deletes whatever is there.
func (b *bucketOf) Delete(ctx context.Context, k string, c objstore.Cond) error {
	in := &awss3.DeleteObjectInput{Bucket: &b.name, Key: &k}
	if c.Version != "" {
		in.IfMatch = aws.String(c.Version)
	}
	_, err := b.c.api.DeleteObject(ctx, in)
	if in.IfMatch != nil && notImplemented(err) {
		in.IfMatch = nil
		_, err = b.c.api.DeleteObject(ctx, in)
	}
	return b.err(err, k)
}

// copyLimit is the largest object one CopyObject copies; larger ones go
// by parts.
const copyLimit = 5 << 30

func (b *bucketOf) Copy(ctx context.Context, from, to string, size int64) error {
	src := (&url.URL{Path: b.name + "/" + from}).EscapedPath()
	if size <= copyLimit {
		_, err := b.c.api.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: &b.name, Key: &to, CopySource: &src})
		return b.err(err, from)
	}
	up, err := b.c.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &b.name, Key: &to})
	if err != nil {
		return b.err(err, to)
	}
	const part = 1 << 30
	parts := make([]types.CompletedPart, (size+part-1)/part)
	err = objstore.Parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		off := int64(i) * part
		rng := fmt.Sprintf("bytes=%d-%d", off, min(off+part, size)-1)
		out, err := b.c.api.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: &b.name, Key: &to, UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), CopySource: &src, CopySourceRange: &rng})
		if err != nil {
			return err
		}
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag}
		return nil
	})
	if err == nil {
		_, err = b.c.api.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &b.name, Key: &to, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		b.c.api.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &b.name, Key: &to, UploadId: up.UploadId})
	}
	return b.err(err, to)
}

// AbortUploads aborts the multipart uploads of key k and below it: what a
// killed writer leaves, invisible but stored.
func (b *bucketOf) AbortUploads(ctx context.Context, k string) error {
	in := &awss3.ListMultipartUploadsInput{Bucket: &b.name, Prefix: aws.String(k)}
	for {
		out, err := b.c.api.ListMultipartUploads(ctx, in)
		if err != nil {
			return b.err(err, k)
		}
		for _, u := range out.Uploads {
			uk := aws.ToString(u.Key)
			if k != "" && uk != k && !strings.HasPrefix(uk, k+"/") {
				continue
			}
			_, err := b.c.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &b.name, Key: u.Key, UploadId: u.UploadId})
			if err != nil && kind(err) != storage.ErrNotFound {
				return fmt.Errorf("%s: %w", b.URI(uk), b.err(err, uk))
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}
