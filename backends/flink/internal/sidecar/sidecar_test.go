package sidecar

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// sealed ends a manifest body as the format does: with the CRC32C of the
// body, computed here with the standard library.
func sealed(body string) []byte {
	return fmt.Appendf(nil, `%s,"crc32c":"%08x"}`+"\n", body, crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
}

const twoFilesBody = `{"stateutil_checksums":1,"files":[
{"path":"_metadata","size":1234,"crc32c":"0a1b2c3d"},
{"path":"op0-0-keyed","size":0,"crc32c":"ffffffff"}
]`

// A manifest is JSON, one file a line, sorted by path, ending in the
// CRC32C of the bytes before it; it decodes to the files it was made of.
func TestChecksumsRoundTrip(t *testing.T) {
	files := []snapshot.FileRef{
		{Path: "op0-0-keyed", Size: 0, CRC32C: 0xffffffff},
		{Path: "_metadata", Size: 1234, CRC32C: 0x0a1b2c3d},
	}
	data := Encode(files)
	if want := sealed(twoFilesBody); string(data) != string(want) {
		t.Fatalf("encoded:\n%s\nwant:\n%s", data, want)
	}
	sums, err := Decode(data, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums.files) != 2 {
		t.Fatalf("decoded %d files, want 2: %v", len(sums.files), sums.files)
	}
	for _, f := range files {
		if got := sums.files[f.Path]; got != f {
			t.Errorf("%s decoded as %+v, want %+v", f.Path, got, f)
		}
	}
}

// Every flip of a byte of a manifest, and every cut, is damage at the
// manifest; so are manifests whose checksum holds but whose content no
// writer makes. A version of another number is a newer format.
func TestChecksumsDamaged(t *testing.T) {
	good := sealed(twoFilesBody)
	for off := range good {
		for _, x := range []byte{0x01, 0x20, 0xff} {
			b := []byte(string(good))
			b[off] ^= x
			if _, err := Decode(b, "m.json"); !isCorruptAt(err, "m.json") {
				t.Errorf("byte %d ^ %#x: %v, want damage at m.json", off, x, err)
			}
		}
	}
	for n := range len(good) {
		if _, err := Decode(good[:n], "m.json"); !isCorruptAt(err, "m.json") {
			t.Errorf("cut at %d: %v, want damage at m.json", n, err)
		}
	}
	for _, c := range []struct{ name, body string }{
		{"no _metadata", `{"stateutil_checksums":1,"files":[{"path":"op0-0-keyed","size":1,"crc32c":"00000000"}]`},
		{"twice", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":1,"crc32c":"00000000"},{"path":"_metadata","size":1,"crc32c":"00000000"}]`},
		{"outside", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":1,"crc32c":"00000000"},{"path":"../x","size":1,"crc32c":"00000000"}]`},
		{"in a folder", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":1,"crc32c":"00000000"},{"path":"a/b","size":1,"crc32c":"00000000"}]`},
		{"negative size", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":-1,"crc32c":"00000000"}]`},
		{"upper-case crc", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":1,"crc32c":"0A1B2C3D"}]`},
		{"short crc", `{"stateutil_checksums":1,"files":[{"path":"_metadata","size":1,"crc32c":"abc"}]`},
		{"unknown field", `{"stateutil_checksums":1,"sha":"x","files":[{"path":"_metadata","size":1,"crc32c":"00000000"}]`},
		{"no version", `{"files":[{"path":"_metadata","size":1,"crc32c":"00000000"}]`},
		{"not an object", `[1`},
	} {
		if _, err := Decode(sealed(c.body), "m.json"); !isCorruptAt(err, "m.json") {
			t.Errorf("%s: %v, want damage at m.json", c.name, err)
		}
	}
	_, err := Decode(sealed(`{"stateutil_checksums":2,"files":[]`), "m.json")
	if !errors.Is(err, snapshot.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "m.json") {
		t.Errorf("version 2: %v, want an unsupported version naming m.json", err)
	}
}

func isCorruptAt(err error, file string) bool {
	var ce *snapshot.CorruptError
	return errors.As(err, &ce) && ce.File == file
}

// A manifest larger than any a writer makes is refused by its size, before
// it is read (a sparse file of 1 GiB here).
func TestChecksumsTooLarge(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, File)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<30); err != nil {
		t.Fatal(err)
	}
	_, err := Read(context.Background(), storage.Local(), filepath.Join(dir, "_metadata"))
	if !isCorruptAt(err, p) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a manifest of 1 GiB: %v, want damage at %s for its size", err, p)
	}
}

// FuzzChecksumsDecode: any bytes decode without a panic, allocating no
// more than their size allows, and what decodes lists only plain files
// of non-negative size, _metadata among them.
func FuzzChecksumsDecode(f *testing.F) {
	f.Add(sealed(twoFilesBody))
	f.Add(sealed(`{"stateutil_checksums":1,"files":[{"path":"_metadata","size":9999999999999,"crc32c":"00000000"}]`))
	f.Add([]byte(`{"stateutil_checksums":1,"files":[],"crc32c":"00000000"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := Decode(data, "m")
		if err != nil {
			if !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrUnsupportedVersion) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if _, ok := sums.files["_metadata"]; !ok {
			t.Fatal("decoded without _metadata")
		}
		for p, ref := range sums.files {
			if p != ref.Path || ref.Size < 0 || p == "" || strings.ContainsAny(p, `/\`) || p == "." || p == ".." {
				t.Fatalf("decoded entry %q: %+v", p, ref)
			}
		}
	})
}
