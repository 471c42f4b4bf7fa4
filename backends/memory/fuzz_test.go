package memory

import (
	"bytes"
	"context"
	"github.com/stateutil/stateutil/storage"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// FuzzOpen feeds arbitrary bytes (seeded with every fixture, and with
// valid envelopes around arbitrary bodies) to the reader: it must return
// an error or a snapshot whose every entry can be read, never panic.
func FuzzOpen(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/memory/*.dump")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, false)
		}
	}
	f.Add([]byte{0x80}, true)
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = Kind.Encode(data) // reach the msgpack decoder past the checksum
		}
		path := filepath.Join(t.TempDir(), "f.dump")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r, err := Open(ctx, storage.Local(), path, snapshot.OpenOptions{})
		if err != nil {
			return
		}
		for _, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				for _, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						break
					}
				}
				for _, err := range r.Elements(ctx, op, sub.Index) {
					if err != nil {
						break
					}
				}
			}
		}
	})
}

// FuzzEnvelope checks that framing round-trips any body and that any
// single-byte change to a framed file is detected.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte("state"), uint16(3))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, at uint16) {
		framed := Kind.Encode(body)
		got, err := Kind.Decode(bytes.NewReader(framed), int64(len(framed)), "f", 1<<20)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round trip: %v", err)
		}
		flipped := append([]byte(nil), framed...)
		flipped[int(at)%len(flipped)] ^= 0x20
		if _, err := Kind.Decode(bytes.NewReader(flipped), int64(len(flipped)), "f", 1<<20); err == nil {
			t.Fatalf("flip at %d went unnoticed", int(at)%len(flipped))
		}
		if _, err := Kind.Decode(bytes.NewReader(framed[:len(framed)-1]), int64(len(framed)-1), "f", 1<<20); err == nil {
			t.Fatal("a truncated file went unnoticed")
		}
	})
}
