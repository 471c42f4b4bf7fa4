package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// RunObjectStore runs what an object store's claims and writes must do
// beyond Run, on the server s, whose claims take their TTL from the
// variable ttlVar; upload is a size that a file is sent in parts at. The
// package's TestMain must call RunChild.
func RunObjectStore(t *testing.T, s Server, ttlVar string, upload int) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s Server, ttlVar string)
	}{
		{"ClaimExclusive", testClaimExclusive},
		{"ClaimTakeoverAfterKilledHolder", testClaimTakeover},
		{"ClaimLostIsReported", testClaimLost},
		{"ReleaseDuringRefreshLeavesNoClaim", testReleaseDuringRefresh},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s, ttlVar) })
	}
	t.Run("KilledUploadLeavesNothing", func(t *testing.T) { testKilledUpload(t, s, upload) })
	t.Run("DeferredCommits", func(t *testing.T) { testDeferredCommits(t, s, upload) })
	t.Run("LargeFileInParts", func(t *testing.T) { testLargeFile(t, s, upload) })
}

// A file larger than one request holds goes up in parts and reads back
// whole, is not there until Commit, and leaves nothing when aborted.
func testLargeFile(t *testing.T, s Server, upload int) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	data := make([]byte, 3*upload+12345)
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
	if got := read(t, st, f); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
	}
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
	if got := names(t, st, p); len(got) != 1 {
		t.Fatalf("List after an aborted upload = %q; want only big", got)
	}
}

// ServerStopsMidWrite stops the server s while a file larger than upload
// is written: the write fails with storage unavailable, naming the file.
// The server restarts empty, so that a package runs it last; its caller
// shortens the storage's I/O timeout first.
func ServerStopsMidWrite(t *testing.T, s Server, upload int) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	w, err := st.Create(ctx, path.Join(p, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 2*upload)); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	t.Cleanup(func() { s.Start(t) })
	_, err = w.Write(make([]byte, 2*upload))
	if err == nil {
		err = w.Commit()
	} else {
		w.Abort()
	}
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "storage unavailable") || !strings.Contains(err.Error(), dir+"/state") {
		t.Fatalf("write with the server stopped = %v, want storage unavailable naming the file", err)
	}
	t.Logf("error: %v", err)
}

// Under storage.DeferCommits, Commit may return before the file is in
// place; once Wait returns nil every file is, whole, small and large.
func testDeferredCommits(t *testing.T, s Server, upload int) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	dctx, commits := storage.DeferCommits(ctx)
	want := map[string][]byte{}
	for i, size := range []int{10, 2*upload + 17, 0, upload / 2} {
		name := path.Join(p, fmt.Sprintf("f%d", i))
		data := bytes.Repeat([]byte{byte('a' + i)}, size)
		w, err := st.Create(dctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		want[name] = data
	}
	if err := commits.Wait(); err != nil {
		t.Fatal(err)
	}
	for name, data := range want {
		if got := read(t, st, name); !bytes.Equal(got, data) {
			t.Fatalf("%s after Wait: %d bytes, want %d", name, len(got), len(data))
		}
	}
}

// Of writers racing to claim one destination, exactly one wins; the
// others are told who holds it; after Release it can be claimed again.
func testClaimExclusive(t *testing.T, s Server, _ string) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	dst := path.Join(p, "dst")
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []storage.Claim
		refuse []error
	)
	for range 8 {
		wg.Go(func() {
			c, err := st.Claim(ctx, dst)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refuse = append(refuse, err)
			} else {
				won = append(won, c)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d of 8 racing claims succeeded, want 1 (refusals: %v)", len(won), refuse)
	}
	for _, err := range refuse {
		if !errors.Is(err, storage.ErrInUse) || !strings.Contains(err.Error(), "pid ") {
			t.Fatalf("refused claim: %v, want storage.ErrInUse naming the holder", err)
		}
	}
	t.Logf("refused: %v", refuse[0])
	if err := won[0].Release(); err != nil {
		t.Fatal(err)
	}
	if err := won[0].Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if names, _ := st.List(ctx, p); len(names) != 0 {
		t.Fatalf("claim object left after Release: %v", names)
	}
	c, err := st.Claim(ctx, dst)
	if err != nil {
		t.Fatalf("Claim after Release: %v", err)
	}
	c.Release()
}

// A holder that was killed keeps its destination until its claim goes
// stale (no refresh for its TTL), and then exactly one claimer takes it
// over.
func testClaimTakeover(t *testing.T, s Server, ttlVar string) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)

	// A long TTL: the claim cannot go stale within the test.
	Kill(t, StartChild(t, "claim", dir+"/fresh", 0, ttlVar+"=1h"))
	if _, err := st.Claim(ctx, path.Join(p, "fresh")); !errors.Is(err, storage.ErrInUse) || !strings.Contains(err.Error(), "stale after 1h0m0s") {
		t.Fatalf("Claim of a killed holder's fresh claim = %v, want storage.ErrInUse saying when it goes stale", err)
	}

	// A short one: it goes stale, and is taken over.
	Kill(t, StartChild(t, "claim", dir+"/stale", 0, ttlVar+"=1s"))
	var c storage.Claim
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		c, err = st.Claim(ctx, path.Join(p, "stale"))
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrInUse) || time.Now().After(deadline) {
			t.Fatalf("Claim of a killed holder's claim: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if _, err := st.Claim(ctx, path.Join(p, "stale")); !errors.Is(err, storage.ErrInUse) {
		t.Fatalf("Claim of a claim just taken over = %v, want storage.ErrInUse", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
}

// A holder whose claim was overwritten by someone else learns it at the
// latest on Release, which then fails rather than deleting the other's.
func testClaimLost(t *testing.T, s Server, _ string) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	c, err := st.Claim(ctx, path.Join(p, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := st.List(ctx, p)
	if err != nil || len(names) != 1 || !strings.HasPrefix(names[0].Name, storage.TempPrefix+"claim-") {
		t.Fatalf("List beside a claimed destination = %v, %v; want the claim object", names, err)
	}
	intruder := []byte(`{"holder":"someone else","token":"x","ttl":"1h"}`)
	if err := storage.WriteFile(ctx, st, names[0].Path, intruder); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err == nil || !strings.Contains(err.Error(), "another writer took it over") {
		t.Fatalf("Release of a claim taken over = %v, want an error saying so", err)
	}
	if b, err := storage.ReadAll(ctx, st, names[0].Path, 1000); err != nil || string(b) != string(intruder) {
		t.Fatalf("the other writer's claim is %q, %v after Release; want it untouched", b, err)
	}
}

// A Release that comes while a refresh is being written still removes the
// claim: the destination can be claimed again at once.
func testReleaseDuringRefresh(t *testing.T, s Server, ttlVar string) {
	t.Setenv(ttlVar, "40ms") // a refresh every 10 ms
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	dst := path.Join(p, "dst")
	for i := range 60 {
		c, err := st.Claim(ctx, dst)
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		time.Sleep(time.Duration(i%7) * 3 * time.Millisecond)
		if err := c.Release(); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		if names, _ := st.List(ctx, p); len(names) != 0 {
			t.Fatalf("claim object left after release %d: %v", i, names)
		}
	}
}

// A writer killed mid-upload leaves no object, and nothing a listing shows.
func testKilledUpload(t *testing.T, s Server, upload int) {
	dir := s.Dir(t)
	st, p := s.Resolve(t, dir)
	Kill(t, StartChild(t, "upload", dir+"/state", 3*upload+100))
	if _, err := st.Stat(ctx, path.Join(p, "state")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after the writer was killed = %v, want not found", err)
	}
	if names, err := st.List(ctx, p); err != nil || len(names) != 0 {
		t.Fatalf("List after the writer was killed = %v, %v; want nothing", names, err)
	}
}
