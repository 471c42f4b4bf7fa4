package rocksdbformat

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// TestNoNativeLeak opens, writes, iterates, checkpoints and closes an
// instance many times; a leaked native object would grow the RSS.
func TestNoNativeLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("long loop")
	}
	ctx := context.Background()
	op := rockstest.Operator("10", 1, 128)
	base := t.TempDir()
	kgs := keygroup.Range{Start: 0, End: 127}
	cycle := func(i int) {
		dir := filepath.Join(base, "db")
		in, err := OpenInstance(dir, op, 0, kgs)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 500 {
			e := snapshot.Entry{KeyGroup: j % 128, State: "events", Key: []byte(strconv.Itoa(j)), Namespace: []byte("n"), Value: make([]byte, 100), ExpiresAt: 1}
			if err := in.Put(&e); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		for _, err := range in.Entries(ctx, keygroup.Range{Start: 10, End: 60}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			t.Fatal("scan found nothing")
		}
		if err := in.db.Checkpoint(filepath.Join(base, "cp")); err != nil {
			t.Fatal(err)
		}
		in.Destroy()
		os.RemoveAll(filepath.Join(base, "cp"))
	}
	const loops = 200
	before, after := rockstest.RSSAcross(t, 30, loops, cycle)
	t.Logf("VmRSS after warm-up %d KiB, after %d more open/write/iterate/checkpoint/close cycles %d KiB (%+d KiB)", before, loops, after, after-before)
	if after-before > 4<<10 {
		t.Errorf("RSS grew by %d KiB over %d cycles; a native object leaks", after-before, loops)
	}
}
