package filesystem_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/filesystem"
	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/report"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
)

// collect opens loc and reads it whole.
func collect(t *testing.T, loc string) (snapshot.Reader, map[string][]snaptest.Subtask) {
	t.Helper()
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	t.Cleanup(func() { r.Close() })
	all, err := snaptest.Collect(ctx, r)
	if err != nil {
		t.Fatalf("read %s: %v", loc, err)
	}
	return r, all
}

// sameState compares two whole snapshots read by snaptest.Collect.
func sameState(t *testing.T, a, b map[string][]snaptest.Subtask) (entries, elements int) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d operators vs %d", len(a), len(b))
	}
	for label, subs := range a {
		other := b[label]
		if len(other) != len(subs) {
			t.Fatalf("operator %s: %d subtasks vs %d", label, len(subs), len(other))
		}
		for i := range subs {
			if ok, diff := snaptest.EqualEntries(subs[i].Entries, other[i].Entries); !ok {
				t.Errorf("operator %s subtask %d: %s", label, i, diff)
			}
			if len(subs[i].Elements) != len(other[i].Elements) {
				t.Errorf("operator %s subtask %d: %d elements vs %d", label, i, len(subs[i].Elements), len(other[i].Elements))
			} else {
				for j, el := range subs[i].Elements {
					if o := other[i].Elements[j]; el.State != o.State || !bytes.Equal(el.Value, o.Value) {
						t.Errorf("operator %s subtask %d element %d: %s/%q vs %s/%q", label, i, j, el.State, el.Value, o.State, o.Value)
					}
				}
			}
			if !bytes.Equal(subs[i].Raw.Keyed, other[i].Raw.Keyed) || !bytes.Equal(subs[i].Raw.Operator, other[i].Raw.Operator) {
				t.Errorf("operator %s subtask %d: raw state differs", label, i)
			}
			entries += len(subs[i].Entries)
			elements += len(subs[i].Elements)
		}
	}
	return entries, elements
}

// The generated snapshot written as a filesystem snapshot on HDFS reads
// back entry-identical to the same snapshot in the memory format, with
// state inline in _metadata (the default threshold) and with every blob
// in its own HDFS file.
func TestHDFSRoundTripMatchesMemory(t *testing.T) {
	dir := formattest.HDFSDir(t)
	cfg := generate.Default()
	cfg.Keys, cfg.ValueBytes = 2000, 40
	memLoc := filepath.Join(t.TempDir(), "snapshot.dump")
	mw, err := testReg.Create(ctx, memory.Format, memLoc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate.Write(ctx, mw, cfg); err != nil {
		t.Fatal(err)
	}
	memReader, want := collect(t, memLoc)
	wantSum, err := report.Summarize(ctx, memLoc, memReader, true)
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]snapshot.WriteOptions{"inline": {}, "files": {InlineThreshold: -1}} {
		t.Run(name, func(t *testing.T) {
			loc := dir + "/" + name + "/job/chk-7"
			writeGenerated(t, loc, cfg, opts)
			st, p, err := testReg.Storage.Resolve(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			infos, err := st.List(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, in := range infos {
				files = append(files, in.Name)
			}
			if name == "files" && len(files) < 10 {
				t.Fatalf("state not in files on HDFS: %v", files)
			}
			// The job directory designates its latest checkpoint.
			r, got := collect(t, strings.TrimSuffix(loc, "/chk-7"))
			if r.Snapshot().Format != filesystem.Name {
				t.Fatalf("format %q", r.Snapshot().Format)
			}
			entries, elements := sameState(t, want, got)
			sum, err := report.Summarize(ctx, memLoc, r, true)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Totals != wantSum.Totals {
				t.Errorf("totals %+v, memory copy %+v", sum.Totals, wantSum.Totals)
			}
			t.Logf("%d files on HDFS, %d entries and %d elements identical to the memory copy", len(files), entries, elements)
		})
	}
}

// stopOnSubtask stops the DataNode when subtask stopAt of operator op
// starts, once.
type stopOnSubtask struct {
	snapshot.Writer
	t       *testing.T
	op      string
	stopAt  int
	stopped bool
}

func (w *stopOnSubtask) Subtask(c context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	if op.UID == w.op && index == w.stopAt && !w.stopped {
		w.stopped = true
		formattest.HDFSControl(w.t, "stop-datanode")
	}
	return w.Writer.Subtask(c, op, index, kgs)
}

// A DataNode stopped in the middle of a filesystem write fails the write
// with storage.ErrUnavailable naming the HDFS file, and leaves no
// _metadata; the DataNode is started again afterwards.
func TestHDFSDataNodeStoppedDuringWrite(t *testing.T) {
	dir := formattest.HDFSDir(t)
	old := storage.HDFSIOTimeout
	storage.HDFSIOTimeout = 15 * time.Second
	defer func() { storage.HDFSIOTimeout = old }()
	loc := dir + "/job/chk-1"
	cfg := generate.Default()
	cfg.Keys, cfg.ValueBytes = 6000, 200 // about 3 MiB per word-counter subtask: several 1 MiB blocks
	f, _ := testReg.Lookup(filesystem.Name)
	fw, err := testReg.Create(ctx, f, loc, snapshot.WriteOptions{InlineThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := &stopOnSubtask{Writer: fw, t: t, op: "word-counter", stopAt: 1}
	restarted := false
	restart := func() {
		if w.stopped && !restarted {
			restarted = true
			formattest.HDFSControl(t, "start-datanode")
		}
	}
	defer restart()
	start := time.Now()
	_, err = generate.Write(ctx, w, cfg)
	took := time.Since(start)
	if !w.stopped {
		t.Fatal("the DataNode was never stopped")
	}
	if err == nil {
		t.Fatal("write with the DataNode stopped succeeded")
	}
	t.Logf("error after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("error %v, want storage.ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), dir+"/job/chk-1/") {
		t.Errorf("error %q does not name the file in %s", err, loc)
	}
	abortStart := time.Now()
	if err := fw.Abort(ctx); err != nil {
		t.Logf("abort with the DataNode down: %v", err)
	}
	t.Logf("abort took %v", time.Since(abortStart).Round(time.Millisecond))
	restart()

	st, p, err := testReg.Storage.Resolve(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, p+"/_metadata"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("_metadata after the failed write: %v, want storage.ErrNotFound", err)
	}
	if r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{}); !errors.Is(err, snapshot.ErrNotFound) {
		if err == nil {
			r.Close()
		}
		t.Errorf("snapshot.Open after the failed write = %v, want snapshot.ErrNotFound", err)
	}
	if infos, err := st.List(ctx, p); err == nil {
		var left []string
		for _, in := range infos {
			left = append(left, in.Name)
		}
		t.Logf("left in %s after Abort: %v", loc, left)
	}
	// The same location takes a complete snapshot once the DataNode is back.
	cfg.Keys, cfg.ValueBytes = 50, 0
	writeGenerated(t, loc, cfg, snapshot.WriteOptions{InlineThreshold: -1})
	if r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{}); err != nil {
		t.Fatalf("snapshot after the DataNode restarted: %v", err)
	} else {
		r.Close()
	}
}
