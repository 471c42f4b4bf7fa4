package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// dnSetup is the start of the tests on the cluster of three DataNodes and
// replication 3 (scripts/hdfs-start.sh --dn): a storage as the superuser, a
// fresh root and the harness control address.
func dnSetup(t *testing.T) (st storage.Storage, root, ctl string) {
	t.Helper()
	addr := needEnv(t, "STATEUTIL_TEST_DN_HDFS")
	ctl = needEnv(t, "STATEUTIL_TEST_DN_CONTROL")
	plainEnv(t, superuser(t))
	// Long enough to see a dead pipeline as an error, short enough for trials.
	old := storage.HDFSIOTimeout
	storage.HDFSIOTimeout = 10 * time.Second
	t.Cleanup(func() { storage.HDFSIOTimeout = old })
	st, root = hdfsRoot(t, addr)
	// A test that fails with a DataNode stopped leaves the next one all three.
	t.Cleanup(func() { control(t, ctl, "start-datanode") })
	return st, root, ctl
}

// corruptReadTrial writes data to p, corrupts one replica of each of its
// blocks, and reads p until the NameNode knows every corrupt replica, which
// only the reader's reports tell it (nothing else reads the blocks). Every
// read must return exactly data. It returns the number of reads.
func corruptReadTrial(t *testing.T, st storage.Storage, ctl, p string, data []byte) int {
	t.Helper()
	ctx := context.Background()
	if err := storage.WriteFile(ctx, st, p, data); err != nil {
		t.Fatal(err)
	}
	reply := control(t, ctl, "corrupt-replica "+p)
	blocks := strings.Count(reply, ",") + 1
	// The NameNode lists replicas in a random order for a reader on the
	// DataNodes' host, so a few reads come upon every corrupt one (a block's
	// is missed by 30 reads with odds of (2/3)^30, 5e-6).
	for reads := 1; reads <= 30; reads++ {
		got, err := storage.ReadAll(ctx, st, p, int64(len(data))+1)
		if err != nil {
			t.Fatalf("read %d of %s (%s): %v", reads, p, reply, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d of %s (%s): %d bytes, not the %d written", reads, p, reply, len(got), len(data))
		}
		if control(t, ctl, "corrupt-replicas "+p) == "ok corrupt="+strconv.Itoa(blocks) {
			return reads
		}
	}
	t.Fatalf("after 30 exact reads of %s the NameNode does not know its %d corrupt replicas (%s): %s",
		p, blocks, reply, control(t, ctl, "corrupt-replicas "+p))
	return 0
}

// killWriteTrial writes data to p in 64 KiB pieces and stops a random
// DataNode of the pipeline after killAt bytes. The write either commits,
// the NameNode then holding p closed at its full length, or fails cleanly
// (nothing at p, no temporary left); after the DataNode is back, a failed
// write is run again. Either way p must then hold exactly data. It returns
// the first write's error.
func killWriteTrial(t *testing.T, st storage.Storage, ctl, p string, data []byte, killAt int) error {
	t.Helper()
	ctx := context.Background()
	w, err := st.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	var werr error
	killed := ""
	for off := 0; off < len(data) && werr == nil; off += 64 << 10 {
		if killed == "" && off >= killAt {
			killed = control(t, ctl, "stop-datanode random")
		}
		_, werr = w.Write(data[off:min(off+64<<10, len(data))])
	}
	if killed == "" {
		killed = control(t, ctl, "stop-datanode random")
	}
	if werr == nil {
		werr = w.Commit()
	}
	if werr == nil {
		if got, want := control(t, ctl, "file-state "+p), fmt.Sprintf("ok length=%d closed=true", len(data)); got != want {
			t.Fatalf("NameNode's state of %s after kill at %d (%s): %q, want %q", p, killAt, killed, got, want)
		}
	} else {
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after %v: %v", werr, err)
		}
		if _, err := st.Stat(ctx, p); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Stat of %s after a failed write (%v) = %v, want storage.ErrNotFound", p, werr, err)
		}
	}
	control(t, ctl, "start-datanode")
	if werr != nil {
		t.Logf("kill at %d (%s): write failed: %v; writing again", killAt, killed, werr)
		if err := storage.WriteFile(ctx, st, p, data); err != nil {
			t.Fatalf("rewrite after the DataNode came back: %v", err)
		}
	}
	got, err := storage.ReadAll(ctx, st, p, int64(len(data))+1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%s after kill at %d (%s): %d bytes, %v; want the %d written", p, killAt, killed, len(got), err, len(data))
	}
	return werr
}

// A replica whose data is corrupt costs a read nothing: it goes on from
// another replica, and the NameNode is told which one is bad.
func TestHDFSCorruptReplicaRead(t *testing.T) {
	st, root, ctl := dnSetup(t)
	data := make([]byte, 3<<20+12345)
	rand.Read(data)
	reads := corruptReadTrial(t, st, ctl, root+"/state", data)
	t.Logf("NameNode knows the corrupt replicas after %d reads", reads)
}

// A DataNode stopped while a file of several blocks is written costs the
// write nothing, wherever it stops: the pipeline goes on without it, as
// Hadoop's client's does. The kills fall before the first block, inside
// one, at a boundary between two and after the last byte (at Commit).
func TestHDFSDataNodeKilledDuringWrite(t *testing.T) {
	st, root, ctl := dnSetup(t)
	data := make([]byte, 3<<20+12345)
	rand.Read(data)
	for i, killAt := range []int{0, 3 << 19, 1 << 20, 2<<20 + 5<<16, len(data)} {
		if err := killWriteTrial(t, st, ctl, root+"/state"+strconv.Itoa(i), data, killAt); err != nil {
			t.Errorf("kill at %d: the write failed (%v); it must go on with the other DataNodes", killAt, err)
		}
	}
}

// STATEUTIL_DN_TRIALS=N (default 2) runs N kills at random points of
// writes and N corruptions of random replicas before reads, of files of
// random sizes, and logs the counts.
func TestHDFSDataNodeTrials(t *testing.T) {
	st, root, ctl := dnSetup(t)
	n := 2
	if v := os.Getenv("STATEUTIL_DN_TRIALS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("STATEUTIL_DN_TRIALS=%q: %v", v, err)
		}
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := mrand.New(mrand.NewSource(seed))
	failed, reads := 0, 0
	for i := 0; i < n; i++ {
		data := make([]byte, 1+rnd.Intn(4<<20))
		rand.Read(data)
		if killWriteTrial(t, st, ctl, root+"/w"+strconv.Itoa(i), data, rnd.Intn(len(data))) != nil {
			failed++
		}
		reads += corruptReadTrial(t, st, ctl, root+"/r"+strconv.Itoa(i), data)
	}
	t.Logf("%d kills during writes: %d completed without the DataNode, %d failed cleanly and were written again; "+
		"%d reads with corrupt replicas (%d reads in all), every output exact",
		n, n-failed, failed, n, reads)
}

// A NameNode in safe mode refuses every change for a while (as it does when
// it starts); a write waits for it, as Hadoop's client's does, and goes on
// once it leaves.
func TestHDFSWriteWaitsForSafeMode(t *testing.T) {
	st, root, ctl := dnSetup(t)
	t.Cleanup(func() { control(t, ctl, "safemode leave") })
	data := make([]byte, 1<<20+4321)
	rand.Read(data)
	p := root + "/state"
	control(t, ctl, "safemode enter")
	done := make(chan error, 1)
	go func() { done <- storage.WriteFile(context.Background(), st, p, data) }()
	select {
	case err := <-done:
		t.Fatalf("the write ended while the NameNode was in safe mode: %v", err)
	case <-time.After(2 * time.Second):
	}
	control(t, ctl, "safemode leave")
	if err := <-done; err != nil {
		t.Fatalf("the write after the NameNode left safe mode: %v", err)
	}
	got, err := storage.ReadAll(context.Background(), st, p, int64(len(data))+1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes, %v; want the %d written", p, len(got), err, len(data))
	}
}

// A NameNode that stays in safe mode fails a write after a bounded wait,
// with nothing left behind.
func TestHDFSWriteGivesUpOnSafeMode(t *testing.T) {
	st, root, ctl := dnSetup(t)
	t.Cleanup(func() { control(t, ctl, "safemode leave") })
	p := root + "/state"
	control(t, ctl, "safemode enter")
	start := time.Now()
	err := storage.WriteFile(context.Background(), st, p, []byte("state"))
	took := time.Since(start)
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "SafeModeException") {
		t.Fatalf("write to a NameNode in safe mode: %v, want storage.ErrUnavailable naming the SafeModeException", err)
	}
	// 12.7 s of waits between the attempts.
	if took < 12*time.Second || took > 40*time.Second {
		t.Fatalf("write to a NameNode in safe mode failed after %v, want 12.7 s of retries and little more", took)
	}
	control(t, ctl, "safemode leave")
	if _, err := st.Stat(context.Background(), p); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat of %s after the failed write = %v, want storage.ErrNotFound", p, err)
	}
}
