package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLocalLargeFileBypassesPageCache checks that a large file is
// written around the page cache: once committed, almost none of it is
// cached. Only a file's first directChunk bytes go through the cache
// (files that small are written the ordinary way).
func TestLocalLargeFileBypassesPageCache(t *testing.T) {
	dir := t.TempDir()
	probe, err := os.CreateTemp(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	direct := setDirect(probe, true)
	probe.Close()
	if !direct {
		t.Skipf("the file system of %s refuses direct I/O: large files go through the page cache there", dir)
	}
	path := filepath.Join(dir, "big")
	w, err := CreateOnce(context.Background(), Local(), path)
	if err != nil {
		t.Fatal(err)
	}
	const size = 8 * directChunk
	chunk := make([]byte, 1<<20)
	for range size / len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, size/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	cached := 0
	for _, v := range vec {
		cached += int(v & 1)
	}
	if cached*os.Getpagesize() > directChunk {
		t.Errorf("%d of %d pages of the committed file are in the page cache, want at most the first %d bytes' worth", cached, len(vec), directChunk)
	}
}
