package flink

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// fixtureRoot returns ../shared/fixtures/flink next to the repository root,
// or skips the test when it is absent.
func fixtureRoot(t testing.TB) string {
	t.Helper()
	root := filepath.Join(flinkharness.RepoRoot(), "..", "shared", "fixtures", "flink")
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		t.Skipf("Flink fixtures not found at %s (they live in ../shared next to the repository); skipping", root)
	}
	return root
}

// metadataFiles lists every _metadata under the fixture root, sorted.
func metadataFiles(t testing.TB) (string, []string) {
	t.Helper()
	root := fixtureRoot(t)
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "_metadata" {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no _metadata files under %s", root)
	}
	return root, out
}
