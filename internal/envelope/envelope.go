// Package envelope frames stateutil's own metadata and dump files: magic
// bytes, a format version, a length-prefixed body and a CRC32C of all that
// precedes it. A reader checks magic, length and checksum before it trusts a
// single byte, and the version only once the checksum holds, so a damaged
// version field reads as damage, not as a newer format. Every version of
// every format keeps this framing.
package envelope

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// HeaderSize is the bytes before the body: magic, version, body length.
const HeaderSize = 8 + 4 + 8

// TrailerSize is the CRC32C after the body.
const TrailerSize = 4

// Castagnoli is the CRC32C table every stateutil checksum uses.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind identifies one framed file type.
type Kind struct {
	Magic   [8]byte
	Version uint32
	// Name is used in messages ("memory dump", "filesystem _metadata").
	Name string
}

// Encode frames body.
func (k Kind) Encode(body []byte) []byte {
	out := make([]byte, 0, HeaderSize+len(body)+TrailerSize)
	out = append(out, k.Header(uint64(len(body)))...)
	out = append(out, body...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, Castagnoli))
}

// Header is the header of a file framing a body of bodyLen bytes.
func (k Kind) Header(bodyLen uint64) []byte {
	h := make([]byte, 0, HeaderSize)
	h = append(h, k.Magic[:]...)
	h = binary.BigEndian.AppendUint32(h, k.Version)
	return binary.BigEndian.AppendUint64(h, bodyLen)
}

// Matches reports whether the first bytes of a file carry k's magic.
func (k Kind) Matches(prefix []byte) bool {
	return len(prefix) >= len(k.Magic) && bytes.Equal(prefix[:len(k.Magic)], k.Magic[:])
}

// Probe reports whether the file at path starts with k's magic. A missing
// file or a directory is simply not a match.
func (k Kind) Probe(ctx context.Context, st storage.Storage, path string) (bool, error) {
	f, err := st.Open(ctx, path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	var head [8]byte
	n, _ := f.ReadAt(head[:], 0)
	return k.Matches(head[:n]), nil
}

// Read opens path and returns its verified body. bodyLimit bounds the body
// length accepted (the file size bounds it too).
func (k Kind) Read(ctx context.Context, st storage.Storage, path string, bodyLimit int64) ([]byte, error) {
	f, err := st.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return k.Decode(f, f.Size(), f.Name(), bodyLimit)
}

// ReadHeader checks the magic and the body length of a framed file of
// the given size read through r, and returns the version and the body
// length it records: the version is not yet checked by any checksum.
func (k Kind) ReadHeader(r io.ReaderAt, size int64, name string) (version uint32, bodyLen uint64, err error) {
	if size == 0 {
		return 0, 0, snapshot.Corrupt(name, 0, "empty file, expected a %s", k.Name)
	}
	var head [HeaderSize]byte
	n, err := r.ReadAt(head[:], 0)
	if n < len(k.Magic) {
		if err != nil && err != io.EOF {
			return 0, 0, fmt.Errorf("%q: %w", name, err)
		}
		return 0, 0, snapshot.Corrupt(name, int64(n), "truncated: %d bytes, too short for a %s", size, k.Name)
	}
	if !k.Matches(head[:n]) {
		return 0, 0, snapshot.Corrupt(name, 0, "bad magic %x, not a %s", head[:len(k.Magic)], k.Name)
	}
	if n < HeaderSize {
		return 0, 0, snapshot.Corrupt(name, int64(n), "truncated header of a %s", k.Name)
	}
	bodyLen = binary.BigEndian.Uint64(head[12:])
	avail := size - HeaderSize - TrailerSize
	if avail < 0 || bodyLen > uint64(avail) {
		return 0, 0, snapshot.Corrupt(name, 12, "body length %d exceeds the %d bytes the file holds (truncated?)", bodyLen, max(avail, 0))
	}
	if bodyLen < uint64(avail) {
		return 0, 0, snapshot.Corrupt(name, int64(HeaderSize)+int64(bodyLen)+TrailerSize, "%d unexpected bytes after the checksum", uint64(avail)-bodyLen)
	}
	return binary.BigEndian.Uint32(head[8:]), bodyLen, nil
}

// CheckSum reads a framed file of the given size through r, a piece at a
// time, and checks its CRC32C (ReadHeader has checked its framing).
func CheckSum(r io.ReaderAt, size int64, name string) error {
	end := size - TrailerSize
	h := crc32.New(Castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, end)); err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	var sum [TrailerSize]byte
	if _, err := r.ReadAt(sum[:], end); err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	if got, want := h.Sum32(), binary.BigEndian.Uint32(sum[:]); got != want {
		return snapshot.Corrupt(name, end, "checksum mismatch: stored crc32c %08x, computed %08x", want, got)
	}
	return nil
}

// Decode verifies a framed file of the given size read through r.
func (k Kind) Decode(r io.ReaderAt, size int64, name string, bodyLimit int64) ([]byte, error) {
	version, bodyLen, err := k.ReadHeader(r, size, name)
	if err != nil {
		return nil, err
	}
	if int64(bodyLen) > bodyLimit {
		return nil, fmt.Errorf("%q: %w: %s body of %d bytes exceeds the %d-byte limit", name, snapshot.ErrTooLarge, k.Name, bodyLen, bodyLimit)
	}
	buf := make([]byte, HeaderSize+bodyLen+TrailerSize)
	if _, err := r.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	end := HeaderSize + bodyLen
	if got, sum := crc32.Checksum(buf[:end], Castagnoli), binary.BigEndian.Uint32(buf[end:]); got != sum {
		return nil, snapshot.Corrupt(name, int64(end), "checksum mismatch: stored crc32c %08x, computed %08x", sum, got)
	}
	if version != k.Version {
		return nil, fmt.Errorf("%q: %w: %s version %d (this stateutil reads version %d)", name, snapshot.ErrUnsupportedVersion, k.Name, version, k.Version)
	}
	return buf[HeaderSize:end], nil
}
