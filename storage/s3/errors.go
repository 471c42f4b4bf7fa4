package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/objstore"
)

// ErrNoConditionalWrites reports a server that ignores If-None-Match on
// PUT, where a claim cannot keep two writers apart.
var ErrNoConditionalWrites = objstore.ErrNoConditionalWrites

// Error codes S3 (and the compatible stores) answer with, by sentinel.
var codes = map[string]error{
	"NoSuchKey":                  storage.ErrNotFound,
	"NotFound":                   storage.ErrNotFound,
	"NoSuchBucket":               storage.ErrNotFound,
	"NoSuchUpload":               storage.ErrNotFound,
	"AccessDenied":               storage.ErrPermission,
	"Forbidden":                  storage.ErrPermission,
	"AllAccessDisabled":          storage.ErrPermission,
	"InvalidAccessKeyId":         storage.ErrPermission,
	"SignatureDoesNotMatch":      storage.ErrPermission,
	"ExpiredToken":               storage.ErrPermission,
	"InvalidToken":               storage.ErrPermission,
	"TokenRefreshRequired":       storage.ErrPermission,
	"SlowDown":                   storage.ErrUnavailable,
	"ServiceUnavailable":         storage.ErrUnavailable,
	"InternalError":              storage.ErrUnavailable,
	"RequestTimeout":             storage.ErrUnavailable,
	"PreconditionFailed":         objstore.ErrPrecondition,
	"ConditionalRequestConflict": objstore.ErrPrecondition,
}

// kind classifies an error from the SDK onto storage's sentinels and
// objstore.ErrPrecondition; nil if none fits.
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
	case code == 412:
		return objstore.ErrPrecondition
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
	if objstore.Unreachable(err) {
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

// notImplemented reports a server without the feature a request used.
func notImplemented(err error) bool { return code(err) == "NotImplemented" || status(err) == 501 }

// err turns an SDK error about key k into one wrapping the matching
// sentinel, with what the service said.
func (b *bucketOf) err(err error, k string) error {
	if err == nil {
		return nil
	}
	detail := describe(err)
	switch kd := kind(err); kd {
	case storage.ErrPermission:
		return fmt.Errorf("%w (bucket %q, key %q): %s", kd, b.name, k, detail)
	case storage.ErrUnavailable:
		where := b.c.endpoint
		if where == "" {
			where = "AWS S3"
		}
		return fmt.Errorf("%w (%s): %s", kd, where, detail)
	case objstore.ErrPrecondition:
		return fmt.Errorf("%w (%s)", kd, detail)
	case storage.ErrNotFound:
		if code(err) == "NoSuchBucket" {
			return fmt.Errorf("%w: no bucket %q", kd, b.name)
		}
		return kd
	}
	return err
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
	if inner := objstore.Innermost(err); inner != err {
		return inner.Error()
	}
	if code := status(err); code != 0 {
		return fmt.Sprintf("HTTP %d", code)
	}
	return err.Error()
}
