// Package gcstest connects tests to the Google Cloud Storage emulator
// (scripts/gcs-start.sh, fake-gcs-server on 127.0.0.1):
//
//	scripts/gcs-start.sh && . .cache/gcs.env
//
// exports STATEUTIL_TEST_GCS (gs://bucket/prefix) and the emulator's
// address (STORAGE_EMULATOR_HOST). Without them GCS tests skip, except
// under CI=true or STATEUTIL_REQUIRE_GCS=1, where they fail.
package gcstest

import (
	"os"
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/gcs"
	"github.com/stateutil/stateutil/storage/storagetest"
)

// Server is the emulator.
var Server = storagetest.Server{
	Kind:     "GCS",
	Script:   "gcs",
	Register: func(r *storage.Registry) { gcs.Register(r, nil) },
	Isolate: func(t testing.TB) {
		if os.Getenv("STORAGE_EMULATOR_HOST") == "" {
			t.Fatal("STATEUTIL_TEST_GCS is set but STORAGE_EMULATOR_HOST is not (. .cache/gcs.env sets both)")
		}
		// The machine's own credentials are never asked for, and nothing
		// looks for a metadata server off this machine.
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
		t.Setenv("GCE_METADATA_HOST", "127.0.0.1:9")
	},
}

// Dir makes a fresh directory on the emulator, removed when t ends, and
// returns it as a gs:// URI.
func Dir(t testing.TB) string { return Server.Dir(t) }

// Resolve resolves a gs:// URI, failing t on error.
func Resolve(t testing.TB, uri string) (storage.Storage, string) { return Server.Resolve(t, uri) }
