package rocksdb

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
)

// TestSSTWriterReportsFileChecksum checks the size and CRC32C the SST
// writer reports against the finished file read back, and that RocksDB's
// sst_dump reads every pair and the compression asked for.
func TestSSTWriterReportsFileChecksum(t *testing.T) {
	sstDump := rockstest.Tool(t, "sst_dump")
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 12 {
		lz4 := trial%2 == 0
		keys := map[string]bool{}
		for range 1 + rng.IntN(3000) {
			keys[string(randomBytes(rng, 1+rng.IntN(40)))] = true
		}
		sorted := slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		})
		p := filepath.Join(t.TempDir(), fmt.Sprintf("t%d.sst", trial))
		w, err := NewSSTWriter(p, lz4)
		if err != nil {
			t.Fatal(err)
		}
		values := make([][]byte, len(sorted))
		for i, k := range sorted {
			values[i] = randomBytes(rng, rng.IntN(2000))
			if i%3 == 0 { // compressible
				values[i] = bytes.Repeat([]byte("ab"), rng.IntN(1000))
			}
			if err := w.Add([]byte(k), values[i]); err != nil {
				t.Fatal(err)
			}
		}
		ok, err := w.Finish()
		w.Close()
		if err != nil || !ok {
			t.Fatalf("finish: %v %v", ok, err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if w.size != int64(len(data)) || w.CRC32C() != crc32.Checksum(data, envelope.Castagnoli) {
			t.Fatalf("trial %d: writer reported size %d crc %08x, the file has %d bytes, crc %08x",
				trial, w.size, w.CRC32C(), len(data), crc32.Checksum(data, envelope.Castagnoli))
		}
		scan := rockstest.Run(t, sstDump, "--file="+p, "--command=scan", "--output_hex")
		var lines []string
		for _, l := range strings.Split(scan, "\n") {
			if strings.HasPrefix(l, "'") {
				lines = append(lines, l)
			}
		}
		if len(lines) != len(sorted) {
			t.Fatalf("trial %d: sst_dump scanned %d pairs, %d written", trial, len(lines), len(sorted))
		}
		for i, l := range lines {
			want := "'" + strings.ToUpper(hex.EncodeToString([]byte(sorted[i]))) + "' seq:0, type:1 => " + strings.ToUpper(hex.EncodeToString(values[i]))
			if l != want {
				t.Fatalf("trial %d pair %d: sst_dump shows\n%s\nwant\n%s", trial, i, l, want)
			}
		}
		props := rockstest.Run(t, sstDump, "--file="+p, "--show_properties")
		wantComp := map[bool]string{true: "LZ4", false: "NoCompression"}[lz4]
		if !strings.Contains(props, "SST file compression algo: "+wantComp) {
			t.Fatalf("trial %d: sst_dump properties do not name %s:\n%s", trial, wantComp, props)
		}
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestFileCRC32CMatchesGo checks both of the SST writer's CRC32C codes
// against Go's, over lengths and alignments that exercise every tail.
func TestFileCRC32CMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	buf := randomBytes(rng, 1<<16)
	for range 2000 {
		off := rng.IntN(64)
		p := buf[off : off+rng.IntN(len(buf)-off)]
		seed := rng.Uint32()
		want := crc32.Update(seed, envelope.Castagnoli, p)
		for _, portable := range []bool{false, true} {
			if got := fileCRC32C(seed, p, portable); got != want {
				t.Fatalf("portable=%v len %d offset %d: crc %08x, Go says %08x", portable, len(p), off, got, want)
			}
		}
	}
}

// TestBatchIterMatchesIterator reads the same column family pair by pair
// through grocksdb (a writable database's iterator) and in batches (the
// same files opened read-only by the shim), over empty, ordinary and
// larger-than-a-batch values and bounded ranges.
func TestBatchIterMatchesIterator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Open(dir, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 5000 {
		v := randomBytes(rng, rng.IntN(300))
		switch i % 997 {
		case 0:
			v = nil
		case 1:
			v = randomBytes(rng, batchBytes+rng.IntN(3*batchBytes))
		}
		if err := d.Put("s", []byte(fmt.Sprintf("k%05d", i)), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, ReadOnlyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	same := func(what string, want, got *Iterator) {
		t.Helper()
		n := 0
		for ; want.Valid(); want.Next() {
			if !got.Valid() || !bytes.Equal(got.Key(), want.Key()) || !bytes.Equal(got.Value(), want.Value()) {
				t.Fatalf("%s: pair %d differs", what, n)
			}
			got.Next()
			n++
		}
		if got.Valid() {
			t.Fatalf("%s: batches hold more than %d pairs", what, n)
		}
		if err := got.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bounds := range [][2][]byte{{nil, nil}, {[]byte("k00990"), []byte("k03000")}, {[]byte("k04999"), nil}, {[]byte("x"), nil}} {
		want, got := d.NewIterator("s", bounds[0], bounds[1]), ro.NewIterator("s", bounds[0], bounds[1])
		if got.n == nil {
			t.Fatal("the read-only database's iterator is not the shim's")
		}
		same(fmt.Sprintf("bounds %q", bounds), want, got)
		want.Close()
		got.Close()
	}
	if it := ro.NewIterator("nosuch", nil, nil); it.Valid() {
		t.Fatal("an iterator of a missing column family holds pairs")
	}
}

// BenchmarkFileCRC32C compares the SST writer's file checksum with Go's
// CRC32C (which also runs three streams) over one block-sized write.
func BenchmarkFileCRC32C(b *testing.B) {
	p := randomBytes(rand.New(rand.NewPCG(1, 1)), blockSize)
	b.Run("sst-writer", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			fileCRC32C(0, p, false)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			crc32.Update(0, envelope.Castagnoli, p)
		}
	})
}
