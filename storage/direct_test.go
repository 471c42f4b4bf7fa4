package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalLargeFiles writes files around and past the size where direct
// I/O takes over, in pieces of random sizes, and reads back every byte;
// an aborted large file leaves nothing behind.
func TestLocalLargeFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, size := range []int{0, 1, directChunk - 1, directChunk, directChunk + 1, 3*directChunk + 12345, 5*directChunk + directAlign - 1} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(rng.Uint32())
		}
		path := filepath.Join(dir, "f")
		w, err := CreateOnce(ctx, Local(), path)
		if err != nil {
			t.Fatal(err)
		}
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(1<<20))
			if k, err := w.Write(rest[:n]); err != nil || k != n {
				t.Fatalf("size %d: Write = %d, %v; want %d", size, k, err, n)
			}
			rest = rest[n:]
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("size %d: read back %d bytes, not what was written", size, len(got))
		}
	}

	w, err := CreateOnce(ctx, Local(), filepath.Join(dir, "aborted"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 5*directChunk/2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "f" {
		t.Fatalf("after an abort the directory holds %v, want only f", entries)
	}
}
