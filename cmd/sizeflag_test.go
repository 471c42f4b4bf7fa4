package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSizeFlag(t *testing.T) {
	for text, want := range map[string]int64{"512": 512, "64KiB": 64 << 10, "5MiB": 5 << 20, "5mb": 5 << 20, "2 GiB": 2 << 30, "1g": 1 << 30, "100B": 100} {
		var s sizeFlag
		if err := s.Set(text); err != nil || s.bytes != want {
			t.Errorf("%q: %d, %v; want %d", text, s.bytes, err, want)
		}
	}
	for _, text := range []string{"", "0", "-1", "MiB", "1.5GiB", "3TiB", "9999999999GiB"} {
		var s sizeFlag
		if err := s.Set(text); err == nil {
			t.Errorf("%q accepted as %d bytes", text, s.bytes)
		}
	}
}

// A subtask above the memory format's 5 MiB default is refused with the
// flag named; with --max-state-size it is written, and reads back whole.
func TestMaxStateSizeRaisesTheMemoryCap(t *testing.T) {
	dir := t.TempDir()
	src, refused, allowed := filepath.Join(dir, "big"), filepath.Join(dir, "refused.dump"), filepath.Join(dir, "allowed.dump")
	mustRun(t, "generate", "--format", "filesystem", "--output", src, "--parallelism", "1", "--keys", "2000", "--value-bytes", "1000")

	code, _, errOut := run(t, "convert", src, "--to", "memory", "--output", refused)
	if code != 5 || !strings.Contains(errOut, "--max-state-size") {
		t.Fatalf("convert of ~8 MB into the memory format: exit %d, %q; want exit 5 naming --max-state-size", code, errOut)
	}
	if exists(refused) {
		t.Fatal("a refused convert left its output behind")
	}

	mustRun(t, "convert", src, "--to", "memory", "--output", allowed, "--max-state-size", "64MiB")
	if code, out, errOut := run(t, "diff", src, allowed, "--entries"); code != 0 {
		t.Fatalf("diff of the source and the converted snapshot: exit %d\n%s%s", code, out, errOut)
	}
}
