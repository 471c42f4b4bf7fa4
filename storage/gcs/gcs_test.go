package gcs_test

// These tests talk to a real Google Cloud Storage emulator
// (fake-gcs-server, on loopback):
//
//	scripts/gcs-start.sh && . .cache/gcs.env && go test ./storage/gcs/
//
// Without it they skip, except under CI=true or STATEUTIL_REQUIRE_GCS=1,
// where they fail. TestServerStopsMidWrite restarts the server, which
// empties it: it runs last, and nothing else may use the server meanwhile
// (scripts/test.sh runs this package before the others).

import (
	"context"
	"crypto"
	crand "crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/gcs"
	"github.com/stateutil/stateutil/storage/gcs/gcstest"
	"github.com/stateutil/stateutil/storage/objstore"
	"github.com/stateutil/stateutil/storage/storagetest"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	if storagetest.RunChild(gcstest.Server.Registry()) {
		return
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	gcstest.Server.Location(t)
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return gcstest.Resolve(t, gcstest.Dir(t))
	})
}

func TestObjectStore(t *testing.T) {
	gcstest.Server.Location(t)
	storagetest.RunObjectStore(t, gcstest.Server, "STATEUTIL_GCS_CLAIM_TTL", objstore.PutLimit)
}

// Missing objects and buckets are storage.ErrNotFound, naming what is
// missing.
func TestNotFound(t *testing.T) {
	base := gcstest.Server.Location(t)
	u, _ := url.Parse(base)
	st, _ := gcstest.Resolve(t, "gs://no-such-bucket-stateutil/x")
	_, err := st.Stat(ctx, "/x")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "no-such-bucket-stateutil") {
		t.Fatalf("Stat in a missing bucket = %v, want not found naming the bucket", err)
	}
	st, _ = gcstest.Resolve(t, "gs://"+u.Host+"/")
	_, err = st.Open(ctx, "/no/such/key")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "gs://"+u.Host+"/no/such/key") {
		t.Fatalf("Open of a missing key = %v, want not found naming the URI", err)
	}
}

// A closed loopback port stands in for an endpoint that is down.
func TestUnreachableEndpoint(t *testing.T) {
	gcstest.Server.Location(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("STORAGE_EMULATOR_HOST", "http://"+addr)
	st, p, err := gcstest.Server.Registry().Resolve(ctx, "gs://bucket/snapshots/1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, p)
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "gs://bucket/snapshots/1") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Stat against a closed port = %v, want storage unavailable naming the URI and endpoint", err)
	}
	t.Logf("error: %v", err)
}

func TestLocationsNeedABucket(t *testing.T) {
	for _, loc := range []string{"gs:///path", "gs://bucket:9000/path", "gs://user@bucket/path"} {
		if _, _, err := gcstest.Server.Registry().Resolve(ctx, loc); err == nil {
			t.Errorf("Resolve(%q) succeeded, want an error", loc)
		}
	}
}

// Credentials are Application Default Credentials: with no emulator, a
// service account's key file in GOOGLE_APPLICATION_CREDENTIALS. Google's
// OAuth server cannot run here; a loopback stand-in takes its place at
// the key file's token_uri, checks the signed assertion the client sends
// with the key's public half, and answers a token, which every request to
// the emulator (through a proxy that sees them) then carries.
func TestApplicationDefaultCredentials(t *testing.T) {
	dir := gcstest.Dir(t)
	st, p := gcstest.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("adc")); err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(crand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const issued = "ya29.stateutil-test-token"
	var asserted atomic.Bool
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		parts := strings.Split(r.Form.Get("assertion"), ".")
		if len(parts) != 3 {
			http.Error(w, "no assertion", http.StatusBadRequest)
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		asserted.Store(true)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, issued)
	}))
	t.Cleanup(tokens.Close)

	target, _ := url.Parse(os.Getenv("STORAGE_EMULATOR_HOST"))
	var mu sync.Mutex
	var auths []string
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		r.Host = target.Host
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	keyFile := path.Join(t.TempDir(), "key.json")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "stateutil-test", "private_key_id": "k1",
		"private_key": string(pemKey), "client_email": "reader@stateutil-test.iam.gserviceaccount.com", "client_id": "1",
		"token_uri": tokens.URL + "/token"})
	if err := os.WriteFile(keyFile, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	os.Unsetenv("STORAGE_EMULATOR_HOST")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	r := storage.NewRegistry()
	gcs.Register(r, &gcs.Options{Endpoint: proxy.URL + "/storage/v1/"})
	via, q, err := r.Resolve(ctx, dir+"/f")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := storage.ReadAll(ctx, via, q, 100); err != nil || string(b) != "adc" {
		t.Fatalf("read with the service account's credentials: %q, %v", b, err)
	}
	if !asserted.Load() {
		t.Fatal("no signed assertion reached the token_uri")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("no request reached the emulator")
	}
	for _, a := range auths {
		if a != "Bearer "+issued {
			t.Fatalf("a request carried Authorization %q, want the token the token_uri issued", a)
		}
	}
}

// The server stopping mid-write fails the write with storage unavailable,
// naming the file. Runs last: the restart empties the server.
func TestServerStopsMidWrite(t *testing.T) {
	old := objstore.IOTimeout
	objstore.IOTimeout = 5 * time.Second
	t.Cleanup(func() { objstore.IOTimeout = old })
	storagetest.ServerStopsMidWrite(t, gcstest.Server, objstore.PutLimit)
}
