package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stateutil/stateutil/storage"
)

// isDir reports whether any object lies below k (the bucket's root
// always is a directory, if the bucket exists).
func (s *store) isDir(ctx context.Context, k string) (bool, error) {
	out, err := s.c.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(dirPrefix(k)), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, err
	}
	return k == "" || len(out.Contents) > 0, nil
}

func (s *store) Stat(ctx context.Context, p string) (storage.Info, error) {
	k := key(p)
	info := storage.Info{Name: path.Base(path.Clean("/" + p)), Path: p}
	if t, ok := s.dirTime(k); ok {
		info.IsDir, info.ModTime = true, t
		return info, nil
	}
	if k != "" {
		head, err := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &k})
		if err == nil {
			info.Size = aws.ToInt64(head.ContentLength)
			info.ModTime = aws.ToTime(head.LastModified)
			return info, nil
		}
		if !isNotFound(err) {
			return storage.Info{}, s.wrap("stat", p, err)
		}
	}
	out, err := s.c.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(dirPrefix(k)), MaxKeys: aws.Int32(1)})
	if err != nil {
		return storage.Info{}, s.wrap("stat", p, err)
	}
	if len(out.Contents) == 0 && k != "" {
		return storage.Info{}, s.wrap("stat", p, &types.NotFound{})
	}
	info.IsDir = true
	info.ModTime = time.Now()
	if len(out.Contents) > 0 {
		info.ModTime = aws.ToTime(out.Contents[0].LastModified)
	}
	s.rememberDirAt(k, info.ModTime)
	return info, nil
}

// List lists the objects and prefixes directly below p. Directories have
// no time of their own: theirs is that of their first object (the marker,
// when MkdirAll made one).
func (s *store) List(ctx context.Context, p string) ([]storage.Info, error) {
	k := key(p)
	prefix := dirPrefix(k)
	var out []storage.Info
	var dirs []int
	exists := k == ""
	pages := awss3.NewListObjectsV2Paginator(s.c.api, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix, Delimiter: aws.String("/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("list", p, err)
		}
		for _, o := range page.Contents {
			exists = true
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if name == "" {
				continue // the directory's own marker
			}
			out = append(out, storage.Info{Name: name, Path: path.Join(p, name), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
		for _, cp := range page.CommonPrefixes {
			exists = true
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if name == "" {
				continue // "dir//x": not a name a path can reach
			}
			dirs = append(dirs, len(out))
			out = append(out, storage.Info{Name: name, Path: path.Join(p, name), IsDir: true})
		}
	}
	if !exists {
		if _, err := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &k}); err == nil {
			return nil, fmt.Errorf("list %s: not a directory", s.URI(p))
		}
		return nil, s.wrap("list", p, &types.NotFound{})
	}
	for _, i := range dirs {
		first, err := s.c.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(dirPrefix(key(out[i].Path))), MaxKeys: aws.Int32(1)})
		if err != nil {
			return nil, s.wrap("list", out[i].Path, err)
		}
		if len(first.Contents) > 0 {
			out[i].ModTime = aws.ToTime(first.Contents[0].LastModified)
		} else {
			out[i].ModTime = time.Now() // removed meanwhile
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	s.rememberDir(k)
	return out, nil
}

// MkdirAll writes a marker object "p/" (S3 has no directories), after
// checking that neither p nor a parent is a file.
func (s *store) MkdirAll(ctx context.Context, p string) error {
	k := key(p)
	if k == "" {
		_, err := s.isDir(ctx, k)
		return s.wrap("mkdir", p, err)
	}
	if s.knownDir(k) {
		return nil
	}
	var chain []string
	for a := k; a != "." && !s.knownDir(a); a = path.Dir(a) {
		chain = append(chain, a)
	}
	for _, a := range chain {
		_, err := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(a)})
		if err == nil {
			return fmt.Errorf("mkdir %s: %s is a file, not a directory", s.URI(p), s.URI("/"+a))
		}
		if !isNotFound(err) {
			return s.wrap("mkdir", p, err)
		}
	}
	marker := k + "/"
	if _, err := s.c.api.PutObject(ctx, &awss3.PutObjectInput{Bucket: &s.bucket, Key: &marker, Body: strings.NewReader(""), ContentLength: aws.Int64(0)}); err != nil {
		return s.wrap("mkdir", p, err)
	}
	s.rememberDir(k)
	return nil
}

// Remove removes an object, or a directory that holds nothing but its
// marker.
func (s *store) Remove(ctx context.Context, p string) error {
	k := key(p)
	if k == "" {
		return fmt.Errorf("remove %s: refusing to remove the bucket's root", s.URI(p))
	}
	_, err := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &k})
	switch {
	case err == nil:
		_, err = s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &k})
		return s.wrap("remove", p, err)
	case !isNotFound(err):
		return s.wrap("remove", p, err)
	}
	out, err := s.c.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(k + "/"), MaxKeys: aws.Int32(2)})
	if err != nil {
		return s.wrap("remove", p, err)
	}
	switch {
	case len(out.Contents) == 0:
		return s.wrap("remove", p, &types.NotFound{})
	case len(out.Contents) > 1 || aws.ToString(out.Contents[0].Key) != k+"/":
		return fmt.Errorf("remove %s: directory not empty", s.URI(p))
	}
	s.forgetDirs(k)
	_, err = s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(k + "/")})
	return s.wrap("remove", p, err)
}

// RemoveAll deletes the object p and every object below it, a thousand
// per request, and aborts the multipart uploads under way there (what a
// killed writer leaves, invisible but stored).
func (s *store) RemoveAll(ctx context.Context, p string) error {
	k := key(p)
	s.forgetDirs(k)
	var batch []types.ObjectIdentifier
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := s.c.api.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &s.bucket, Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)}})
		batch = batch[:0]
		if err != nil {
			return s.wrap("remove", p, err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			return fmt.Errorf("remove %s: %s: %s", s.URI("/"+aws.ToString(e.Key)), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		return nil
	}
	if k != "" {
		batch = append(batch, types.ObjectIdentifier{Key: aws.String(k)})
	}
	pages := awss3.NewListObjectsV2Paginator(s.c.api, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(dirPrefix(k))})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return s.wrap("remove", p, err)
		}
		for _, o := range page.Contents {
			batch = append(batch, types.ObjectIdentifier{Key: o.Key})
			if len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return s.abortUploads(ctx, p, k)
}

// abortUploads aborts the multipart uploads of key k and below it.
func (s *store) abortUploads(ctx context.Context, p, k string) error {
	in := &awss3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(k)}
	for {
		out, err := s.c.api.ListMultipartUploads(ctx, in)
		if err != nil {
			return s.wrap("remove", p, err)
		}
		for _, u := range out.Uploads {
			uk := aws.ToString(u.Key)
			if k != "" && uk != k && !strings.HasPrefix(uk, k+"/") {
				continue
			}
			_, err := s.c.api.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			if err != nil && !isNotFound(err) {
				return s.wrap("remove", "/"+uk, err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Rename copies on the server, then deletes: S3 has no rename, so it is
// neither atomic nor cheap (it takes time in proportion to the bytes).
// Within a directory the commit points, _metadata files, are copied last
// and deleted first, so that a reader never takes a half-moved snapshot
// for a whole one, at either name.
func (s *store) Rename(ctx context.Context, oldpath, newpath string) error {
	ko, kn := key(oldpath), key(newpath)
	if ko == "" || kn == "" || kn == ko || strings.HasPrefix(kn, ko+"/") {
		return fmt.Errorf("rename %s to %s: cannot move a directory into itself or the bucket's root", s.URI(oldpath), s.URI(newpath))
	}
	if _, err := s.Stat(ctx, newpath); err == nil {
		return fmt.Errorf("rename %s to %s: %w", s.URI(oldpath), s.URI(newpath), storage.ErrExist)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	head, err := s.c.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &ko})
	if err == nil {
		if err := s.copyObject(ctx, ko, kn, aws.ToInt64(head.ContentLength)); err != nil {
			return s.wrap("rename", oldpath, err)
		}
		_, err := s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &ko})
		return s.wrap("rename", oldpath, err)
	}
	if !isNotFound(err) {
		return s.wrap("rename", oldpath, err)
	}
	var objs, commits []types.Object
	pages := awss3.NewListObjectsV2Paginator(s.c.api, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(ko + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return s.wrap("rename", oldpath, err)
		}
		for _, o := range page.Contents {
			if path.Base(aws.ToString(o.Key)) == "_metadata" {
				commits = append(commits, o)
			} else {
				objs = append(objs, o)
			}
		}
	}
	if len(objs)+len(commits) == 0 {
		return s.wrap("rename", oldpath, &types.NotFound{})
	}
	s.forgetDirs(ko)
	target := func(o types.Object) string { return kn + "/" + strings.TrimPrefix(aws.ToString(o.Key), ko+"/") }
	copyAll := func(list []types.Object) error {
		return parallel(ctx, len(list), func(ctx context.Context, i int) error {
			return s.copyObject(ctx, aws.ToString(list[i].Key), target(list[i]), aws.ToInt64(list[i].Size))
		})
	}
	if err := copyAll(objs); err != nil {
		return s.wrap("rename", oldpath, err)
	}
	if err := copyAll(commits); err != nil {
		return s.wrap("rename", oldpath, err)
	}
	del := func(list []types.Object) error {
		return parallel(ctx, len(list), func(ctx context.Context, i int) error {
			_, err := s.c.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: list[i].Key})
			return err
		})
	}
	if err := del(commits); err != nil {
		return s.wrap("rename", oldpath, err)
	}
	return s.wrap("rename", oldpath, del(objs))
}

// copyLimit is the largest object one CopyObject copies; larger ones go
// by parts.
const copyLimit = 5 << 30

func (s *store) copyObject(ctx context.Context, from, to string, size int64) error {
	src := (&url.URL{Path: s.bucket + "/" + from}).EscapedPath()
	if size <= copyLimit {
		_, err := s.c.api.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: &s.bucket, Key: &to, CopySource: &src})
		return err
	}
	up, err := s.c.api.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &to})
	if err != nil {
		return err
	}
	const part = 1 << 30
	parts := make([]types.CompletedPart, (size+part-1)/part)
	err = parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		off := int64(i) * part
		rng := fmt.Sprintf("bytes=%d-%d", off, min(off+part, size)-1)
		out, err := s.c.api.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: &s.bucket, Key: &to, UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), CopySource: &src, CopySourceRange: &rng})
		if err != nil {
			return err
		}
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag}
		return nil
	})
	if err == nil {
		_, err = s.c.api.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: &s.bucket, Key: &to, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		s.c.api.AbortMultipartUpload(context.WithoutCancel(ctx), &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &to, UploadId: up.UploadId})
	}
	return err
}

// parallel runs fn for 0..n-1, eight at a time, and returns the first
// error; the others are cancelled.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 8)
	)
	for i := range n {
		slots <- struct{}{}
		if err := ctx.Err(); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := fn(ctx, i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return first
}
