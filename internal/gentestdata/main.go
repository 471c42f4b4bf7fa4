// Command gentestdata writes stateutil's checked-in fixtures: example
// snapshots and deliberately damaged copies of them (`make testdata`).
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/storage"
)

func main() {
	dir := flag.String("dir", "testdata", "where to write the fixtures")
	flag.Parse()
	if err := write(context.Background(), *dir); err != nil {
		fmt.Fprintln(os.Stderr, "gentestdata:", err)
		os.Exit(1)
	}
}

func write(ctx context.Context, dir string) error {
	mem := filepath.Join(dir, "memory")
	if err := os.RemoveAll(mem); err != nil {
		return err
	}
	if err := os.MkdirAll(mem, 0o755); err != nil {
		return err
	}
	example := filepath.Join(mem, "example.dump")
	if err := generateTo(ctx, example, generate.Default()); err != nil {
		return err
	}
	wide := generate.Default()
	wide.MaxParallelism, wide.Parallelism, wide.Keys = 4096, 4, 60
	if err := generateTo(ctx, filepath.Join(mem, "maxp4096.dump"), wide); err != nil {
		return err
	}
	good, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	for name, b := range damaged(good) {
		if err := os.WriteFile(filepath.Join(mem, name), b, 0o644); err != nil {
			return err
		}
	}
	// A directory where a file is expected.
	d := filepath.Join(mem, "directory.dump")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "README"), []byte("a directory, not a memory dump\n"), 0o644)
}

func generateTo(ctx context.Context, path string, c generate.Config) error {
	w, err := memory.Create(ctx, storage.Local(), path, snapshot.WriteOptions{Force: true})
	if err != nil {
		return err
	}
	_, err = generate.Write(ctx, w, c)
	return err
}

// damaged derives one broken file per kind of bad input a reader must
// refuse. Offsets follow the envelope: magic 0-7, version 8-11, body
// length 12-19, body, CRC32C.
func damaged(good []byte) map[string][]byte {
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	return map[string][]byte{
		"empty.dump":        {},
		"truncated.dump":    good[:len(good)/2],
		"short-header.dump": good[:10],
		"bad-magic.dump":    edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"unknown-version.dump": func() []byte {
			newer := memory.Kind
			newer.Version = 99
			return newer.Encode(good[20 : len(good)-4]) // the body, framed as a newer version

		}(),
		"bad-checksum.dump": edit(func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }),
		"huge-length.dump": edit(func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[12:], 1<<62)
			return b
		}),
		"trailing-garbage.dump": edit(func(b []byte) []byte { return append(b, "garbage"...) }),
	}
}
