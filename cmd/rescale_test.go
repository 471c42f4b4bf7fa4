package cmd

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func TestGoldenRescale(t *testing.T) {
	cases := map[string][]string{
		"rescale-dry-run":           {"rescale", example, "--parallelism", "4", "--operator", "kafka-source=1", "--dry-run"},
		"rescale-dry-run-json":      {"rescale", example, "--parallelism", "1", "--dry-run", "-o", "json"},
		"rescale-dry-run-maxp":      {"rescale", example, "--max-parallelism", "256", "--parallelism", "2", "--dry-run"},
		"rescale-p-zero":            {"rescale", example, "--parallelism", "0", "--output", "x.dump"},
		"rescale-p-above-maxp":      {"rescale", example, "--parallelism", "129", "--output", "x.dump"},
		"rescale-unknown-operator":  {"rescale", example, "--operator", "nope=2", "--output", "x.dump"},
		"rescale-bad-operator-spec": {"rescale", example, "--operator", "kafka-source", "--output", "x.dump"},
		"rescale-dst-is-src":        {"rescale", example, "--parallelism", "2", "--output", example},
		"rescale-src-missing":       {"rescale", "../testdata/memory/missing.dump", "--parallelism", "2", "--output", "x.dump"},
		"rescale-nothing":           {"rescale", example, "--output", "x.dump"},
		"rescale-no-output":         {"rescale", example, "--parallelism", "2"},
		"rescale-maxp-below-p":      {"rescale", example, "--max-parallelism", "2", "--parallelism", "3", "--dry-run"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// run runs stateutil in-process and returns the exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	if errOut != "" {
		t.Fatalf("stateutil %s wrote to stderr (not a terminal): %q", strings.Join(args, " "), errOut)
	}
	return out
}

// Rescaling N -> M -> N through the command gives back an entry-identical
// snapshot; verify accepts every step; SRC is untouched.
func TestRescaleCommandRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sum := hashTree(t, example)
	mid, back := filepath.Join(dir, "mid.dump"), filepath.Join(dir, "back.dump")
	mustRun(t, "rescale", example, "--parallelism", "5", "--output", mid)
	mustRun(t, "verify", mid)
	mustRun(t, "rescale", mid, "--operator", "kafka-source=2", "--operator", "word-counter=3", "--operator", "rules=2", "--operator", "sink=1", "--output", back)
	if out := mustRun(t, "diff", example, back, "--entries"); !strings.HasSuffix(out, "equal\n") {
		t.Fatalf("round trip differs:\n%s", out)
	}
	if hashTree(t, example) != sum {
		t.Fatal("rescale modified its source")
	}
}

// After changing max parallelism every entry lies where the new hash and
// Flink's range formula put it (verify checks both), and going back is
// entry-identical.
func TestRescaleMaxParallelismRoundTrip(t *testing.T) {
	dir := t.TempDir()
	wide, back := filepath.Join(dir, "wide.dump"), filepath.Join(dir, "back.dump")
	mustRun(t, "rescale", example, "--max-parallelism", "4096", "--parallelism", "3", "--output", wide, "--temp-dir", dir)
	mustRun(t, "verify", wide)
	r, err := testReg.Open(context.Background(), wide, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			if sub.KeyGroups != keygroup.RangeOf(4096, 3, sub.Index) {
				t.Fatalf("%s subtask %d has range %v", op.Label(), sub.Index, sub.KeyGroups)
			}
		}
	}
	mustRun(t, "rescale", wide, "--max-parallelism", "128", "--operator", "kafka-source=2", "--operator", "word-counter=3", "--operator", "rules=2", "--operator", "sink=1", "--output", back)
	code, out, _ := run(t, "diff", example, back, "--entries")
	if code != 0 {
		t.Fatalf("128 -> 4096 -> 128 differs:\n%s", out)
	}
}

// A RocksDB rescale through the command takes the SST fast path: SST files
// that lie within one new subtask are linked from the source, not
// rewritten, and the result is the entry-by-entry one.
func TestRescaleRocksDBLinksSSTFiles(t *testing.T) {
	dir := t.TempDir()
	src, fast, slow := filepath.Join(dir, "src"), filepath.Join(dir, "fast"), filepath.Join(dir, "slow")
	// About 50 MiB: SST files are cut at key-group boundaries past 4 MiB.
	mustRun(t, "generate", "--format", "rocksdb", "--output", src, "--keys", "8000", "--value-bytes", "1000", "--parallelism", "2")
	mustRun(t, "rescale", src, "--parallelism", "3", "--output", fast, "--quiet")
	mustRun(t, "rescale", src, "--parallelism", "3", "--output", slow, "--quiet", "--entry-by-entry")
	old := sstFiles(t, src)
	linked := 0
	for _, fi := range sstFiles(t, fast) {
		if slices.ContainsFunc(old, func(o os.FileInfo) bool { return os.SameFile(o, fi) }) {
			linked++
		}
	}
	if linked == 0 {
		t.Errorf("no SST file of the rescaled snapshot is linked from the source's %d: the rescale went entry by entry", len(old))
	}
	if code, out, _ := run(t, "diff", fast, slow, "--entries"); code != 0 {
		t.Fatalf("the fast path's snapshot differs from the entry-by-entry one:\n%s", out)
	}
}

// sstFiles is every SST file under dir.
func sstFiles(t *testing.T, dir string) []os.FileInfo {
	t.Helper()
	var out []os.FileInfo
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".sst") {
			return err
		}
		fi, err := os.Stat(p)
		out = append(out, fi)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRescaleDryRunWritesNothing(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "dst.dump")
	mustRun(t, "rescale", example, "--parallelism", "2", "--output", dst, "--dry-run")
	if exists(dst) {
		t.Fatal("--dry-run wrote the destination")
	}
}
