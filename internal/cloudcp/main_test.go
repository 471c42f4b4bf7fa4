package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/storage/azure/azuretest"
	"github.com/stateutil/stateutil/storage/gcs/gcstest"
)

// A tree goes up to each emulator and comes back down byte for byte.
func TestRoundTrip(t *testing.T) {
	for name, dir := range map[string]func(testing.TB) string{"GCS": gcstest.Dir, "Azure": azuretest.Dir} {
		t.Run(name, func(t *testing.T) {
			remote := dir(t)
			src, dst := t.TempDir(), t.TempDir()
			files := map[string][]byte{"a": []byte("first"), "sub/b": bytes.Repeat([]byte("x"), 20<<20+7), "sub/deeper/c": nil}
			for n, b := range files {
				p := filepath.Join(src, filepath.FromSlash(n))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := run(context.Background(), "up", src, remote); err != nil {
				t.Fatal(err)
			}
			if err := run(context.Background(), "down", remote, dst); err != nil {
				t.Fatal(err)
			}
			for n, want := range files {
				got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(n)))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s came back as %d bytes (%v), want %d", n, len(got), err, len(want))
				}
			}
			if err := run(context.Background(), "rm", remote, ""); err != nil {
				t.Fatal(err)
			}
			st, err := open(context.Background(), remote)
			if err != nil {
				t.Fatal(err)
			}
			if left, err := st.list(context.Background()); err != nil || len(left) != 0 {
				t.Fatalf("after rm: %v, %v; want nothing", left, err)
			}
		})
	}
}
