package sstcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
)

// writeTable writes a real RocksDB table (RocksDB's own SST writer:
// kxxHash64 checksums) of n keys and returns its bytes.
func writeTable(t testing.TB, n int, lz4 bool) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.sst")
	w, err := rocksdb.NewSSTWriter(path, lz4)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range n {
		if err := w.Add(fmt.Appendf(nil, "key-%08d", i), bytes.Repeat([]byte{byte(i)}, 40+i%50)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// XXH32 against the reference implementation's published values.
func TestXXH32(t *testing.T) {
	for in, want := range map[string]uint32{"": 0x02cc5d05, "a": 0x550d7456, "abc": 0x32d153ff,
		"Nobody inspects the spammish repetition": 0xe2293b2f} {
		if got := xxh32([]byte(in)); got != want {
			t.Errorf("xxh32(%q) = %#08x, want %#08x", in, got, want)
		}
	}
}

// Every single-byte flip before a table's footer is in some block, so it
// is damage at an offset inside the table; a flip in the footer is damage
// or leaves the table as it was (padding). A cut table is damage.
func TestFlipsAndCuts(t *testing.T) {
	for _, lz4 := range []bool{false, true} {
		orig := writeTable(t, 3000, lz4)
		if err := Verify(bytes.NewReader(orig), int64(len(orig)), "t.sst", 100); err != nil {
			t.Fatalf("undamaged table: %v", err)
		}
		footer := len(orig) - footerLen
		step := max(1, len(orig)/4000)
		damaged := make([]byte, len(orig))
		missed := 0
		for off := 0; off < len(orig); off += step {
			copy(damaged, orig)
			damaged[off] ^= 0xff
			err := Verify(bytes.NewReader(damaged), int64(len(damaged)), "t.sst", 100)
			var ce *snapshot.CorruptError
			switch {
			case err == nil && off < footer:
				t.Errorf("lz4=%v: flip at %d of %d (footer at %d) passed", lz4, off, len(orig), footer)
			case err == nil:
				missed++
			case !errors.As(err, &ce) && !errors.Is(err, snapshot.ErrUnsupportedVersion):
				t.Errorf("flip at %d: not damage: %v", off, err)
			case ce != nil && (ce.File != "t.sst" || ce.Offset < 100 || ce.Offset > 100+int64(len(orig))):
				t.Errorf("flip at %d: error names %s offset %d", off, ce.File, ce.Offset)
			}
		}
		t.Logf("lz4=%v: %d bytes, every %d-th flipped, %d footer flips (padding) left it valid", lz4, len(orig), step, missed)
		for n := 0; n < len(orig); n += max(1, len(orig)/200) {
			if err := Verify(bytes.NewReader(orig[:n]), int64(n), "t.sst", 0); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Errorf("cut at %d of %d: %v", n, len(orig), err)
			}
		}
	}
}

// A table that declares no checksums cannot be verified and is refused.
func TestNoChecksumRefused(t *testing.T) {
	b := writeTable(t, 10, false)
	b[len(b)-footerLen] = noChecksum
	err := Verify(bytes.NewReader(b), int64(len(b)), "t.sst", 0)
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "no block checksums") {
		t.Fatal(err)
	}
}

// Verify never panics and never allocates from a length it has not
// checked, whatever the bytes.
func FuzzVerify(f *testing.F) {
	f.Add(writeTable(f, 200, false))
	f.Add(writeTable(f, 200, true))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Verify(bytes.NewReader(b), int64(len(b)), "fuzz.sst", 0)
		if err != nil && !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrUnsupportedVersion) {
			t.Fatalf("neither damage nor unsupported: %v", err)
		}
	})
}
