package flinkharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AtOriginalDir makes the entry's files readable where Flink wrote them,
// replaces a link a killed run left there, refuses anything else there,
// and release leaves nothing behind.
func TestAtOriginalDir(t *testing.T) {
	tmp := t.TempDir()
	entry := Entry{Dir: filepath.Join(tmp, "entry")}
	if err := os.MkdirAll(filepath.Join(entry.Dir, "snapshot", "chk-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry.Dir, "snapshot", "chk-1", "_metadata"), []byte("m"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry.Manifest.OriginalDir = filepath.Join(tmp, "gone", "job", ".e.tmp", "snapshot")
	read := func() string {
		b, err := os.ReadFile(filepath.Join(entry.Manifest.OriginalDir, "chk-1", "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	release, err := entry.AtOriginalDir()
	if err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "m" {
		t.Fatalf("read %q through the original dir", got)
	}
	release()
	if _, err := os.Lstat(filepath.Join(tmp, "gone")); !os.IsNotExist(err) {
		t.Fatalf("release left %s behind: %v", filepath.Join(tmp, "gone"), err)
	}

	// A link a killed run left, to where nothing is now.
	if err := os.MkdirAll(filepath.Dir(entry.Manifest.OriginalDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "elsewhere"), entry.Manifest.OriginalDir); err != nil {
		t.Fatal(err)
	}
	if release, err = entry.AtOriginalDir(); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "m" {
		t.Fatalf("read %q through the original dir", got)
	}
	release()
	if _, err := os.Lstat(entry.Manifest.OriginalDir); !os.IsNotExist(err) {
		t.Fatalf("release left the link: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(entry.Manifest.OriginalDir)); err != nil {
		t.Fatalf("release removed a directory it did not make: %v", err)
	}

	// A directory of someone else's.
	if err := os.Mkdir(entry.Manifest.OriginalDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := entry.AtOriginalDir(); err == nil || !strings.Contains(err.Error(), "not a link") {
		t.Fatalf("a directory at the original dir: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(entry.Manifest.OriginalDir); err != nil || !fi.IsDir() {
		t.Fatalf("the directory there was touched: %v", err)
	}
}
