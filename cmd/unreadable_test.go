package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// changelogCheckpoint is a real Flink 1.17 checkpoint with the changelog
// state backend, its keyed state only logged changes: the changes of the
// operators without timers cannot be applied, for nothing in the snapshot
// records their key serializer. The test skips when ../shared is absent.
func changelogCheckpoint(t *testing.T) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "fixtures", "flink", "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Flink fixtures not found at %s (they live in ../shared next to the repository); skipping", p)
	}
	return p
}

// State stateutil cannot read is never counted as empty: copies and
// comparisons refuse it (exit 4) unless told to drop it, and then say
// what they dropped; inspect shows the rest and warns; verify names it as
// not decoded.
func TestUnreadableStateIsNeverDroppedSilently(t *testing.T) {
	src := changelogCheckpoint(t)
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	refusals := [][]string{
		{"convert", src, "--to", "filesystem", "--output", dst, "--verify"},
		{"rescale", src, "--parallelism", "2", "--format", "filesystem", "--output", dst},
		{"operator", "remove", src, "--operator", "d5c8b168c6cbfe8c507a10f88b325243", "--format", "memory", "--output", dst},
		{"diff", src, src, "--entries"},
	}
	for _, args := range refusals {
		code, _, errOut := run(t, args...)
		if code != ExitUnsupported || !strings.Contains(errOut, `operator "d5c8b168c6cbfe8c507a10f88b325243" subtask 1, keyed state "state-name" cannot be read`) ||
			!strings.Contains(errOut, "--skip-unreadable") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
		if exists(dst) {
			t.Fatalf("%v left %s", args, dst)
		}
	}
	code, out, errOut := run(t, "convert", src, "--to", "filesystem", "--output", dst, "--verify", "--skip-unreadable", "--quiet")
	if code != ExitOK || !strings.Contains(out, "verified") || strings.Count(errOut, "warning: dropped unreadable") != 6 {
		t.Fatalf("convert --skip-unreadable: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "diff", src, dst, "--entries", "--skip-unreadable"); code != ExitOK {
		t.Errorf("diff --skip-unreadable of the source and its copy: exit %d: %s", code, errOut)
	}
	code, out, errOut = run(t, "inspect", src)
	if code != ExitOK || strings.Count(errOut, "warning:") != 6 || !strings.Contains(out, "+ unreadable") {
		t.Errorf("inspect: exit %d: %s%s", code, out, errOut)
	}
	// The checkpoint is healthy: verify names the two states it could not
	// read as not decoded, and --strict fails on them.
	code, out, _ = run(t, "verify", src)
	if code != ExitOK || !strings.Contains(out, "Not decoded: 0 values, and those of 2 states not counted") ||
		strings.Count(out, "(key serializer, not recorded)") != 2 ||
		!strings.Contains(out, "d5c8b168c6cbfe8c507a10f88b325243") || !strings.Contains(out, "dab25811652d3d4983a30c6e4afacb1c") {
		t.Errorf("verify: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, "verify", src, "--strict"); code != ExitNotDecoded {
		t.Errorf("verify --strict: exit %d: %s", code, out)
	}
}
