package formattest

import (
	"testing"

	"github.com/stateutil/stateutil/storage/azure/azuretest"
	"github.com/stateutil/stateutil/storage/gcs/gcstest"
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

// GCSDir is S3Dir on the Google Cloud Storage emulator
// (scripts/gcs-start.sh): a gs:// URI; STATEUTIL_REQUIRE_GCS=1.
func GCSDir(t testing.TB) string {
	t.Helper()
	return gcstest.Dir(t)
}

// AzureDir is S3Dir on the Azure Blob Storage emulator
// (scripts/azure-start.sh): an abfss:// URI; STATEUTIL_REQUIRE_AZURE=1.
func AzureDir(t testing.TB) string {
	t.Helper()
	return azuretest.Dir(t)
}
