package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// invalidFixtures are the dumps make testdata writes with metadata no
// reader can make sense of (see internal/gentestdata's invalid).
func invalidFixtures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/memory/invalid-*.dump")
	if err != nil || len(files) < 11 {
		t.Fatalf("%d invalid fixtures (%v); run make testdata", len(files), err)
	}
	return files
}

// Each kind of invalid metadata has its message and exit code pinned.
func TestGoldenInvalid(t *testing.T) {
	for _, file := range invalidFixtures(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".dump")
		t.Run(name, func(t *testing.T) { runGolden(t, "inspect-"+name, "inspect", file) })
	}
}

// inspect and verify agree on what a valid snapshot is: what one refuses,
// the other refuses with the same line and exit code, before printing
// anything.
func TestInspectAndVerifyRefuseTheSame(t *testing.T) {
	for _, file := range invalidFixtures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var got [2]string
			for i, command := range []string{"inspect", "verify"} {
				var stdout, stderr bytes.Buffer
				code := Run(context.Background(), []string{command, file}, &stdout, &stderr)
				if code != ExitCorrupt || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), file) {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line naming the file", command, code, stdout.String(), stderr.String(), ExitCorrupt)
				}
				got[i] = stderr.String()
			}
			if got[0] != got[1] {
				t.Fatalf("inspect says %q, verify %q", got[0], got[1])
			}
		})
	}
}
