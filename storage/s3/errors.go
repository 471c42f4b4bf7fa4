package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/stateutil/stateutil/storage"
)

// ErrNoConditionalWrites reports a server that ignores If-None-Match on
// PUT, where a claim cannot keep two writers apart.
var ErrNoConditionalWrites = errors.New("the server does not honour conditional writes (If-None-Match), so two writers of one destination could not be kept apart")

// Error codes S3 (and the compatible stores) answer with, by sentinel.
var codes = map[string]error{
	"NoSuchKey":             storage.ErrNotFound,
	"NotFound":              storage.ErrNotFound,
	"NoSuchBucket":          storage.ErrNotFound,
	"NoSuchUpload":          storage.ErrNotFound,
	"AccessDenied":          storage.ErrPermission,
	"Forbidden":             storage.ErrPermission,
	"AllAccessDisabled":     storage.ErrPermission,
	"InvalidAccessKeyId":    storage.ErrPermission,
	"SignatureDoesNotMatch": storage.ErrPermission,
	"ExpiredToken":          storage.ErrPermission,
	"InvalidToken":          storage.ErrPermission,
	"TokenRefreshRequired":  storage.ErrPermission,
	"SlowDown":              storage.ErrUnavailable,
	"ServiceUnavailable":    storage.ErrUnavailable,
	"InternalError":         storage.ErrUnavailable,
	"RequestTimeout":        storage.ErrUnavailable,
}

// kind classifies an error from the SDK onto storage's sentinels; nil if
// none fits.
func kind(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		if k, ok := codes[api.ErrorCode()]; ok {
			return k
		}
	}
	switch code := status(err); {
	case code == 404:
		return storage.ErrNotFound
	case code == 401 || code == 403:
		return storage.ErrPermission
	case code >= 500:
		return storage.ErrUnavailable
	case code != 0:
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &netErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return storage.ErrUnavailable
	}
	// Credentials that cannot be had are the caller's to fix.
	msg := err.Error()
	if strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get identity") ||
		strings.Contains(msg, "no EC2 IMDS role found") {
		return storage.ErrPermission
	}
	return nil
}

// code is the S3 error code of err, "" if it has none.
func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// status is the HTTP status of err's response, 0 if there was none.
func status(err error) int {
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		return resp.HTTPStatusCode()
	}
	return 0
}

// isNotFound reports an answer that the object (or bucket) is not there.
func isNotFound(err error) bool { return kind(err) == storage.ErrNotFound }

// wrap turns an SDK error into one error naming op and the URI, wrapping
// the matching sentinel. io.EOF passes through untouched.
func (s *store) wrap(op, p string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	detail := describe(err)
	switch k := kind(err); k {
	case storage.ErrPermission:
		return fmt.Errorf("%s %s: %w (bucket %q, key %q): %s", op, s.URI(p), k, s.bucket, key(p), detail)
	case storage.ErrUnavailable:
		where := s.c.endpoint
		if where == "" {
			where = "AWS S3"
		}
		return fmt.Errorf("%s %s: %w (%s): %s", op, s.URI(p), k, where, detail)
	case nil:
		return fmt.Errorf("%s %s: %w", op, s.URI(p), err)
	default:
		if code(err) == "NoSuchBucket" {
			return fmt.Errorf("%s %s: %w: no bucket %q", op, s.URI(p), k, s.bucket)
		}
		return fmt.Errorf("%s %s: %w", op, s.URI(p), k)
	}
}

// describe is the useful part of an SDK error: the service's code and
// message, or the innermost network error, without the operation
// boilerplate the SDK puts around it.
func describe(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if m := api.ErrorMessage(); m != "" {
			return api.ErrorCode() + ": " + m
		}
		return api.ErrorCode()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Error()
	}
	if code := status(err); code != 0 {
		return fmt.Sprintf("HTTP %d", code)
	}
	return err.Error()
}
