package azure

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// folderKey is the metadata that marks a blob as a directory.
const folderKey = "hdi_isfolder"

// containerOf is one container as an objstore.Bucket.
type containerOf struct {
	c      *conn
	api    *container.Client
	name   string
	prefix string // scheme://container@host/
}

func (b *containerOf) URI(k string) string { return b.prefix + k }

func isFolder(md map[string]*string) bool {
	for k, v := range md {
		if strings.EqualFold(k, folderKey) && v != nil && strings.EqualFold(*v, "true") {
			return true
		}
	}
	return false
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func access(c objstore.Cond) *blob.AccessConditions {
	m := &blob.ModifiedAccessConditions{}
	switch {
	case c.Absent:
		m.IfNoneMatch = new(azcore.ETagAny)
	case c.Version != "":
		m.IfMatch = new(azcore.ETag(c.Version))
	default:
		return nil
	}
	return &blob.AccessConditions{ModifiedAccessConditions: m}
}

func (b *containerOf) Head(ctx context.Context, k string) (objstore.Object, error) {
	p, err := b.api.NewBlobClient(k).GetProperties(ctx, nil)
	if err != nil {
		return objstore.Object{}, b.err(err)
	}
	return objstore.Object{Key: k, Size: deref(p.ContentLength), ModTime: deref(p.LastModified), Version: string(deref(p.ETag)),
		Dir: isFolder(p.Metadata), Now: deref(p.Date)}, nil
}

func (b *containerOf) Get(ctx context.Context, k, version string, off, n int64) (objstore.Object, io.ReadCloser, error) {
	o := &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: off, Count: max(n, 0)}, AccessConditions: access(objstore.Cond{Version: version})}
	r, err := b.api.NewBlobClient(k).DownloadStream(ctx, o)
	var re *azcore.ResponseError
	if off == 0 && errors.As(err, &re) && re.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		// An empty blob has no byte 0.
		h, err := b.Head(ctx, k)
		if err != nil {
			return h, nil, err
		}
		return h, io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return objstore.Object{}, nil, b.err(err)
	}
	size := deref(r.ContentLength)
	// "bytes 0-65535/1234567": the blob's size follows the slash.
	if _, total, ok := strings.Cut(deref(r.ContentRange), "/"); ok {
		if t, err := strconv.ParseInt(total, 10, 64); err == nil {
			size = t
		}
	}
	return objstore.Object{Key: k, Size: size, ModTime: deref(r.LastModified), Version: string(deref(r.ETag)),
		Dir: isFolder(r.Metadata), Now: deref(r.Date)}, r.Body, nil
}

func (b *containerOf) item(it *container.BlobItem) objstore.Object {
	o := objstore.Object{Key: deref(it.Name), Dir: isFolder(it.Metadata)}
	if p := it.Properties; p != nil {
		o.Size, o.ModTime, o.Version = deref(p.ContentLength), deref(p.LastModified), string(deref(p.ETag))
	}
	return o
}

func (b *containerOf) List(ctx context.Context, prefix string, delimited bool, n int, fn func(objstore.Object) error) error {
	var size *int32
	if n > 0 {
		size = new(int32(n))
	}
	include := container.ListBlobsInclude{Metadata: true}
	if delimited {
		pages := b.api.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &prefix, Include: include, MaxResults: size})
		for pages.More() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return b.err(err)
			}
			for _, it := range page.Segment.BlobItems {
				if err := fn(b.item(it)); err != nil {
					return err
				}
			}
			for _, p := range page.Segment.BlobPrefixes {
				if err := fn(objstore.Object{Key: strings.TrimSuffix(deref(p.Name), "/"), Dir: true}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	pages := b.api.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Include: include, MaxResults: size})
	for pages.More() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return b.err(err)
		}
		for _, it := range page.Segment.BlobItems {
			if err := fn(b.item(it)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *containerOf) put(ctx context.Context, k string, data []byte, c objstore.Cond, md map[string]*string) (string, error) {
	r, err := b.api.NewBlockBlobClient(k).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
		&blockblob.UploadOptions{AccessConditions: access(c), Metadata: md})
	if err != nil {
		return "", b.err(err)
	}
	return string(deref(r.ETag)), nil
}

func (b *containerOf) Put(ctx context.Context, k string, data []byte, c objstore.Cond) (string, error) {
	return b.put(ctx, k, data, c, nil)
}

func (b *containerOf) Mkdir(ctx context.Context, k string) error {
	_, err := b.put(ctx, k, nil, objstore.Cond{}, map[string]*string{folderKey: new("true")})
	return err
}

func (b *containerOf) Delete(ctx context.Context, k string, c objstore.Cond) error {
	_, err := b.api.NewBlobClient(k).Delete(ctx, &blob.DeleteOptions{AccessConditions: access(c)})
	if err != nil {
		return b.err(err)
	}
	return nil
}

// Copy starts a copy on the server and waits for it to finish (within an
// account a copy usually has by the time it is answered).
func (b *containerOf) Copy(ctx context.Context, from, to string) error {
	dst := b.api.NewBlobClient(to)
	r, err := dst.StartCopyFromURL(ctx, b.api.NewBlobClient(from).URL(), nil)
	if err != nil {
		return b.err(err)
	}
	status := deref(r.CopyStatus)
	for wait := 50 * time.Millisecond; status == blob.CopyStatusTypePending; wait = min(2*wait, 2*time.Second) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		p, err := dst.GetProperties(ctx, nil)
		if err != nil {
			return b.err(err)
		}
		status = deref(p.CopyStatus)
		if status != blob.CopyStatusTypePending && status != blob.CopyStatusTypeSuccess {
			return fmt.Errorf("copy of %s to %s: %s: %s", b.URI(from), b.URI(to), status, deref(p.CopyStatusDescription))
		}
	}
	return nil
}

// upload stages blocks while the caller writes, at most Uploads at once
// per account, and commits their list in one request: until then the blob
// is not there (staged blocks never committed are the service's to
// discard, after a week).
type upload struct {
	b      *containerOf
	api    *blockblob.Client
	ctx    context.Context
	cancel context.CancelFunc
	token  string
	buf    []byte
	ids    []string
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error // the first failed block
}

func (b *containerOf) Upload(ctx context.Context, k string) objstore.Upload {
	ctx, cancel := context.WithCancel(ctx)
	var tok [8]byte
	rand.Read(tok[:])
	return &upload{b: b, api: b.api.NewBlockBlobClient(k), ctx: ctx, cancel: cancel, token: hex.EncodeToString(tok[:])}
}

func (u *upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

func (u *upload) Write(p []byte) (int, error) {
	if err := u.failed(); err != nil {
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		if u.buf == nil {
			u.buf = make([]byte, 0, BlockSize)
		}
		n := min(len(p), BlockSize-len(u.buf))
		u.buf = append(u.buf, p[:n]...)
		p = p[n:]
		written += n
		if len(u.buf) == BlockSize {
			if err := u.stage(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// stage sends the buffer as the next block in the background, once one of
// the account's upload slots is free: a writer faster than the network
// waits here.
func (u *upload) stage() error {
	select {
	case u.b.c.uploads <- struct{}{}:
	case <-u.ctx.Done():
		return u.ctx.Err()
	}
	// Every block id of a blob has the same length.
	id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%08d", u.token, len(u.ids)))
	u.ids = append(u.ids, id)
	buf := u.buf
	u.buf = nil
	u.wg.Go(func() {
		defer func() { <-u.b.c.uploads }()
		if _, err := u.api.StageBlock(u.ctx, id, streaming.NopCloser(bytes.NewReader(buf)), nil); err != nil {
			u.mu.Lock()
			if u.err == nil {
				u.err = u.b.err(err)
			}
			u.mu.Unlock()
		}
	})
	return nil
}

func (u *upload) Commit() error {
	defer u.cancel()
	if len(u.buf) > 0 {
		if err := u.stage(); err != nil {
			u.wg.Wait()
			return err
		}
	}
	u.wg.Wait()
	if err := u.failed(); err != nil {
		return err
	}
	if _, err := u.api.CommitBlockList(u.ctx, u.ids, nil); err != nil {
		return u.b.err(err)
	}
	return nil
}

func (u *upload) Abort() error {
	u.cancel()
	u.wg.Wait()
	u.buf = nil
	return nil
}

// err classifies an error of the SDK onto storage's sentinels and
// ErrPrecondition, with what the service said.
func (b *containerOf) err(err error) error {
	var re *azcore.ResponseError
	var authFailed *azidentity.AuthenticationFailedError
	// What a credential that cannot be had answers (no chain member
	// applies) is marked so, not to be retried.
	var unavailable interface{ NonRetriable() }
	switch {
	case errors.As(err, &re):
		detail := fmt.Sprintf("HTTP %d: %s", re.StatusCode, re.ErrorCode)
		switch {
		case re.ErrorCode == "ContainerNotFound":
			return fmt.Errorf("%w: no container %q (%s)", storage.ErrNotFound, b.name, detail)
		case re.StatusCode == 404:
			return fmt.Errorf("%w (%s)", storage.ErrNotFound, detail)
		case re.StatusCode == 412 || re.ErrorCode == "BlobAlreadyExists" || re.ErrorCode == "ConditionNotMet":
			return fmt.Errorf("%w (%s)", objstore.ErrPrecondition, detail)
		case re.StatusCode == 401 || re.StatusCode == 403:
			return fmt.Errorf("%w (container %q): %s", storage.ErrPermission, b.name, detail)
		case re.StatusCode == 429 || re.StatusCode >= 500:
			return fmt.Errorf("%w (%s): %s", storage.ErrUnavailable, b.c.shown, detail)
		}
		return errors.New(detail)
	case errors.As(err, &authFailed) || errors.As(err, &unavailable):
		return fmt.Errorf("%w (container %q): %v", storage.ErrPermission, b.name, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case objstore.Unreachable(err):
		return fmt.Errorf("%w (%s): %v", storage.ErrUnavailable, b.c.shown, objstore.Innermost(err))
	}
	return err
}
