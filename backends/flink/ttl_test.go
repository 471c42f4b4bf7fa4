package flink

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/lookup"
)

// TestTTLNotInvented: Flink records a TTL wrapper and each value's
// last-access time, never the TTL duration. The state says so, and a
// record shows the last access, not an expiry computed from a zero TTL.
func TestTTLNotInvented(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", "2.3.0", "basic-hashmap-canonical", "snapshot", "savepoint-*"))
	if len(dirs) != 1 {
		t.Fatalf("savepoint: %v", dirs)
	}
	r := openFixture(t, dirs[0])
	op, ok := r.Snapshot().Operator("keyed")
	if !ok {
		t.Fatal("no operator keyed")
	}
	st, _ := op.KeyedStateByName("last")
	if st == nil || st.TTL == nil || !st.TTL.Unknown || st.TTL.TTLMillis != 0 {
		t.Fatalf("state last: TTL %+v, want unknown", st)
	}
	if s := st.TTL.String(); strings.Contains(s, "0s") || !strings.Contains(s, "not recorded") {
		t.Errorf("TTL shows as %q", s)
	}
	if c, _ := op.KeyedStateByName("count"); c.TTL != nil {
		t.Errorf("state count has TTL %+v", c.TTL)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rec, err := lookup.Get(context.Background(), r, testReg.Codecs, lookup.Query{Operator: "keyed", State: "last", Key: "user-1", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Value != "e181" || rec.TTL == nil || !rec.TTL.ExpiresAt.IsZero() || rec.TTL.Expired {
		t.Fatalf("record %+v ttl %+v", rec, rec.TTL)
	}
	// The harness took the savepoint on the day the test data was made.
	if y := rec.TTL.LastAccess.Year(); y < 2025 || y > 2030 {
		t.Errorf("last access %v", rec.TTL.LastAccess)
	}
}
