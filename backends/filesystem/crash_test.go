package filesystem_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// Environment of the writer child: where to write, and after how many
// entries to SIGKILL itself (0: never).
const (
	crashLocEnv   = "STATEUTIL_FS_CRASH_LOC"
	crashAfterEnv = "STATEUTIL_FS_CRASH_AFTER"
)

func TestMain(m *testing.M) {
	if loc := os.Getenv(crashLocEnv); loc != "" {
		os.Exit(crashChild(loc))
	}
	os.Exit(m.Run())
}

// crashConfig is the snapshot the child writes: a few MiB, part of it
// inline in _metadata and part in files.
func crashConfig() generate.Config {
	c := generate.Default()
	c.Keys, c.ValueBytes = 4000, 100
	return c
}

const crashInline = 4 << 10

// crashChild writes crashConfig to loc, announcing "ready" first and
// "committed" after Commit; it kills itself after STATEUTIL_FS_CRASH_AFTER
// entries.
func crashChild(loc string) int {
	after, _ := strconv.Atoi(os.Getenv(crashAfterEnv))
	f, err := testReg.Lookup("filesystem")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	w, err := testReg.Create(context.Background(), f, loc, snapshot.WriteOptions{InlineThreshold: crashInline})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := generate.Write(context.Background(), &killAfter{Writer: w, left: after}, crashConfig()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("committed")
	return 0
}

// killAfter SIGKILLs the process when its entry budget runs out.
type killAfter struct {
	snapshot.Writer
	left int
}

func (k *killAfter) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	sw, err := k.Writer.Subtask(ctx, op, index, kgs)
	return &killAfterSubtask{SubtaskWriter: sw, k: k}, err
}

type killAfterSubtask struct {
	snapshot.SubtaskWriter
	k *killAfter
}

func (s *killAfterSubtask) Entry(e *snapshot.Entry) error {
	if s.k.left > 0 {
		if s.k.left--; s.k.left == 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Hour)
		}
	}
	return s.SubtaskWriter.Entry(e)
}

// trial runs the child against loc and kills it after delay (when > 0)
// or after entries entries; it reports whether the child committed and
// how long it wrote.
func trial(t *testing.T, loc string, delay time.Duration, entries int) (committed bool, took time.Duration) {
	t.Helper()
	c, lines, stderr := formattest.StartChild(t, crashLocEnv+"="+loc, crashAfterEnv+"="+strconv.Itoa(entries))
	if !lines.Scan() || lines.Text() != "ready" {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("child did not start: %q %s", lines.Text(), stderr.String())
	}
	start := time.Now()
	if delay > 0 {
		timer := time.AfterFunc(delay, func() { c.Process.Kill() })
		defer timer.Stop()
	}
	for lines.Scan() {
		if lines.Text() == "committed" {
			committed = true
		}
	}
	formattest.WaitChild(t, c, stderr)
	return committed, time.Since(start)
}

// accepted reports whether snapshot.Open and `stateutil inspect` accept
// loc, failing t when they disagree.
func accepted(t *testing.T, loc string) (snapshot.Reader, bool) {
	t.Helper()
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{})
	var stdout, stderr bytes.Buffer
	code := cmd.Run(ctx, []string{"inspect", loc}, &stdout, &stderr)
	if (err == nil) != (code == cmd.ExitOK) {
		t.Errorf("%s: snapshot.Open says %v but stateutil inspect exits %d: %s", loc, err, code, stderr.String())
	}
	if err != nil {
		if code != cmd.ExitNotFound {
			t.Errorf("%s: inspect of a partial checkpoint exits %d (%s), want %d (not found)", loc, code, strings.TrimSpace(stderr.String()), cmd.ExitNotFound)
		}
		return nil, false
	}
	return r, true
}

// crashTrials kills a filesystem writer at random points, n times, and
// asserts that no partial checkpoint is ever accepted: whatever
// snapshot.Open or `stateutil inspect` accepts is the complete snapshot.
func crashTrials(t *testing.T, root string, n int) {
	memLoc := filepath.Join(t.TempDir(), "want.dump")
	mw, err := testReg.Create(ctx, memory.Format, memLoc, snapshot.WriteOptions{StateSizeCap: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate.Write(ctx, mw, crashConfig()); err != nil {
		t.Fatal(err)
	}
	_, want := collect(t, memLoc)
	total := 0
	for _, subs := range want {
		for _, s := range subs {
			total += len(s.Entries)
		}
	}

	// An uninterrupted run times the write and proves the child right.
	loc := root + "/calibrate/job/chk-1"
	committed, full := trial(t, loc, 0, 0)
	if !committed {
		t.Fatal("uninterrupted child did not commit")
	}
	if r, ok := accepted(t, loc); !ok {
		t.Fatal("uninterrupted write not accepted")
	} else {
		checkComplete(t, loc, r, want)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var refused, complete, partial int
	var modes []string
	for i := range n {
		job := fmt.Sprintf("%s/trial-%02d/job", root, i)
		loc := job + "/chk-1"
		var delay time.Duration
		var entries int
		if i%2 == 0 {
			delay = 1 + time.Duration(rng.Int64N(int64(full*6/5)))
			modes = append(modes, "t="+delay.Round(time.Millisecond).String())
		} else {
			entries = 1 + rng.IntN(total+total/10)
			modes = append(modes, "n="+strconv.Itoa(entries))
		}
		committed, _ := trial(t, loc, delay, entries)
		for _, l := range []string{loc, job} {
			r, ok := accepted(t, l)
			switch {
			case !ok:
				if committed {
					t.Errorf("trial %d (%s): committed, but %s is refused", i, modes[i], l)
				}
				if l == loc {
					refused++
				}
			case checkComplete(t, l, r, want):
				if l == loc {
					complete++
				}
			default:
				if l == loc {
					partial++
				}
				t.Errorf("trial %d (%s): %s accepted as a checkpoint but incomplete", i, modes[i], l)
			}
		}
	}
	t.Logf("%d trials (uninterrupted write %v, %d entries; kills %v): %d left no checkpoint, %d had committed a complete one, %d accepted partial checkpoints",
		n, full.Round(time.Millisecond), total, modes, refused, complete, partial)
	if partial != 0 {
		t.Errorf("%d partial checkpoints accepted", partial)
	}
	if refused == 0 {
		t.Errorf("no trial interrupted the write before its commit; the kills come too late")
	}
}

// checkComplete reports whether r holds exactly want and verifies clean.
func checkComplete(t *testing.T, loc string, r snapshot.Reader, want map[string][]snaptest.Subtask) bool {
	t.Helper()
	defer r.Close()
	got, err := snaptest.Collect(ctx, r)
	if err != nil {
		t.Logf("%s: reading: %v", loc, err)
		return false
	}
	res, err := verify.Check(ctx, loc, r, testReg.Codecs)
	if err != nil || !res.OK {
		t.Logf("%s: verify: %v %v", loc, err, findings(res))
		return false
	}
	ok := true
	for label, subs := range want {
		if len(got[label]) != len(subs) {
			return false
		}
		for i := range subs {
			if same, _ := snaptest.EqualEntries(subs[i].Entries, got[label][i].Entries); !same || len(subs[i].Elements) != len(got[label][i].Elements) {
				ok = false
			}
		}
	}
	return ok
}

func TestKilledWriterLeavesNoCheckpoint(t *testing.T) {
	crashTrials(t, t.TempDir(), 20)
}

func TestKilledWriterLeavesNoCheckpointHDFS(t *testing.T) {
	crashTrials(t, formattest.HDFSDir(t), 6)
}
