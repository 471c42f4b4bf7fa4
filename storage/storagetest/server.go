package storagetest

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
)

// Server is a test server of a storage that scripts/NAME-start.sh starts
// on loopback: it writes .cache/NAME.env, which exports STATEUTIL_TEST_KIND
// (a location prefix the tests work below) and STATEUTIL_TEST_KIND_PORT.
// Without it the tests skip, except under CI=true or
// STATEUTIL_REQUIRE_KIND=1, where they fail.
type Server struct {
	Kind     string // S3, GCS, AZURE
	Script   string // s3, gcs, azure: scripts/<Script>-start.sh
	Register func(*storage.Registry)
	// Isolate, when set, keeps the machine's own setup of the storage
	// (profiles, metadata servers) out of a test that uses the server.
	Isolate func(t testing.TB)
}

// Required reports whether the server's tests must run rather than skip.
func (s Server) Required() bool {
	ci := strings.ToLower(os.Getenv("CI"))
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("STATEUTIL_REQUIRE_"+s.Kind) == "1"
}

// Location is the server's base location. It skips t when no server is
// configured (fails it when one is required).
func (s Server) Location(t testing.TB) string {
	t.Helper()
	loc := os.Getenv("STATEUTIL_TEST_" + s.Kind)
	if loc == "" {
		msg := "STATEUTIL_TEST_" + s.Kind + " is not set; start a test server with: scripts/" + s.Script + "-start.sh && . .cache/" + s.Script + ".env"
		if s.Required() {
			t.Fatal(msg + " (" + s.Kind + " tests are required under CI=true or STATEUTIL_REQUIRE_" + s.Kind + "=1)")
		}
		t.Skip(msg)
	}
	if s.Isolate != nil {
		s.Isolate(t)
	}
	return strings.TrimSuffix(loc, "/")
}

// Registry is a storage registry that knows the server's schemes.
func (s Server) Registry() *storage.Registry {
	r := storage.NewRegistry()
	s.Register(r)
	return r
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Dir makes a fresh, empty directory on the server, removed when t ends,
// and returns it as a URI.
func (s Server) Dir(t testing.TB) string {
	t.Helper()
	base := s.Location(t)
	var b [4]byte
	rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	uri := base + "/" + name + "-" + hex.EncodeToString(b[:])
	st, p := s.Resolve(t, uri)
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
func (s Server) Resolve(t testing.TB, uri string) (storage.Storage, string) {
	t.Helper()
	st, p, err := s.Registry().Resolve(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	return st, p
}

// Stop stops the server (scripts/NAME-stop.sh); it keeps its port for
// Start. Everything the server held is lost.
func (s Server) Stop(t testing.TB) {
	t.Helper()
	script(t, s.Script+"-stop.sh")
}

// Start starts the server again on the port it had, empty but for its
// bucket.
func (s Server) Start(t testing.TB) {
	t.Helper()
	script(t, s.Script+"-start.sh", "STATEUTIL_"+s.Kind+"_PORT="+os.Getenv("STATEUTIL_TEST_"+s.Kind+"_PORT"))
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
