package flagfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 17), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read("--token-file", file, 16); err != nil || string(b) != "secret\n" {
		t.Fatalf("Read(file) = %q, %v", b, err)
	}
	refused := map[string]string{
		fifo:                          `--token-file "` + fifo + `" is not a regular file`,
		dir:                           `--token-file "` + dir + `" is not a regular file`,
		big:                           `--token-file "` + big + `" holds more than 16 bytes`,
		filepath.Join(dir, "missing"): "--token-file: stat " + filepath.Join(dir, "missing") + ": no such file or directory",
	}
	for name, want := range refused {
		// A FIFO without a writer would block an open: Read must not open it.
		if _, err := Read("--token-file", name, 16); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want %q", name, err, want)
		}
	}
}
