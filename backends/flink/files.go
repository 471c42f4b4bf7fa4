package flink

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
)

// ErrNotLocal is matched by errors about state that lives where this package
// cannot read it (another file system scheme, or an absolute path from the
// machine that wrote a checkpoint, with no path mapping for it).
// It wraps snapshot.ErrNotFound.
var ErrNotLocal = fmt.Errorf("state file is not on a readable local path: %w", snapshot.ErrNotFound)

// PathMapping rewrites absolute paths that start with Old to start with New.
type PathMapping struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Location says where the bytes of a stream handle are.
type Location struct {
	// Inline is set for byte-stream handles: the bytes are in `_metadata`.
	Inline bool `json:"inline,omitempty"`
	// Path is the local path to read: next to `_metadata` for relative
	// handles, the (possibly remapped) path for absolute ones.
	Path string `json:"path,omitempty"`
	// Stored is the path as `_metadata` stores it.
	Stored string `json:"stored,omitempty"`
	// Absolute is set for handles that store an absolute path; Remapped
	// when a PathMapping rewrote it.
	Absolute bool `json:"absolute,omitempty"`
	Remapped bool `json:"remapped,omitempty"`
	// Offset and Size delimit the bytes within Path (segment handles use part
	// of a file; Size -1 means to the end).
	Offset int64 `json:"offset,omitempty"`
	Size   int64 `json:"size"`
}

// Resolver finds the bytes of stream handles of one `_metadata` file.
type Resolver struct {
	// Dir is the folder holding `_metadata`.
	Dir string
	// MetadataFile names `_metadata` in errors about inline state.
	MetadataFile string
	// Mappings rewrite absolute paths; the longest matching Old wins.
	Mappings []PathMapping
	// MaxFileSize caps the bytes read from one state file (default 1 GiB).
	MaxFileSize int64
}

// NewResolver returns a resolver for the state of the `_metadata` at path.
func NewResolver(metadataPath string, mappings ...PathMapping) *Resolver {
	return &Resolver{Dir: filepath.Dir(metadataPath), MetadataFile: metadataPath, Mappings: mappings}
}

// Locate says where a stream handle's bytes are, without reading them.
func (res *Resolver) Locate(h *StreamHandle) (Location, error) {
	if h == nil {
		return Location{}, fmt.Errorf("no stream handle")
	}
	switch h.Type {
	case HandleByteStream:
		return Location{Inline: true, Path: res.MetadataFile, Offset: h.DataOffset, Size: int64(len(h.Data))}, nil
	case HandleRelativeFile:
		rel := filepath.FromSlash(h.Path)
		if filepath.IsAbs(rel) || strings.HasPrefix(filepath.Clean(rel), "..") {
			return Location{}, fmt.Errorf("relative state path %q leaves the checkpoint folder: %w", h.Path, ErrCorrupt)
		}
		return Location{Path: filepath.Join(res.Dir, rel), Stored: h.Path, Size: h.Size}, nil
	case HandleFile, HandleSegmentFile:
		loc := Location{Stored: h.Path, Absolute: true, Size: h.Size}
		if h.Type == HandleSegmentFile {
			loc.Offset = h.StartPos
		}
		p := h.Path
		mapped := false
		ms := append([]PathMapping(nil), res.Mappings...)
		sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].Old) > len(ms[j].Old) })
		for _, m := range ms {
			if m.Old != "" && strings.HasPrefix(p, m.Old) {
				p, mapped = m.New+strings.TrimPrefix(p, m.Old), true
				break
			}
		}
		loc.Remapped = mapped
		local, ok := localPath(p)
		if !ok {
			return loc, fmt.Errorf("state file %q: %w", h.Path, ErrNotLocal)
		}
		loc.Path = local
		return loc, nil
	case HandleEmptySegmentFile:
		return Location{Size: 0}, nil
	}
	return Location{}, fmt.Errorf("%s handle is not a stream of bytes", h.Type)
}

// checkDeclaredSize compares a whole-file handle's declared size with the
// file: a shorter file has been truncated.
func checkDeclaredSize(h *StreamHandle, path string, actual int64) error {
	if (h.Type == HandleFile || h.Type == HandleRelativeFile) && h.Size > 0 && actual != h.Size {
		return &CorruptError{File: path, Offset: actual, Msg: fmt.Sprintf("file is %d bytes, _metadata says %d", actual, h.Size)}
	}
	return nil
}

// missingFile explains a state file that cannot be opened; a file that does
// not exist wraps snapshot.ErrNotFound.
func missingFile(loc Location, err error) error {
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if loc.Absolute && !loc.Remapped {
		return fmt.Errorf("absolute state path %q from the machine that wrote the checkpoint (map it with --path-map OLD=NEW): %w", loc.Stored, snapshot.ErrNotFound)
	}
	if loc.Stored != "" && loc.Stored != loc.Path {
		return fmt.Errorf("state file %q (stored as %q): %w", loc.Path, loc.Stored, snapshot.ErrNotFound)
	}
	return fmt.Errorf("state file %q: %w", loc.Path, snapshot.ErrNotFound)
}

// localPath turns "file:/x", "file:///x" or "/x" into a local path.
func localPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "file://"):
		p = strings.TrimPrefix(p, "file://")
	case strings.HasPrefix(p, "file:"):
		p = strings.TrimPrefix(p, "file:")
	case strings.Contains(p, "://"):
		return "", false
	}
	return filepath.FromSlash(p), true
}

// Bytes returns the content of a stream handle, the file name to cite in
// errors, and the offset of the first byte within that file.
func (res *Resolver) Bytes(h *StreamHandle) (data []byte, file string, base int64, err error) {
	loc, err := res.Locate(h)
	if err != nil {
		return nil, "", 0, err
	}
	if loc.Inline {
		return h.Data, res.MetadataFile, h.DataOffset, nil
	}
	if h.Type == HandleEmptySegmentFile {
		return nil, "", 0, nil
	}
	f, err := os.Open(loc.Path)
	if err != nil {
		return nil, loc.Path, 0, missingFile(loc, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, loc.Path, 0, err
	}
	limit := res.MaxFileSize
	if limit <= 0 {
		limit = 1 << 30
	}
	size := st.Size() - loc.Offset
	if h.Type == HandleSegmentFile {
		size = h.Size
	}
	if err := checkDeclaredSize(h, loc.Path, st.Size()); err != nil {
		return nil, loc.Path, 0, err
	}
	if loc.Offset < 0 || size < 0 || loc.Offset+size > st.Size() {
		return nil, loc.Path, 0, &CorruptError{File: loc.Path, Offset: loc.Offset,
			Msg: fmt.Sprintf("segment of %d bytes does not fit in a file of %d", size, st.Size())}
	}
	if size > limit {
		return nil, loc.Path, 0, fmt.Errorf("%q: %d bytes is more than the %d allowed", loc.Path, size, limit)
	}
	data = make([]byte, size)
	if _, err := f.ReadAt(data, loc.Offset); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		return nil, loc.Path, 0, err
	}
	return data, loc.Path, loc.Offset, nil
}
