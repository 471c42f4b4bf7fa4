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
	"bytes"
	"context"
	"errors"
	"math/rand"
	"net"
	"net/url"
	"os"
	"path"
	"strings"
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

// A file larger than one request holds goes up in chunks and reads back
// whole, and is not there until Commit.
func TestLargeFileInChunks(t *testing.T) {
	dir := gcstest.Dir(t)
	st, p := gcstest.Resolve(t, dir)
	data := make([]byte, 2*objstore.PutLimit+3*gcs.ChunkSize/2+12345)
	rand.New(rand.NewSource(7)).Read(data)
	f := path.Join(p, "big")
	w, err := st.Create(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	for b := data; len(b) > 0; {
		n := min(len(b), 1<<20+3)
		if _, err := w.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if _, err := st.Stat(ctx, f); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat before Commit = %v, want not found", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := storage.ReadAll(ctx, st, f, 1<<30)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(data))
	}
	// Aborted, a large file leaves nothing.
	w, err = st.Create(ctx, path.Join(p, "aborted"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if names, err := st.List(ctx, p); err != nil || len(names) != 1 {
		t.Fatalf("List after an aborted upload = %v, %v; want only big", names, err)
	}
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

// The server stopping mid-write fails the write with storage unavailable,
// naming the file. Runs last: the restart empties the server.
func TestServerStopsMidWrite(t *testing.T) {
	old := objstore.IOTimeout
	objstore.IOTimeout = 5 * time.Second
	t.Cleanup(func() { objstore.IOTimeout = old })
	dir := gcstest.Dir(t)
	st, p := gcstest.Resolve(t, dir)
	w, err := st.Create(ctx, path.Join(p, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, objstore.PutLimit+gcs.ChunkSize)); err != nil {
		t.Fatal(err)
	}
	gcstest.Server.Stop(t)
	t.Cleanup(func() { gcstest.Server.Start(t) })
	_, err = w.Write(make([]byte, 2*gcs.ChunkSize))
	if err == nil {
		err = w.Commit()
	} else {
		w.Abort()
	}
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), dir+"/state") {
		t.Fatalf("write with the server stopped = %v, want storage unavailable naming the file", err)
	}
	t.Logf("error: %v", err)
}
