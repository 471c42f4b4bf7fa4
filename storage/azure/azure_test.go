package azure_test

// These tests talk to a real Azure Blob Storage emulator (Azurite, on
// loopback):
//
//	scripts/azure-start.sh && . .cache/azure.env && go test ./storage/azure/
//
// Without it they skip, except under CI=true or STATEUTIL_REQUIRE_AZURE=1,
// where they fail. TestServerStopsMidWrite restarts the server, which
// empties it: it runs last, and nothing else may use the server meanwhile
// (scripts/test.sh runs this package before the others).

import (
	"context"
	"errors"
	"net"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/azure"
	"github.com/stateutil/stateutil/storage/azure/azuretest"
	"github.com/stateutil/stateutil/storage/objstore"
	"github.com/stateutil/stateutil/storage/storagetest"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	if storagetest.RunChild(azuretest.Server.Registry()) {
		return
	}
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	azuretest.Server.Location(t)
	storagetest.Run(t, func(t *testing.T) (storage.Storage, string) {
		return azuretest.Resolve(t, azuretest.Dir(t))
	})
}

func TestObjectStore(t *testing.T) {
	azuretest.Server.Location(t)
	storagetest.RunObjectStore(t, azuretest.Server, "STATEUTIL_AZURE_CLAIM_TTL", objstore.PutLimit)
}

// abfs, abfss, wasb and wasbs name the same blobs (the dfs and blob hosts
// the same account), and each storage renders locations in the form it
// was reached by.
func TestSchemesShareBlobs(t *testing.T) {
	dir := azuretest.Dir(t)
	st, p := azuretest.Resolve(t, dir)
	if err := storage.WriteFile(ctx, st, path.Join(p, "f"), []byte("same")); err != nil {
		t.Fatal(err)
	}
	rest := strings.TrimPrefix(dir, "abfss://")
	blobForm := strings.Replace(rest, ".dfs.", ".blob.", 1)
	for _, uri := range []string{"abfs://" + rest + "/f", "wasb://" + blobForm + "/f", "wasbs://" + blobForm + "/f"} {
		other, q := azuretest.Resolve(t, uri)
		b, err := storage.ReadAll(ctx, other, q, 100)
		if err != nil || string(b) != "same" {
			t.Fatalf("%s: %q, %v", uri, b, err)
		}
		if got := other.URI(q); got != uri {
			t.Fatalf("URI = %q, want %q", got, uri)
		}
	}
}

// Missing blobs and containers are storage.ErrNotFound, naming what is
// missing.
func TestNotFound(t *testing.T) {
	base := azuretest.Server.Location(t)
	st, _ := azuretest.Resolve(t, "abfss://no-such-container@devstoreaccount1.dfs.core.windows.net/x")
	_, err := st.Stat(ctx, "/x")
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "no-such-container") {
		t.Fatalf("Stat in a missing container = %v, want not found naming the container", err)
	}
	st, p := azuretest.Resolve(t, base+"/no/such/blob")
	_, err = st.Open(ctx, p)
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), base+"/no/such/blob") {
		t.Fatalf("Open of a missing blob = %v, want not found naming the URI", err)
	}
}

// A closed loopback port stands in for an endpoint that is down.
func TestUnreachableEndpoint(t *testing.T) {
	azuretest.Server.Location(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := storage.NewRegistry()
	azure.Register(r, &azure.Options{Endpoint: "http://" + addr + "/devstoreaccount1"})
	st, p, err := r.Resolve(ctx, "wasbs://c@devstoreaccount1.blob.core.windows.net/snapshots/1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, p)
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "wasbs://c@devstoreaccount1.blob.core.windows.net/snapshots/1") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Stat against a closed port = %v, want storage unavailable naming the URI and endpoint", err)
	}
	t.Logf("error: %v", err)
}

func TestLocationsNeedContainerAndAccount(t *testing.T) {
	for _, loc := range []string{
		"abfss://account.dfs.core.windows.net/path",
		"abfss://c@account/path",
		"abfss://c@account.queue.core.windows.net/path",
		"wasbs://c@account.blob.core.windows.net:443/path",
		"abfs://@account.dfs.core.windows.net/path",
	} {
		if _, _, err := azuretest.Server.Registry().Resolve(ctx, loc); err == nil {
			t.Errorf("Resolve(%q) succeeded, want an error", loc)
		}
	}
}

// The server stopping mid-write fails the write with storage unavailable,
// naming the file. Runs last: the restart empties the server.
func TestServerStopsMidWrite(t *testing.T) {
	old := objstore.IOTimeout
	objstore.IOTimeout = 5 * time.Second
	t.Cleanup(func() { objstore.IOTimeout = old })
	storagetest.ServerStopsMidWrite(t, azuretest.Server, objstore.PutLimit)
}
