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
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3"
)

// Required reports whether S3 tests must run rather than skip.
func Required() bool {
	ci := strings.ToLower(os.Getenv("CI"))
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("STATEUTIL_REQUIRE_S3") == "1"
}

// Location is the test server's base location, s3://bucket/prefix. It
// skips t when no server is configured (fails it when one is required),
// and keeps the machine's own AWS setup (profiles, instance metadata) out
// of the test.
func Location(t testing.TB) string {
	t.Helper()
	loc := os.Getenv("STATEUTIL_TEST_S3")
	if loc == "" || os.Getenv("AWS_ENDPOINT_URL") == "" {
		msg := "STATEUTIL_TEST_S3 is not set; start a test server with: scripts/s3-start.sh && . .cache/s3.env"
		if Required() {
			t.Fatal(msg + " (S3 tests are required under CI=true or STATEUTIL_REQUIRE_S3=1)")
		}
		t.Skip(msg)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_PROFILE", "")
	os.Unsetenv("AWS_PROFILE")
	return strings.TrimSuffix(loc, "/")
}

// Registry is a storage registry that knows S3's schemes.
func Registry() *storage.Registry {
	r := storage.NewRegistry()
	s3.Register(r, nil)
	return r
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Dir makes a fresh, empty directory on the test server, removed when t
// ends, and returns it as an s3:// URI.
func Dir(t testing.TB) string {
	t.Helper()
	base := Location(t)
	var b [4]byte
	rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	uri := base + "/" + name + "-" + hex.EncodeToString(b[:])
	st, p, err := Registry().Resolve(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MkdirAll(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.RemoveAll(context.Background(), p); err != nil {
			t.Errorf("cleanup of %s: %v", uri, err)
		}
	})
	return uri
}

// Resolve resolves uri with Registry, failing t on error.
func Resolve(t testing.TB, uri string) (storage.Storage, string) {
	t.Helper()
	st, p, err := Registry().Resolve(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	return st, p
}

// StopServer stops the test server (scripts/s3-stop.sh); it keeps its
// port for StartServer. Everything the server held is lost.
func StopServer(t testing.TB) {
	t.Helper()
	script(t, "s3-stop.sh")
}

// StartServer starts the test server again on the port it had, with an
// empty bucket.
func StartServer(t testing.TB) {
	t.Helper()
	script(t, "s3-start.sh", "STATEUTIL_S3_PORT="+os.Getenv("STATEUTIL_TEST_S3_PORT"))
}

func script(t testing.TB, name string, env ...string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", name)); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("scripts/%s not found above the test's directory", name)
		}
		dir = parent
	}
	c := exec.Command(filepath.Join(dir, "scripts", name))
	c.Env = append(os.Environ(), env...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("scripts/%s: %v\n%s", name, err, out)
	}
}
