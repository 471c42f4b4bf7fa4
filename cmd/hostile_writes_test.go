package cmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/storage"
)

// The hostile write trials: what a careless user or a second writer does
// to a destination. Each logs its counts as "hostile-trials: NAME N",
// which scripts/hostile-trials.sh sums; STATEUTIL_HOSTILE_ROUNDS sets how
// many rounds the ones that repeat run (a few in make test).

// hostileRounds is the rounds a repeating trial runs.
func hostileRounds(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv("STATEUTIL_HOSTILE_ROUNDS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("STATEUTIL_HOSTILE_ROUNDS=%q: want a positive number", v)
	}
	return n
}

// hostileCount logs one count of a trial for scripts/hostile-trials.sh.
func hostileCount(t *testing.T, name string, n int) {
	t.Helper()
	t.Logf("hostile-trials: %s %d", name, n)
}

// hostileWrite is a command that writes DST, by the format it writes.
type hostileWrite struct {
	format string
	args   func(dst string) []string
}

// hostileWrites are the writes of the trials: a convert to every format
// stateutil writes, a key deletion and a Flink savepoint's rewrite.
func hostileWrites() []hostileWrite {
	var out []hostileWrite
	for _, f := range writableFormats() {
		out = append(out, hostileWrite{f, func(dst string) []string { return []string{"convert", example, "--to", f, "--output", dst} }})
	}
	out = append(out,
		hostileWrite{"memory", func(dst string) []string {
			return []string{"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--output", dst}
		}},
		hostileWrite{"flink", func(dst string) []string {
			return []string{"convert", flinkSavepoint, "--to", "flink", "--output", dst}
		}})
	return out
}

// userDestination makes at dst what a user keeps there and no write may
// touch; named names its files, for the refusal to name.
type userDestination struct {
	kind string
	make func(t *testing.T, dst string) (named string)
}

func userFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var userDestinations = []userDestination{
	{"text file", func(t *testing.T, dst string) string { userFile(t, dst, "my notes\n"); return filepath.Base(dst) }},
	{"empty file", func(t *testing.T, dst string) string { userFile(t, dst, ""); return filepath.Base(dst) }},
	{"garbage _metadata and precious.txt", func(t *testing.T, dst string) string {
		userFile(t, filepath.Join(dst, "_metadata"), "not a snapshot's metadata")
		userFile(t, filepath.Join(dst, "precious.txt"), "keep me")
		return "precious.txt"
	}},
	{"a writing marker and user files", func(t *testing.T, dst string) string {
		userFile(t, filepath.Join(dst, ".stateutil-writing"), "pid 1 on elsewhere\n")
		userFile(t, filepath.Join(dst, "NOTES.txt"), "keep me")
		userFile(t, filepath.Join(dst, "data", "table.csv"), "a,b\n")
		return "NOTES.txt"
	}},
	{"a snapshot and NOTES.txt", func(t *testing.T, dst string) string {
		mustRun(t, "convert", example, "--to", "filesystem", "--output", dst, "--quiet")
		userFile(t, filepath.Join(dst, "NOTES.txt"), "keep me")
		return "NOTES.txt"
	}},
}

// TestForceReplacesOnlyASnapshot writes, with --force and without, over
// what is not a snapshot, or is one beside a user's files: every write is
// refused (exit 1) naming them, and changes nothing at all.
func TestForceReplacesOnlyASnapshot(t *testing.T) {
	refused, changed, removed := 0, 0, 0
	for _, w := range hostileWrites() {
		for _, u := range userDestinations {
			for _, force := range []bool{false, true} {
				name := fmt.Sprintf("%s %s over %s force=%v", w.args("DST")[0], w.format, u.kind, force)
				dir := t.TempDir()
				dst := filepath.Join(dir, "dst")
				named := u.make(t, dst)
				before, err := snaptest.HashTree(dir)
				if err != nil {
					t.Fatal(err)
				}
				args := append(w.args(dst), "--quiet")
				if force {
					args = append(args, "--force")
				}
				code, _, errOut := run(t, args...)
				after, err := snaptest.HashTree(dir)
				if err != nil {
					t.Fatal(err)
				}
				if code == ExitUsage && strings.Contains(errOut, named) {
					refused++
				} else {
					t.Errorf("%s: exit %d, want %d naming %q: %s", name, code, ExitUsage, named, errOut)
				}
				for p := range before {
					if after[p] == "" {
						removed++
					}
				}
				if d := treeChange(before, after); d != "" {
					changed++
					t.Errorf("%s: refused, changed %s", name, d)
				}
			}
		}
	}
	hostileCount(t, "force-over-non-snapshots-refused", refused)
	hostileCount(t, "user-files-removed", removed)
	hostileCount(t, "paths-changed-by-refused-writes", changed)
}

// killAtEnv makes the re-executed test binary kill itself (SIGKILL) at
// its Nth progress report.
const killAtEnv = "STATEUTIL_KILL_AT"

// killedAt runs stateutil in a child, its TMPDIR tmp, that kills itself
// at its at-th progress report; killed is false if it finished before.
func killedAt(t *testing.T, tmp string, at int, args ...string) (killed bool) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), mainEnv+"="+strings.Join(args, "\x1f"), killAtEnv+"="+strconv.Itoa(at), "TMPDIR="+tmp)
	var stderr strings.Builder
	c.Stderr = &stderr
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return false
	case errors.As(err, &exit) && exit.ExitCode() == -1:
		return true
	}
	t.Fatalf("%v: %v: %s", args, err, stderr.String())
	return false
}

// TestKilledForceKeepsUserFiles kills forced writes over an older
// snapshot at a progress report, then puts a user's NOTES.txt beside what
// they left, and writes again: a plain write is refused (exit 1), and so
// is a forced one while NOTES.txt is among the snapshot's files, each
// changing nothing; once the user moves it away, the forced write
// succeeds and leaves nothing of the killed one. NOTES.txt is never lost.
func TestKilledForceKeepsUserFiles(t *testing.T) {
	rounds := hostileRounds(t, 1)
	killed, removed, changed, left, bad := 0, 0, 0, 0, 0
	for r := range rounds {
		for i, w := range hostileWrites() {
			dir := t.TempDir()
			dst := filepath.Join(dir, "dst")
			mustRun(t, append(w.args(dst), "--quiet")...)
			at := 1 + (r+i)%3
			if killedAt(t, t.TempDir(), at, append(w.args(dst), "--force", "--quiet")...) {
				killed++
			}
			info, err := os.Stat(dst)
			if err != nil {
				t.Fatalf("%v killed at report %d: the old snapshot is gone: %v", w.args(dst), at, err)
			}
			notes := filepath.Join(dir, "NOTES.txt")
			if info.IsDir() {
				notes = filepath.Join(dst, "NOTES.txt")
			}
			userFile(t, notes, "keep me")
			before, err := snaptest.HashTree(dir)
			if err != nil {
				t.Fatal(err)
			}
			refusedWrites := [][]string{w.args(dst)}
			if info.IsDir() {
				refusedWrites = append(refusedWrites, append(w.args(dst), "--force"))
			}
			for _, args := range refusedWrites {
				code, _, errOut := run(t, append(args, "--quiet")...)
				if code != ExitUsage {
					bad++
					t.Errorf("%v after a killed forced write: exit %d, want %d: %s", args, code, ExitUsage, errOut)
				}
				after, err := snaptest.HashTree(dir)
				if err != nil {
					t.Fatal(err)
				}
				if after[filepath.Base(notes)] == "" && after[filepath.Join("dst", "NOTES.txt")] == "" {
					removed++
				}
				if d := treeChange(before, after); d != "" {
					changed++
					t.Errorf("%v, refused, changed %s", args, d)
				}
			}
			if info.IsDir() {
				if err := os.Rename(notes, filepath.Join(dir, "NOTES.txt")); err != nil {
					t.Fatal(err)
				}
				notes = filepath.Join(dir, "NOTES.txt")
			}
			code, _, errOut := run(t, append(w.args(dst), "--force", "--quiet")...)
			if code != ExitOK {
				bad++
				t.Errorf("%v --force after the user's file is moved: exit %d: %s", w.args(dst), code, errOut)
			}
			if b, err := os.ReadFile(notes); err != nil || string(b) != "keep me" {
				removed++
				t.Errorf("%v: NOTES.txt: %q %v", w.args(dst), b, err)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				left += len(l)
				t.Errorf("%v: left %v", w.args(dst), l)
			}
			if code, out, errOut := run(t, "verify", dst); code != ExitOK {
				bad++
				t.Errorf("%v: verify: exit %d: %s%s", w.args(dst), code, out, errOut)
			}
		}
	}
	hostileCount(t, "killed-force-sequences", killed)
	hostileCount(t, "user-files-removed", removed)
	hostileCount(t, "paths-changed-by-refused-writes", changed)
	hostileCount(t, "leftovers-after-rewrite", left)
	hostileCount(t, "unexpected-outcomes", bad)
}

// treeChange says how two snaptest.HashTree results differ ("" when equal),
// but for the claim file a killed writer left beside its destination,
// which the next writer takes over and removes as it releases it.
func treeChange(before, after map[string]string) string {
	var out []string
	for p, h := range before {
		if after[p] != h && !strings.HasPrefix(filepath.Base(p), storage.TempPrefix+"claim-") {
			out = append(out, p)
		}
	}
	for p := range after {
		if before[p] == "" {
			out = append(out, p+" (new)")
		}
	}
	return strings.Join(out, ", ")
}

// spelling names one place two ways: as writer A and as writer B give it.
type spelling struct {
	name string
	// make lays dir out and returns the two names of its destination;
	// existing is whether a snapshot is there before (both write with
	// --force then).
	make     func(t *testing.T, dir string) (a, b string)
	existing bool
}

var spellings = []spelling{
	{"symbolic link to an existing snapshot", func(t *testing.T, dir string) (string, string) {
		real := filepath.Join(dir, "real", "dst")
		mustRun(t, "convert", example, "--to", "filesystem", "--output", real, "--quiet")
		mustSymlink(t, real, filepath.Join(dir, "link"))
		return real, filepath.Join(dir, "link")
	}, true},
	{"symbolic link to a destination not there yet", func(t *testing.T, dir string) (string, string) {
		real := filepath.Join(dir, "real", "dst")
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, filepath.Join("real", "dst"), filepath.Join(dir, "link"))
		return real, filepath.Join(dir, "link")
	}, false},
	{"a path through ..", func(t *testing.T, dir string) (string, string) {
		real := filepath.Join(dir, "real", "dst")
		if err := os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return real, filepath.Join(dir, "real", "sub") + "/../dst"
	}, false},
	{"a linked parent and ..", func(t *testing.T, dir string) (string, string) {
		real := filepath.Join(dir, "real", "dst")
		if err := os.MkdirAll(filepath.Join(dir, "real", "deep", "er"), 0o755); err != nil {
			t.Fatal(err)
		}
		// link/.. is real/deep, not dir: the kernel resolves the link
		// before the "..".
		mustSymlink(t, filepath.Join("real", "deep", "er"), filepath.Join(dir, "link"))
		return real, filepath.Join(dir, "link") + "/../../dst"
	}, false},
}

func mustSymlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// TestClaimsHoldAcrossSpellings has writer A write a destination, held in
// the middle of its write, while writer B writes the same place by
// another name: B must be refused as held by another writer (exit 1),
// and A must finish. Then both start at once, with no hold: at most one
// may succeed. Never do both.
func TestClaimsHoldAcrossSpellings(t *testing.T) {
	rounds := hostileRounds(t, 1)
	formats := writableFormats()
	double, unclear, raced := 0, 0, 0
	for r := range rounds {
		for i, sp := range spellings {
			f := formats[(r+i)%len(formats)]
			dir := t.TempDir()
			a, b := sp.make(t, dir)
			args := func(dst string) []string {
				out := []string{"convert", example, "--to", f, "--output", dst, "--quiet"}
				if sp.existing {
					out = append(out, "--force")
				}
				return out
			}
			d, u, firstErr := whileHeld(t, filepath.Join(dir, "pause"), args(a), args(b))
			double, unclear = double+d, unclear+u
			if firstErr != "" {
				t.Errorf("%s (%s): writer A: %s", sp.name, f, firstErr)
			} else {
				sameState(t, example, a)
			}

			// Both at once, nothing held.
			dir = t.TempDir()
			a, b = sp.make(t, dir)
			ca, cb := startMain(t, args(a)), startMain(t, args(b))
			okA, okB := ca.Wait() == nil, cb.Wait() == nil
			raced++
			if okA && okB && !sp.existing {
				double++
				t.Errorf("%s (%s), at once: both writers succeeded", sp.name, f)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("%s (%s), at once: left %v", sp.name, f, l)
			}
			if okA || okB {
				sameState(t, example, a)
			}
		}
	}
	hostileCount(t, "claim-rounds-held", rounds*len(spellings))
	hostileCount(t, "claim-rounds-at-once", raced)
	hostileCount(t, "double-successes", double)
	hostileCount(t, "unclear-refusals", unclear)
}

// whileHeld runs writer A (args a) in a child held in the middle of its
// write (pause names its pause files), writer B (args b) to its end
// meanwhile, then lets A finish. B must be refused as held by another
// writer: double counts both succeeding, unclear B failing otherwise.
// aErr is A's stderr if A failed.
func whileHeld(t *testing.T, pause string, a, b []string) (double, unclear int, aErr string) {
	t.Helper()
	first := exec.Command(os.Args[0], "-test.run=^$")
	first.Env = append(os.Environ(), mainEnv+"="+strings.Join(a, "\x1f"), pauseEnv+"="+pause)
	var firstErr strings.Builder
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !exists(pause + ".paused"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("%v: writer A never started writing: %s", a, firstErr.String())
		}
	}
	code, errOut := child(t, t.TempDir(), 0, b...)
	userFile(t, pause+".go", "")
	firstOK := first.Wait() == nil
	switch {
	case code == ExitOK && firstOK:
		double++
		t.Errorf("%v while %v writes: both writers succeeded", b, a)
	case code != ExitUsage || !strings.Contains(errOut, "held by another writer"):
		unclear++
		t.Errorf("%v while %v writes: exit %d, want %d saying it is held by another writer: %s", b, a, code, ExitUsage, errOut)
	}
	if !firstOK {
		aErr = "failed: " + firstErr.String()
	}
	return double, unclear, aErr
}

// startMain starts stateutil in a child process.
func startMain(t *testing.T, args []string) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), mainEnv+"="+strings.Join(args, "\x1f"), "TMPDIR="+t.TempDir())
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	return c
}
