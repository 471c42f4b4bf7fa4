package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The checked-in fixtures are exactly what the generator writes: nothing
// in testdata/ was edited by hand, and the generator is deterministic.
func TestCheckedInFixturesMatchTheGenerator(t *testing.T) {
	dir := t.TempDir()
	if err := write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	fresh, err := filepath.Glob(filepath.Join(dir, "memory", "*.dump"))
	if err != nil || len(fresh) < 10 {
		t.Fatalf("generator wrote %d dumps (%v)", len(fresh), err)
	}
	fresh = append(fresh, filepath.Join(dir, "memory", "example-edits.jsonl"))
	for _, path := range fresh {
		name := filepath.Base(path)
		if info, err := os.Stat(path); err != nil || info.IsDir() {
			continue // directory.dump: a directory by design
		}
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join("../../testdata/memory", name))
		if err != nil {
			t.Errorf("%s: %v (run make testdata)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/memory/%s differs from what the generator writes (run make testdata)", name)
		}
	}
}
