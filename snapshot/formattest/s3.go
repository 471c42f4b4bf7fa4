package formattest

import (
	"testing"

	"github.com/stateutil/stateutil/storage/s3/s3test"
)

// S3Dir makes a fresh directory on the S3 test server (scripts/s3-start.sh
// && . .cache/s3.env), removed when t ends, and returns it as an s3://
// URI. Without a server it skips t, or fails it under CI=true or
// STATEUTIL_REQUIRE_S3=1.
func S3Dir(t testing.TB) string {
	t.Helper()
	return s3test.Dir(t)
}
