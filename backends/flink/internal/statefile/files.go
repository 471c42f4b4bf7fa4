package statefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// ErrNotLocal is matched by errors about state that lives where this package
// cannot read it (a storage scheme no registry knows, or an absolute path
// from the machine that wrote a checkpoint, with no path mapping for it).
// It wraps snapshot.ErrNotFound.
var ErrNotLocal = fmt.Errorf("state file is not at a readable location: %w", snapshot.ErrNotFound)

// PathMapping rewrites recorded paths that start with Old to start with New.
type PathMapping struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Location says where the bytes of a stream handle are.
type Location struct {
	// Inline is set for byte-stream handles: the bytes are in `_metadata`.
	Inline bool `json:"inline,omitempty"`
	// Path is the path within Storage to read: next to `_metadata` for
	// relative handles, the (possibly remapped) path for absolute ones.
	Path    string          `json:"path,omitempty"`
	Storage storage.Storage `json:"-"`
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

// URI names the location for messages and for users.
func (l Location) URI() string {
	if l.Storage == nil {
		return l.Path
	}
	return l.Storage.URI(l.Path)
}

// Resolver finds the bytes of stream handles of one `_metadata` file.
type Resolver struct {
	// Storage holds `_metadata`; Dir is its folder there.
	Storage storage.Storage
	Dir     string
	// MetadataFile names `_metadata` in errors about inline state.
	MetadataFile string
	// Mappings rewrite recorded paths; the longest matching Old wins.
	Mappings []PathMapping
	// Storages resolves recorded URIs (hdfs://, file:) that are not next
	// to `_metadata`; nil reads only local absolute paths.
	Storages *storage.Registry
	// MaxFileSize caps the bytes read from one state file (default 1 GiB).
	MaxFileSize int64
	// Kryo5 says the snapshot's Kryo values are Kryo 5's: Flink 2
	// (`_metadata` version 5 on) writes Kryo 5, with the same serializer
	// snapshot as Flink 1's Kryo 2.
	Kryo5 bool
	// Serializers are the serializer families the state is read with
	// (nil: flink-core's only).
	Serializers *typeser.Table
}

// NewResolver returns a resolver for the state of the `_metadata` at
// metadataPath in st.
func NewResolver(st storage.Storage, metadataPath string, storages *storage.Registry, mappings ...PathMapping) *Resolver {
	return &Resolver{Storage: st, Dir: path.Dir(metadataPath), MetadataFile: st.URI(metadataPath), Mappings: mappings, Storages: storages}
}

// Locate says where a stream handle's bytes are, without reading them.
func (res *Resolver) Locate(ctx context.Context, h *metadata.StreamHandle) (Location, error) {
	if h == nil {
		return Location{}, fmt.Errorf("no stream handle")
	}
	switch h.Type {
	case metadata.HandleByteStream:
		return Location{Inline: true, Path: res.MetadataFile, Offset: h.DataOffset, Size: int64(len(h.Data))}, nil
	case metadata.HandleRelativeFile:
		// The other formats' rule for their references: a plain relative
		// path whose symlinks, on local disk, stay inside the folder. It is
		// relative to the folder of `_metadata` even in a chk-<N>.
		p, err := chkdir.Dir{Storage: res.Storage, Path: res.Dir}.RefPath(h.Path)
		if err != nil {
			return Location{}, err
		}
		return Location{Storage: res.Storage, Path: p, Stored: h.Path, Size: h.Size}, nil
	case metadata.HandleFile, metadata.HandleSegmentFile:
		loc := Location{Stored: h.Path, Absolute: true, Size: h.Size}
		if h.Type == metadata.HandleSegmentFile {
			loc.Offset = h.StartPos
		}
		p, mapped := res.mapPath(h.Path)
		loc.Remapped = mapped
		st, within, err := res.resolve(ctx, p)
		if err != nil {
			return loc, fmt.Errorf("state file %q: %w", h.Path, err)
		}
		loc.Storage, loc.Path = st, within
		return loc, nil
	case metadata.HandleEmptySegmentFile:
		return Location{Size: 0}, nil
	}
	return Location{}, fmt.Errorf("%s handle is not a stream of bytes", h.Type)
}

// mapPath applies the longest mapping whose Old starts p. Local paths
// match with or without their file: scheme, so that OLD=/data/x also maps
// file:/data/x/... and file:///data/x/....
func (res *Resolver) mapPath(p string) (string, bool) {
	ms := append([]PathMapping(nil), res.Mappings...)
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].Old) > len(ms[j].Old) })
	for _, m := range ms {
		if m.Old == "" {
			continue
		}
		for _, form := range pathForms(p) {
			if rest, ok := strings.CutPrefix(form, strings.TrimSuffix(m.Old, "/")); ok && (rest == "" || strings.HasPrefix(rest, "/") || strings.HasSuffix(m.Old, "/")) {
				return strings.TrimSuffix(m.New, "/") + "/" + strings.TrimPrefix(rest, "/"), true
			}
		}
	}
	return p, false
}

// pathForms is p as recorded and, for a local path, its other spellings.
func pathForms(p string) []string {
	if local, ok := localPath(p); ok && local != p {
		return []string{p, local, "file:" + local, "file://" + local}
	}
	if strings.HasPrefix(p, "/") {
		return []string{p, "file:" + p, "file://" + p}
	}
	return []string{p}
}

// resolve finds the storage of a recorded (and mapped) path.
func (res *Resolver) resolve(ctx context.Context, p string) (storage.Storage, string, error) {
	if local, ok := localPath(p); ok {
		return storage.Local(), local, nil
	}
	if res.Storages == nil {
		return nil, "", ErrNotLocal
	}
	st, within, err := res.Storages.Resolve(ctx, p)
	if err != nil {
		return nil, "", fmt.Errorf("%w (%w)", ErrNotLocal, err)
	}
	return st, within, nil
}

// checkDeclaredSize compares a whole-file handle's declared size with the
// file: a shorter file has been truncated.
func checkDeclaredSize(h *metadata.StreamHandle, file string, actual int64) error {
	if (h.Type == metadata.HandleFile || h.Type == metadata.HandleRelativeFile) && h.Size > 0 && actual != h.Size {
		return &wire.CorruptError{File: file, Offset: min(actual, h.Size), Reason: fmt.Sprintf("file is %d bytes, _metadata says %d", actual, h.Size)}
	}
	return nil
}

// missingFile explains a state file that cannot be opened; a file that does
// not exist wraps snapshot.ErrNotFound.
func missingFile(loc Location, err error) error {
	if !errors.Is(err, snapshot.ErrNotFound) {
		return fmt.Errorf("state file %s: %w", loc.URI(), err)
	}
	if loc.Absolute && !loc.Remapped {
		return fmt.Errorf("absolute state path %q from the machine that wrote the checkpoint (map it with --path-map OLD=NEW): %w", loc.Stored, snapshot.ErrNotFound)
	}
	if loc.Stored != "" && loc.Stored != loc.Path {
		return fmt.Errorf("state file %q (stored as %q): %w", loc.URI(), loc.Stored, snapshot.ErrNotFound)
	}
	return fmt.Errorf("state file %q: %w", loc.URI(), snapshot.ErrNotFound)
}

// localPath turns "file:/x", "file:///x" or "/x" into a local path.
func localPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "file://"):
		p = strings.TrimPrefix(p, "file://")
		if !strings.HasPrefix(p, "/") { // file://host/x
			return "", false
		}
	case strings.HasPrefix(p, "file:"):
		p = strings.TrimPrefix(p, "file:")
	case strings.Contains(p, "://"):
		return "", false
	}
	return p, true
}

// stream is an open handle's bytes: a file (or a segment of one) checked
// against what `_metadata` declares.
type stream struct {
	F    storage.File
	File string // URI for messages
	Off  int64  // first byte within f
	Size int64
}

// Open opens the file of a located, non-inline handle and checks its size.
func (res *Resolver) Open(ctx context.Context, h *metadata.StreamHandle, loc Location) (*stream, error) {
	f, err := loc.Storage.Open(ctx, loc.Path)
	if err != nil {
		return nil, missingFile(loc, err)
	}
	s := &stream{F: f, File: loc.URI(), Off: loc.Offset, Size: f.Size() - loc.Offset}
	if h.Type == metadata.HandleSegmentFile {
		s.Size = h.Size
	}
	if err := checkDeclaredSize(h, s.File, f.Size()); err != nil {
		f.Close()
		return nil, err
	}
	if loc.Offset < 0 || s.Size < 0 || loc.Offset+s.Size > f.Size() {
		f.Close()
		return nil, &wire.CorruptError{File: s.File, Offset: loc.Offset,
			Reason: fmt.Sprintf("segment of %d bytes does not fit in a file of %d", s.Size, f.Size())}
	}
	return s, nil
}

// Bytes returns the content of a stream handle, the file name to cite in
// errors, and the offset of the first byte within that file.
func (res *Resolver) Bytes(ctx context.Context, h *metadata.StreamHandle) (data []byte, file string, base int64, err error) {
	loc, err := res.Locate(ctx, h)
	if err != nil {
		return nil, "", 0, err
	}
	if loc.Inline {
		return h.Data, res.MetadataFile, h.DataOffset, nil
	}
	if h.Type == metadata.HandleEmptySegmentFile {
		return nil, "", 0, nil
	}
	s, err := res.Open(ctx, h, loc)
	if err != nil {
		return nil, loc.URI(), 0, err
	}
	defer s.F.Close()
	limit := res.MaxFileSize
	if limit <= 0 {
		limit = 1 << 30
	}
	if s.Size > limit {
		return nil, s.File, 0, fmt.Errorf("%q: %d bytes is more than the %d allowed", s.File, s.Size, limit)
	}
	data = make([]byte, s.Size)
	if _, err := s.F.ReadAt(data, s.Off); err != nil && !(errors.Is(err, io.EOF) && s.Size == 0) {
		return nil, s.File, 0, err
	}
	return data, s.File, s.Off, nil
}
