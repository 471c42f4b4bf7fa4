package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/snapshot/snaptest"
)

func TestGoldenConvert(t *testing.T) {
	cases := map[string][]string{
		"convert-unknown-format":   {"convert", example, "--to", "yaml", "--output", "x"},
		"convert-no-to":            {"convert", example, "--output", "x"},
		"convert-no-output":        {"convert", example, "--to", "memory"},
		"convert-dst-is-src":       {"convert", example, "--to", "memory", "--output", example, "--force"},
		"convert-dst-exists":       {"convert", example, "--to", "jobmanager", "--output", "../testdata/memory/maxp4096.dump"},
		"convert-src-missing":      {"convert", "../testdata/memory/missing.dump", "--to", "memory", "--output", "x"},
		"convert-src-corrupt":      {"convert", "../testdata/memory/bad-checksum.dump", "--to", "memory", "--output", "x"},
		"convert-dst-not-snapshot": {"convert", example, "--to", "filesystem", "--output", "../testdata/memory/directory.dump", "--force"},
		"convert-dst-above-src":    {"convert", example, "--to", "filesystem", "--output", "../testdata/memory", "--force"},
		"convert-dst-inside-src":   {"convert", "../testdata/memory", "--to", "filesystem", "--output", "../testdata/memory/x"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// hashTree digests a file, or every file and directory below one.
func hashTree(t *testing.T, root string) string {
	t.Helper()
	m, err := snaptest.HashTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(m)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writableFormats lists the formats any snapshot can be written in: the
// flink writer writes only what was read from Flink (see flinkwrite_test.go).
func writableFormats() []string {
	var out []string
	for _, f := range testReg.Formats() {
		if f.Create != nil && f.Name != "flink" {
			out = append(out, f.Name)
		}
	}
	return out
}

// writeRandom writes a random snapshot in the memory format.
func writeRandom(t testing.TB, seed uint64, loc string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	w, err := testReg.Create(context.Background(), memory.Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snaptest.Write(context.Background(), w, snaptest.Random(rng), 50, rng); err != nil {
		t.Fatal(err)
	}
}

// A -> B -> A is entry-identical for every pair of writable formats, over
// random snapshots; SRC is never modified.
func TestConvertRoundTripEveryFormatPair(t *testing.T) {
	formats := writableFormats()
	for seed := range uint64(4) {
		dir := t.TempDir()
		orig := filepath.Join(dir, "orig.dump")
		writeRandom(t, seed, orig)
		for _, a := range formats {
			src := filepath.Join(dir, "a-"+a)
			mustRun(t, "convert", orig, "--to", a, "--output", src)
			sum := hashTree(t, src)
			for _, b := range formats {
				mid, back := filepath.Join(dir, a+"-"+b), filepath.Join(dir, a+"-"+b+"-"+a)
				mustRun(t, "convert", src, "--to", b, "--output", mid, "--verify")
				mustRun(t, "convert", mid, "--to", a, "--output", back, "--verify")
				assertSameContent(t, src, back)
			}
			if hashTree(t, src) != sum {
				t.Fatalf("converting %s modified it", src)
			}
		}
	}
}

func assertSameContent(t *testing.T, a, b string) {
	t.Helper()
	collect := func(loc string) map[string][]snaptest.Subtask {
		r, err := testReg.Open(context.Background(), loc, snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c, err := snaptest.Collect(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, cb := collect(a), collect(b)
	if len(ca) != len(cb) {
		t.Fatalf("%s has %d operators, %s %d", a, len(ca), b, len(cb))
	}
	for op, subs := range ca {
		if len(cb[op]) != len(subs) {
			t.Fatalf("%s: %d subtasks vs %d", op, len(subs), len(cb[op]))
		}
		for i := range subs {
			if ok, why := snaptest.EqualEntries(subs[i].Entries, cb[op][i].Entries); !ok {
				t.Fatalf("%s vs %s: %s subtask %d: %s", a, b, op, i, why)
			}
			if fmt.Sprint(subs[i].Elements) != fmt.Sprint(cb[op][i].Elements) {
				t.Fatalf("%s subtask %d: elements %v vs %v", op, i, subs[i].Elements, cb[op][i].Elements)
			}
		}
	}
}

// Converting to memory fails before writing when a subtask exceeds the cap.
func TestConvertToMemoryRefusesOversizedState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.dump")
	w, err := testReg.Create(ctx, memory.Format, big, snapshot.WriteOptions{StateSizeCap: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generate.Default()
	cfg.Keys, cfg.ValueBytes, cfg.Parallelism = 2000, 1000, 1
	if _, err := generate.Write(ctx, w, cfg); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst.dump")
	code, _, errOut := run(t, "convert", big, "--to", "memory", "--output", dst)
	if code != ExitTooLarge || !strings.Contains(errOut, `operator "word-counter" new subtask 0 would hold`) || !strings.Contains(errOut, "5242880 bytes") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if exists(dst) {
		t.Fatal("a refused conversion left a destination")
	}
}

func TestConvertForceReplaces(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "dst.dump")
	mustRun(t, "convert", example, "--to", "memory", "--output", dst)
	if code, _, _ := run(t, "convert", example, "--to", "memory", "--output", dst); code != ExitUsage {
		t.Fatalf("existing DST: exit %d", code)
	}
	mustRun(t, "convert", example, "--to", "memory", "--output", dst, "--force", "--quiet")
}

// crashEnv makes the test binary, re-executed, run one command and stop
// dead in the middle of writing, so the parent can kill it there.
const crashEnv = "STATEUTIL_CRASH_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(mainEnv); args != "" {
		os.Exit(interruptedMain(strings.Split(args, "\x1f")))
	}
	if args := os.Getenv(crashEnv); args != "" {
		ready := os.Getenv(crashEnv + "_READY")
		// Progress is first reported when a subtask's entries are
		// written, before the subtask, let alone the snapshot, is complete.
		progressHook = func() {
			os.WriteFile(ready, nil, 0o644)
			time.Sleep(time.Hour)
		}
		os.Exit(Run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "stateutil-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedTemp = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedTemp holds what the package's tests make once and share (the
// example in every format, the binary YARN's containers run): a test's
// own temporary directory would go with that test.
var sharedTemp string

// A convert or rescale killed mid-write leaves no DST that verify accepts,
// and SRC byte-identical; the same command run again succeeds, and leaves
// nothing of the killed one.
func TestKilledWriteLeavesNoSnapshot(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.dump")
	mustRun(t, "generate", "--output", src, "--keys", "300")
	sum := hashTree(t, src)
	for _, f := range writableFormats() {
		for _, args := range [][]string{
			{"convert", src, "--to", f},
			{"rescale", src, "--parallelism", "5", "--format", f},
			{"rescale", src, "--max-parallelism", "256", "--format", f},
		} {
			dst := filepath.Join(dir, fmt.Sprintf("dst-%s-%s", f, args[0]))
			os.RemoveAll(dst)
			args = append(args, "--output", dst)
			ready := filepath.Join(dir, "ready")
			os.Remove(ready)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			// The child is killed: its temporary files must die with the test.
			cmd.Env = append(os.Environ(), crashEnv+"="+strings.Join(args, "\x1f"), crashEnv+"_READY="+ready, "TMPDIR="+t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for !exists(ready) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("%v: child never got to write", args)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var exit *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &exit) {
				t.Fatalf("%v: child was not killed: %v", args, err)
			}
			if code, out, _ := run(t, "verify", dst); code == ExitOK {
				t.Fatalf("%v: verify accepts what a killed write left:\n%s", args, out)
			}
			if hashTree(t, src) != sum {
				t.Fatalf("%v: SRC changed", args)
			}
			mustRun(t, append(args, "--quiet")...)
			if left := leftovers(t, dir); len(left) > 0 {
				t.Fatalf("%v run again: left %v", args, left)
			}
			if code, out, errOut := run(t, "verify", dst); code != ExitOK {
				t.Fatalf("%v run again: %s%s", args, out, errOut)
			}
			sameState(t, src, dst)
		}
	}
}

func benchmarkConvert(b *testing.B, to string) {
	ctx := context.Background()
	dir := b.TempDir()
	src := filepath.Join(dir, "src.dump")
	w, err := testReg.Create(ctx, memory.Format, src, snapshot.WriteOptions{StateSizeCap: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	cfg := generate.Default()
	cfg.Keys, cfg.ValueBytes, cfg.Parallelism = 5000, 64, 4
	if _, err := generate.Write(ctx, w, cfg); err != nil {
		b.Fatal(err)
	}
	info, _ := os.Stat(src)
	b.SetBytes(info.Size())
	b.ResetTimer()
	for i := range b.N {
		dst := filepath.Join(dir, fmt.Sprintf("dst-%d", i))
		var stdout, stderr strings.Builder
		if code := Run(ctx, []string{"convert", src, "--to", to, "--output", dst}, &stdout, &stderr); code != 0 {
			b.Fatal(stderr.String())
		}
		os.RemoveAll(dst)
	}
}

func BenchmarkConvert(b *testing.B) {
	for _, f := range writableFormats() {
		b.Run(f, func(b *testing.B) { benchmarkConvert(b, f) })
	}
}

// A forced convert replaces whatever snapshot DST holds, of any format,
// whole: afterwards DST holds the new snapshot's files and nothing else.
func TestConvertForceReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.dump")
	mustRun(t, "generate", "--output", src, "--keys", "500")
	for _, from := range writableFormats() {
		for _, to := range writableFormats() {
			dst := filepath.Join(dir, from+"-then-"+to)
			mustRun(t, "convert", src, "--to", from, "--output", dst, "--quiet")
			mustRun(t, "convert", src, "--to", to, "--output", dst, "--force", "--quiet")
			r, err := testReg.Open(context.Background(), dst, snapshot.OpenOptions{})
			if err != nil {
				t.Fatalf("%s over %s: %v", to, from, err)
			}
			want := map[string]bool{}
			for _, op := range r.Snapshot().Operators {
				for _, sub := range op.Subtasks {
					for _, f := range sub.Files {
						want[filepath.Clean(f.Path)] = true
					}
				}
			}
			if got := r.Snapshot().Format; got != to {
				t.Errorf("%s over %s: DST reads as %s", to, from, got)
			}
			r.Close()
			info, err := os.Stat(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !info.IsDir() {
				continue // a memory dump is one file: nothing else can be there
			}
			filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dst, p)
				if rel != "_metadata" && !want[rel] {
					t.Errorf("%s over %s: %s is not part of the new snapshot", to, from, rel)
				}
				return nil
			})
			sameState(t, src, dst)
		}
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("left %v", left)
	}
}
