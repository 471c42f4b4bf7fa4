package filesystem

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/storage"
)

// FuzzFilesystemMetadata mutates the _metadata of snapshots the writer
// wrote from snapshot/generate, beside their real state files, and reads
// everything of the result through the registry as the commands do
// (formattest.ReadHostile): nothing may panic, hang, allocate without
// bound or fail with an error the exit codes do not classify. The input
// selects a snapshot and lists edits (formattest.Mutate) to the msgpack
// body of its _metadata, which is then framed with a valid checksum so
// that they reach the decoder; with raw set the edits apply to the whole
// file, framing included.
func FuzzFilesystemMetadata(f *testing.F) {
	ctx := context.Background()
	template := f.TempDir()
	wide := generate.Default()
	wide.MaxParallelism, wide.Parallelism, wide.Keys = 4096, 4, 60
	var dirs []string
	var metas, bodies [][]byte
	for i, c := range []struct {
		gen    generate.Config
		inline int64
	}{
		{generate.Default(), 512}, // some state inline, some in files
		{generate.Default(), -1},  // all in files
		{wide, 0},                 // two-byte key groups, the default threshold
	} {
		dir := filepath.Join(template, "chk-"+string(rune('1'+i)))
		w, err := Create(ctx, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: c.inline})
		if err != nil {
			f.Fatal(err)
		}
		if _, err := generate.Write(ctx, w, c.gen); err != nil {
			f.Fatal(err)
		}
		meta, err := os.ReadFile(filepath.Join(dir, chkdir.MetadataFile))
		if err != nil {
			f.Fatal(err)
		}
		body, err := metaKind.Decode(bytes.NewReader(meta), int64(len(meta)), "seed", maxMetadataBody)
		if err != nil {
			f.Fatal(err)
		}
		dirs, metas, bodies = append(dirs, dir), append(metas, meta), append(bodies, body)
		n := len(body)
		f.Add(uint8(i), []byte{}, false)
		// A flipped byte in the middle of the body, a body cut short, a
		// byte inserted and a length set to 2^31-1.
		f.Add(uint8(i), []byte{1, 0, byte(n / 2 >> 16), byte(n / 2 >> 8), byte(n / 2), 0x10}, false)
		f.Add(uint8(i), []byte{2, 0, 0, byte(n / 3 >> 8), byte(n / 3), 0}, false)
		f.Add(uint8(i), []byte{5, 0, 0, 0, 40, 0xdd}, false)
		f.Add(uint8(i), []byte{3, 0, 0, 0, 1, 3}, false)
		f.Add(uint8(i), []byte{0, 0, 0, 0, 9, 0xff}, true)
	}
	f.Fuzz(func(t *testing.T, which uint8, edits []byte, raw bool) {
		i := int(which) % len(dirs)
		dir := filepath.Join(t.TempDir(), "chk-1")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files, err := os.ReadDir(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range files {
			if e.Name() != chkdir.MetadataFile {
				// A link within the snapshot, not a symlink out of it.
				if err := os.Link(filepath.Join(dirs[i], e.Name()), filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		var meta []byte
		if raw {
			meta = formattest.Mutate(map[string][]byte{"m": metas[i]}, []string{"m"}, edits)["m"]
		} else {
			meta = formattest.Mutate(map[string][]byte{"b": bodies[i]}, []string{"b"}, edits)["b"]
			if meta != nil {
				meta = metaKind.Encode(meta)
			}
		}
		if meta == nil {
			meta = metas[i]
		}
		if err := os.WriteFile(filepath.Join(dir, chkdir.MetadataFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		formattest.ReadHostile(t, testReg, dir)
	})
}
