package s3_test

import (
	"errors"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
	"github.com/stateutil/stateutil/storage/s3/s3test"
)

// Of writers racing to claim one destination, exactly one wins; the
// others are told who holds it; after Release it can be claimed again.
func TestClaimExclusive(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
	dst := path.Join(p, "dst")
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []storage.Claim
		refuse []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := st.Claim(ctx, dst)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refuse = append(refuse, err)
			} else {
				won = append(won, c)
			}
		}()
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
func TestClaimTakeoverAfterKilledHolder(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)

	// A long TTL: the claim cannot go stale within the test.
	kill(t, startChild(t, "claim", dir+"/fresh", "claimed", "STATEUTIL_S3_CLAIM_TTL=1h"))
	if _, err := st.Claim(ctx, path.Join(p, "fresh")); !errors.Is(err, storage.ErrInUse) || !strings.Contains(err.Error(), "stale after 1h0m0s") {
		t.Fatalf("Claim of a killed holder's fresh claim = %v, want storage.ErrInUse saying when it goes stale", err)
	}

	// A short one: it goes stale, and is taken over.
	kill(t, startChild(t, "claim", dir+"/stale", "claimed", "STATEUTIL_S3_CLAIM_TTL=1s"))
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
func TestClaimLostIsReported(t *testing.T) {
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
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
// claim: the destination can be claimed again at once. (A refresh cut off
// by Release could rewrite the object on the server unseen by the holder,
// whose delete, conditional on the older ETag, then left a fresh claim.)
func TestReleaseDuringRefreshLeavesNoClaim(t *testing.T) {
	t.Setenv("STATEUTIL_S3_CLAIM_TTL", "40ms") // a refresh every 10 ms
	dir := s3test.Dir(t)
	st, p := s3test.Resolve(t, dir)
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
