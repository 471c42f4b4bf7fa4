package rocksdb

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// vmRSS is the process's resident set in KiB, from /proc/self/status.
func vmRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Skip("VmRSS not reported")
	return 0
}

// rssAcross runs cycle warmup times (allocator arenas and caches settle),
// then loops times more, and returns VmRSS in KiB before and after those.
func rssAcross(t *testing.T, warmup, loops int, cycle func(i int)) (before, after int64) {
	measure := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		return vmRSS(t)
	}
	for i := range warmup {
		cycle(i)
	}
	before = measure()
	for i := range loops {
		cycle(i)
	}
	return before, measure()
}

// TestNoNativeLeak opens, writes, iterates, checkpoints and closes an
// instance many times; a leaked native object would grow the RSS.
func TestNoNativeLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("long loop")
	}
	ctx := context.Background()
	op := testOperator("10", 1, 128)
	base := t.TempDir()
	kgs := keygroup.Range{Start: 0, End: 127}
	cycle := func(i int) {
		dir := filepath.Join(base, "db")
		in, err := openInstance(dir, op, 0, kgs)
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
		in.destroy()
		os.RemoveAll(filepath.Join(base, "cp"))
	}
	const loops = 200
	before, after := rssAcross(t, 30, loops, cycle)
	t.Logf("VmRSS after warm-up %d KiB, after %d more open/write/iterate/checkpoint/close cycles %d KiB (%+d KiB)", before, loops, after, after-before)
	if after-before > 4<<10 {
		t.Errorf("RSS grew by %d KiB over %d cycles; a native object leaks", after-before, loops)
	}
}
