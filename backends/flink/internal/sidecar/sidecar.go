package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// File is the checksum manifest's name in a savepoint directory.
const File = "_stateutil-checksums.json"

// checksumsVersion is the manifest's version, its first field.
const checksumsVersion = 1

// maxFile caps the manifest read: about a million files.
const maxFile = 64 << 20

// checksumsTrailer is what follows the manifest's body: its CRC32C.
const checksumsTrailer = `,"crc32c":"%08x"}` + "\n"

var checksumsTrailerLen = len(fmt.Sprintf(checksumsTrailer, 0))

// checksum is one file as the manifest lists it.
type checksum struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c"`
}

// Manifest is a decoded manifest: the files it lists, by path.
type Manifest struct {
	file  string // the manifest's URI, for messages
	files map[string]snapshot.FileRef
}

// Encode is the manifest listing files (paths relative to the
// savepoint directory), sorted by path.
func Encode(files []snapshot.FileRef) []byte {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b snapshot.FileRef) int { return strings.Compare(a.Path, b.Path) })
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"stateutil_checksums":%d,"files":[`, checksumsVersion)
	for i, f := range files {
		line, _ := json.Marshal(checksum{Path: f.Path, Size: f.Size, CRC32C: fmt.Sprintf("%08x", f.CRC32C)})
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		b.Write(line)
	}
	b.WriteString("\n]")
	fmt.Fprintf(&b, checksumsTrailer, crc32.Checksum(b.Bytes(), envelope.Castagnoli))
	return b.Bytes()
}

// Decode reads a manifest's bytes; file names it in errors.
func Decode(data []byte, file string) (*Manifest, error) {
	n := len(data) - checksumsTrailerLen
	if n < 0 {
		return nil, snapshot.Corrupt(file, int64(len(data)), "checksum manifest of %d bytes is too short to end in its own checksum", len(data))
	}
	if want := fmt.Sprintf(checksumsTrailer, crc32.Checksum(data[:n], envelope.Castagnoli)); string(data[n:]) != want {
		return nil, snapshot.Corrupt(file, int64(n), "checksum manifest does not end in the CRC32C of its content (%q, want %q): it was damaged or edited", data[n:], want)
	}
	var doc struct {
		Version *int       `json:"stateutil_checksums"`
		Files   []checksum `json:"files"`
		CRC32C  string     `json:"crc32c"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, snapshot.Corrupt(file, dec.InputOffset(), "checksum manifest: %v", err)
	}
	switch {
	case doc.Version == nil:
		return nil, snapshot.Corrupt(file, -1, "checksum manifest without a version")
	case *doc.Version != checksumsVersion:
		return nil, fmt.Errorf("%w: %q is a checksum manifest of version %d; this stateutil reads version %d", snapshot.ErrUnsupportedVersion, file, *doc.Version, checksumsVersion)
	}
	sums := &Manifest{file: file, files: make(map[string]snapshot.FileRef, len(doc.Files))}
	for i, f := range doc.Files {
		var crc uint32
		if _, err := fmt.Sscanf(f.CRC32C, "%08x", &crc); err != nil || fmt.Sprintf("%08x", crc) != f.CRC32C {
			return nil, snapshot.Corrupt(file, -1, "checksum manifest entry %d: crc32c %q is not 8 lowercase hex digits", i, f.CRC32C)
		}
		switch {
		case f.Path == "" || f.Path == "." || f.Path == ".." || strings.ContainsAny(f.Path, `/\`):
			return nil, snapshot.Corrupt(file, -1, "checksum manifest entry %d: %q is not a file of the savepoint directory", i, f.Path)
		case f.Size < 0:
			return nil, snapshot.Corrupt(file, -1, "checksum manifest entry %d: %q has size %d", i, f.Path, f.Size)
		}
		if _, dup := sums.files[f.Path]; dup {
			return nil, snapshot.Corrupt(file, -1, "checksum manifest lists %q twice", f.Path)
		}
		sums.files[f.Path] = snapshot.FileRef{Path: f.Path, Size: f.Size, CRC32C: crc}
	}
	if _, ok := sums.files["_metadata"]; !ok {
		return nil, snapshot.Corrupt(file, -1, "checksum manifest does not list _metadata")
	}
	return sums, nil
}

// Read reads the manifest beside the `_metadata` at mp, or
// returns nil when there is none (or mp is not named `_metadata`, so that
// the manifest is not its).
func Read(ctx context.Context, st storage.Storage, mp string) (*Manifest, error) {
	if path.Base(mp) != "_metadata" {
		return nil, nil
	}
	p := path.Join(path.Dir(mp), File)
	f, err := st.Open(ctx, p)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > maxFile {
		return nil, snapshot.Corrupt(st.URI(p), -1, "checksum manifest of %d bytes is larger than the %d one may have", f.Size(), maxFile)
	}
	data := make([]byte, f.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("reading %q: %w", st.URI(p), err)
	}
	return Decode(data, st.URI(p))
}

// Open reads the manifest beside the `_metadata` at mp, if there
// is one, and checks _metadata's bytes (data, read from file) and the
// sizes of the directory's files against it.
func Open(ctx context.Context, st storage.Storage, mp, file string, data []byte) (*Manifest, error) {
	sums, err := Read(ctx, st, mp)
	if err != nil || sums == nil {
		return nil, err
	}
	if err := sums.Check("_metadata", file, snapshot.FileRef{Size: int64(len(data)), CRC32C: crc32.Checksum(data, envelope.Castagnoli)}); err != nil {
		return nil, err
	}
	if err := sums.checkListing(ctx, st, path.Dir(mp)); err != nil {
		return nil, err
	}
	return sums, nil
}

// Check compares what a file holds, got, with what the manifest lists
// for it; file names it in errors.
func (c *Manifest) Check(name, file string, got snapshot.FileRef) error {
	want := c.files[name]
	switch {
	case got.Size != want.Size:
		return snapshot.Corrupt(file, min(got.Size, want.Size), "file is %d bytes, the checksum manifest %s records %d", got.Size, c.file, want.Size)
	case got.CRC32C != want.CRC32C:
		return snapshot.Corrupt(file, -1, "file has crc32c %08x, the checksum manifest %s records %08x", got.CRC32C, c.file, want.CRC32C)
	}
	return nil
}

// checkListing compares the files of the savepoint directory dir with
// the manifest's sizes: one listing, no file read. Each file missing or of
// another size is an error of its own, joined.
func (c *Manifest) checkListing(ctx context.Context, st storage.Storage, dir string) error {
	infos, err := st.List(ctx, dir)
	if err != nil {
		return err
	}
	have := map[string]storage.Info{}
	for _, info := range infos {
		have[info.Name] = info
	}
	var errs []error
	for _, name := range c.Paths() {
		info, ok := have[name]
		file := st.URI(path.Join(dir, name))
		switch {
		case !ok || info.IsDir || info.Special:
			errs = append(errs, snapshot.Corrupt(file, -1, "file is missing; the checksum manifest %s lists it", c.file))
		case info.Size != c.files[name].Size:
			errs = append(errs, c.Check(name, file, snapshot.FileRef{Size: info.Size}))
		}
	}
	return errors.Join(errs...)
}

// CheckFiles checks every file the manifest lists but `_metadata`
// (checked by Open) in the savepoint directory dir against its size and
// CRC32C; each mismatch is an error of its own.
func (m *Manifest) CheckFiles(ctx context.Context, st storage.Storage, dir string) []error {
	var errs []error
	for _, name := range m.Paths() {
		if name == "_metadata" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return append(errs, err)
		}
		p := path.Join(dir, name)
		got, err := fileChecksum(ctx, st, p)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			err = snapshot.Corrupt(st.URI(p), -1, "file is missing; the checksum manifest %s lists it", m.file)
		case err == nil:
			err = m.Check(name, st.URI(p), got)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Paths are the files the manifest lists, sorted.
func (m *Manifest) Paths() []string { return slices.Sorted(maps.Keys(m.files)) }

// fileChecksum reads the file at p for its size and CRC32C.
func fileChecksum(ctx context.Context, st storage.Storage, p string) (snapshot.FileRef, error) {
	f, err := st.Open(ctx, p)
	if err != nil {
		return snapshot.FileRef{}, err
	}
	defer f.Close()
	h := crc32.New(envelope.Castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return snapshot.FileRef{}, fmt.Errorf("reading %q: %w", st.URI(p), err)
	}
	return snapshot.FileRef{Path: p, Size: n, CRC32C: h.Sum32()}, nil
}
