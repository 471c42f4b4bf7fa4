// Package s3test connects tests to the S3 test server (scripts/s3-start.sh,
// moto on 127.0.0.1):
//
//	scripts/s3-start.sh && . .cache/s3.env
//
// exports STATEUTIL_TEST_S3 (s3://bucket/prefix), the endpoint
// (AWS_ENDPOINT_URL) and credentials. Without them S3 tests skip, except
// under CI=true or STATEUTIL_REQUIRE_S3=1, where they fail.
package s3test

import (
	"os"
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3"
	"github.com/stateutil/stateutil/storage/storagetest"
)

// Server is the test server.
var Server = storagetest.Server{
	Kind:     "S3",
	Script:   "s3",
	Register: func(r *storage.Registry) { s3.Register(r, nil) },
	// The machine's own AWS setup (profiles, instance metadata) stays out
	// of the test.
	Isolate: func(t testing.TB) {
		if os.Getenv("AWS_ENDPOINT_URL") == "" {
			t.Fatal("STATEUTIL_TEST_S3 is set but AWS_ENDPOINT_URL is not (. .cache/s3.env sets both)")
		}
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		t.Setenv("AWS_CONFIG_FILE", os.DevNull)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
		t.Setenv("AWS_PROFILE", "")
		os.Unsetenv("AWS_PROFILE")
	},
}

// Location is the test server's base location, s3://bucket/prefix; it
// skips t when no server is configured (fails it when one is required).
func Location(t testing.TB) string { return Server.Location(t) }

// Registry is a storage registry that knows S3's schemes.
func Registry() *storage.Registry { return Server.Registry() }

// Dir makes a fresh, empty directory on the test server, removed when t
// ends, and returns it as an s3:// URI.
func Dir(t testing.TB) string { return Server.Dir(t) }

// Resolve resolves uri with Registry, failing t on error.
func Resolve(t testing.TB, uri string) (storage.Storage, string) { return Server.Resolve(t, uri) }
