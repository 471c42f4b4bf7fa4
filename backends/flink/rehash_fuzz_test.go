package flink_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// FuzzRehashSavepoint damages a real Flink 1.20 canonical savepoint (its
// state lies inline in _metadata) and changes its max parallelism 128 ->
// 256 and 128 -> 64, the paths that move stored pairs without decoding
// values: the result is a savepoint that verifies against its source, or
// an error of the package's kinds, never a panic, a hang or a savepoint
// written from state that was not read.
func FuzzRehashSavepoint(f *testing.F) {
	var src string
	for _, e := range corpus(f) {
		if e.Name == "basic-hashmap-canonical" && e.Manifest.FlinkVersion == "1.20.5" {
			src = e.SnapshotDir()
		}
	}
	if src == "" {
		f.Fatal("testdata/flink has no 1.20.5 basic-hashmap-canonical")
	}
	meta, err := os.ReadFile(filepath.Join(src, "_metadata"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(len(meta)/2), byte(0xff), false)
	f.Add(uint32(len(meta)-40), byte(0x80), true)
	f.Add(uint32(len(meta)-400), byte(0x01), false)
	reg := registry()
	f.Fuzz(func(t *testing.T, at uint32, xor byte, shrink bool) {
		dir := t.TempDir()
		sp := filepath.Join(dir, "sp")
		if err := exec.Command("cp", "-r", src, sp).Run(); err != nil {
			t.Fatal(err)
		}
		b := append([]byte(nil), meta...)
		b[int(at)%len(b)] ^= xor | 1
		if err := os.WriteFile(filepath.Join(sp, "_metadata"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		m := 256
		if shrink {
			m = 64
		}
		_, err := migrate.Run(context.Background(), reg, migrate.Request{Source: sp, Destination: filepath.Join(dir, "out"), Format: "flink",
			Change: redistribute.Request{MaxParallelism: m}, Verify: true})
		if err != nil && !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrUnsupportedVersion) && !errors.Is(err, snapshot.ErrNotFound) &&
			!errors.Is(err, keygroup.ErrUnknownKeyType) && !errors.Is(err, redistribute.ErrNotRedistributable) && !errors.Is(err, keygroup.ErrInvalidParallelism) {
			t.Fatalf("error matches no sentinel: %v", err)
		}
	})
}
