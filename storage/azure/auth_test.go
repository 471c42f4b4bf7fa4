package azure_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/azure/azuretest"
	"github.com/stateutil/stateutil/storage/storagetest"
)

// emulator is the account, key and Blob endpoint of the emulator's
// connection string.
func emulator(t *testing.T) (account, key, endpoint string) {
	t.Helper()
	for _, part := range strings.Split(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), ";") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "AccountName":
			account = v
		case "AccountKey":
			key = v
		case "BlobEndpoint":
			endpoint = v
		}
	}
	if account == "" || key == "" || endpoint == "" {
		t.Fatal("AZURE_STORAGE_CONNECTION_STRING lacks AccountName, AccountKey or BlobEndpoint")
	}
	return account, key, endpoint
}

// withoutConnectionString leaves a test the endpoint alone, in
// STATEUTIL_AZURE_ENDPOINT.
func withoutConnectionString(t *testing.T, endpoint string) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	os.Unsetenv("AZURE_STORAGE_CONNECTION_STRING")
	t.Setenv("STATEUTIL_AZURE_ENDPOINT", endpoint)
}

// readWrite writes a file at uri and reads it back.
func readWrite(t *testing.T, uri string) error {
	t.Helper()
	st, p, err := azuretest.Server.Registry().Resolve(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteFile(ctx, st, p, []byte("credentials")); err != nil {
		return err
	}
	b, err := storage.ReadAll(ctx, st, p, 100)
	if err == nil && string(b) != "credentials" {
		t.Fatalf("read back %q", b)
	}
	return err
}

// A shared key in AZURE_STORAGE_KEY, for the account AZURE_STORAGE_ACCOUNT
// names or any; a wrong key is permission denied, naming the container.
func TestSharedKeyFromEnvironment(t *testing.T) {
	dir := azuretest.Dir(t)
	account, key, endpoint := emulator(t)
	withoutConnectionString(t, endpoint)
	t.Setenv("AZURE_STORAGE_KEY", key)
	if err := readWrite(t, dir+"/any-account"); err != nil {
		t.Fatalf("with AZURE_STORAGE_KEY: %v", err)
	}
	t.Setenv("AZURE_STORAGE_ACCOUNT", account)
	if err := readWrite(t, dir+"/named-account"); err != nil {
		t.Fatalf("with AZURE_STORAGE_KEY for AZURE_STORAGE_ACCOUNT: %v", err)
	}
	t.Setenv("AZURE_STORAGE_KEY", strings.Repeat("A", len(key)-2)+"==")
	err := readWrite(t, dir+"/wrong-key")
	if !errors.Is(err, storage.ErrPermission) || !strings.Contains(err.Error(), "stateutil-test") {
		t.Fatalf("with a wrong key: %v, want permission denied naming the container", err)
	}
	t.Logf("error: %v", err)
}

// A SAS in AZURE_STORAGE_SAS_TOKEN reaches what it grants, and no more.
func TestSASFromEnvironment(t *testing.T) {
	dir := azuretest.Dir(t)
	account, key, endpoint := emulator(t)
	cred, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	token := func(p sas.ContainerPermissions) string {
		q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
			ContainerName: "stateutil-test", Permissions: p.String()}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		return q.Encode()
	}
	withoutConnectionString(t, endpoint)
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", token(sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}))
	if err := readWrite(t, dir+"/sas"); err != nil {
		t.Fatalf("with a read-write SAS: %v", err)
	}
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", token(sas.ContainerPermissions{Read: true, List: true}))
	st, p := azuretest.Resolve(t, dir)
	if b, err := storage.ReadAll(ctx, st, path.Join(p, "sas"), 100); err != nil || string(b) != "credentials" {
		t.Fatalf("read with a read-only SAS: %q, %v", b, err)
	}
	err = storage.WriteFile(ctx, st, path.Join(p, "refused"), []byte("x"))
	if !errors.Is(err, storage.ErrPermission) {
		t.Fatalf("write with a read-only SAS: %v, want permission denied", err)
	}
	t.Logf("error: %v", err)
}

// With no key, SAS or connection string, credentials come from the
// environment's chain (azidentity's DefaultAzureCredential), here a
// managed identity of App Service's kind (IDENTITY_ENDPOINT,
// IDENTITY_HEADER). Azure's identity service cannot run here: a loopback
// stand-in answers the chain's token requests with a token for Azure
// Storage, which a second Azurite, checking OAuth tokens (--oauth basic,
// which wants HTTPS: a certificate made here, trusted by the child that
// runs stateutil through SSL_CERT_FILE), takes; a token for another
// audience it refuses, and stateutil says permission denied.
func TestCredentialChainManagedIdentity(t *testing.T) {
	azuretest.Server.Location(t)
	server := os.Getenv("STATEUTIL_TEST_AZURE_SERVER")
	if server == "" {
		t.Fatal("STATEUTIL_TEST_AZURE_SERVER is not set (scripts/azure-start.sh writes it)")
	}
	account, key, _ := emulator(t)
	tmp := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, tmp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	c := exec.Command(server, "--blobHost", "127.0.0.1", "--blobPort", port, "--inMemoryPersistence", "--skipApiVersionCheck",
		"--disableTelemetry", "--silent", "--oauth", "basic", "--cert", certFile, "--key", keyFile)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	endpoint := "https://127.0.0.1:" + port + "/" + account

	// The container, made with the account key over TLS that trusts the
	// certificate.
	cred, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	cc, err := container.NewClientWithSharedKeyCredential(endpoint+"/oauth", cred, &container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: trusting}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if _, err = cc.Create(ctx, nil); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OAuth Azurite never made the container: %v", err)
		}
	}

	var audience atomic.Value
	audience.Store("https://storage.azure.com")
	var asked atomic.Int32
	ids := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-IDENTITY-HEADER") != "identity-secret" || !strings.HasPrefix(r.URL.Query().Get("resource"), "https://storage.azure.com") {
			http.Error(w, "unexpected token request", http.StatusBadRequest)
			return
		}
		asked.Add(1)
		now := time.Now().Unix()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"access_token": jwt(t, map[string]any{
			"aud": audience.Load(), "iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
			"iat": now - 60, "nbf": now - 60, "exp": now + 3600, "oid": "stateutil-test"}),
			"expires_on": strconv.FormatInt(now+3600, 10), "resource": "https://storage.azure.com", "token_type": "Bearer"})
	}))
	t.Cleanup(ids.Close)

	env := []string{"SSL_CERT_FILE=" + certFile, "SSL_CERT_DIR=" + tmp, "AZURE_STORAGE_CONNECTION_STRING=", "AZURE_STORAGE_KEY=",
		"AZURE_STORAGE_SAS_TOKEN=", "STATEUTIL_AZURE_ENDPOINT=" + endpoint, "IDENTITY_ENDPOINT=" + ids.URL, "IDENTITY_HEADER=identity-secret"}
	loc := "abfss://oauth@" + account + ".dfs.core.windows.net/chain"
	if got := storagetest.RoundTrip(t, loc, env...); got != `read back "roundtrip"` {
		t.Fatalf("round trip with the managed identity's token: %s", got)
	}
	if asked.Load() == 0 {
		t.Fatal("the managed identity was never asked for a token")
	}
	r, err := cc.NewBlobClient("chain").DownloadStream(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != "roundtrip" {
		t.Fatalf("the blob written with the token holds %q", b)
	}

	audience.Store("https://vault.azure.net")
	got := storagetest.RoundTrip(t, loc+"-refused", env...)
	if !strings.Contains(got, "permission denied") {
		t.Fatalf("round trip with a token for another audience: %s, want permission denied", got)
	}
	t.Logf("with a token for another audience: %s", got)
}

// selfSigned writes a certificate and key for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// jwt is claims as a JSON Web Token, signed ES256 with a key of its own
// (Azurite's basic check reads the claims only).
func jwt(t *testing.T, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "ES256", "typ": "JWT"}) + "." + enc(claims)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Error(err)
	}
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(crand.Reader, priv, sum[:])
	if err != nil {
		t.Error(err)
	}
	sig := append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}
