package rocksdbformat

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// FormatName is the format's name, as every rocksdb snapshot's model
// records it.
const FormatName = "rocksdb"

// MetadataName is the file that commits a rocksdb snapshot.
const MetadataName = chkdir.MetadataFile

// metaKind frames the rocksdb _metadata file.
var metaKind = envelope.Kind{Magic: [8]byte{'S', 'T', 'U', 'R', 'O', 'C', 'K', 'S'}, Version: 1, Name: "rocksdb _metadata"}

// metaBodyLimit bounds the _metadata body a reader accepts.
const metaBodyLimit = 256 << 20

// Metadata is the body of _metadata: the model plus, per subtask, the
// files that rebuild its RocksDB instance.
type Metadata struct {
	Snapshot *snapshot.Snapshot `msgpack:"snapshot"`
	Handles  []*Handle          `msgpack:"handles"`
}

// Handle is one subtask's RocksDB instance and operator state.
type Handle struct {
	Operator    string         `msgpack:"op"`
	Subtask     int            `msgpack:"subtask"`
	KeyGroups   keygroup.Range `msgpack:"kgs"`
	PrefixBytes int            `msgpack:"prefix"`
	// Files rebuild the RocksDB directory: shared SSTs and private files.
	Files []File `msgpack:"files"`
	// OperatorState is the subtask's operator and raw state, if any.
	OperatorState *File `msgpack:"opstate,omitempty"`
}

// File is one uploaded file.
type File struct {
	// Local is the name inside the RocksDB directory ("000012.sst").
	Local string `msgpack:"local"`
	// Path is the chkdir reference: relative to the _metadata's directory,
	// or, for shared files, "shared/<name>" relative to the job directory.
	Path   string `msgpack:"path"`
	Size   int64  `msgpack:"size"`
	CRC32C uint32 `msgpack:"crc32c"`
	Shared bool   `msgpack:"shared,omitempty"`
}

// Handle finds the files of one subtask of operator opID.
func (m *Metadata) Handle(opID string, subtask int) (*Handle, bool) {
	for _, h := range m.Handles {
		if h.Operator == opID && h.Subtask == subtask {
			return h, true
		}
	}
	return nil, false
}

// fillFiles copies each handle's file list into the model's Subtask.Files.
func (m *Metadata) fillFiles() {
	for _, op := range m.Snapshot.Operators {
		for _, st := range op.Subtasks {
			h, ok := m.Handle(op.ID, st.Index)
			if !ok {
				continue
			}
			st.Files = h.Refs()
		}
	}
}

// Refs lists the handle's files as the model's Subtask.Files does.
func (h *Handle) Refs() []snapshot.FileRef {
	var out []snapshot.FileRef
	for _, f := range h.AllFiles() {
		out = append(out, snapshot.FileRef{Path: f.Path, Size: f.Size, Shared: f.Shared, CRC32C: f.CRC32C})
	}
	return out
}

// AllFiles lists the instance's files, then the operator-state file if
// there is one.
func (h *Handle) AllFiles() []File {
	if h.OperatorState == nil {
		return h.Files
	}
	return append(h.Files[:len(h.Files):len(h.Files)], *h.OperatorState)
}

// ProbeMetadata reports whether d's _metadata is a rocksdb one, by its
// magic bytes alone.
func ProbeMetadata(ctx context.Context, d chkdir.Dir) (bool, error) {
	return metaKind.Probe(ctx, d.Storage, d.Metadata())
}

// WriteMetadata commits d's _metadata; call it after every file it lists.
func WriteMetadata(ctx context.Context, d chkdir.Dir, m *Metadata) error {
	m.fillFiles()
	data, err := EncodeMetadata(m)
	if err != nil {
		return err
	}
	return d.CommitMetadata(ctx, data)
}

// EncodeMetadata frames m as a _metadata file, exactly as it stands.
func EncodeMetadata(m *Metadata) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, err
	}
	return metaKind.Encode(body), nil
}

// ReadMetadata reads and validates d's _metadata.
func ReadMetadata(ctx context.Context, d chkdir.Dir) (*Metadata, error) {
	file := d.Storage.URI(d.Metadata())
	var m Metadata
	if err := metaKind.ReadMsgpack(ctx, d.Storage, d.Metadata(), metaBodyLimit, &m); err != nil {
		return nil, chkdir.NotFound(err)
	}
	if err := m.Validate(file); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the model and references before anything follows them;
// name is the file they came from, for the message.
func (m *Metadata) Validate(name string) error {
	if err := snapshot.Validate(m.Snapshot, name); err != nil {
		return err
	}
	for _, h := range m.Handles {
		if h == nil {
			return snapshot.Corrupt(name, -1, "a subtask's file list is nil")
		}
		if h.PrefixBytes != 1 && h.PrefixBytes != 2 {
			return snapshot.Corrupt(name, -1, "operator %s subtask %d: key-group prefix of %d bytes", h.Operator, h.Subtask, h.PrefixBytes)
		}
		for _, f := range h.AllFiles() {
			if !fs.ValidPath(f.Path) || f.Path == "." || strings.Contains(f.Path, `\`) {
				return snapshot.Corrupt(name, -1, "operator %s subtask %d: reference %q is not a plain relative path", h.Operator, h.Subtask, f.Path)
			}
			if f.Shared != strings.HasPrefix(f.Path, chkdir.SharedDir+"/") {
				return snapshot.Corrupt(name, -1, "operator %s subtask %d: reference %q: shared flag %v disagrees with its place", h.Operator, h.Subtask, f.Path, f.Shared)
			}
			if f.Local != "" && (strings.ContainsAny(f.Local, `/\`) || f.Local == "." || f.Local == "..") {
				return snapshot.Corrupt(name, -1, "operator %s subtask %d: bad local file name %q", h.Operator, h.Subtask, f.Local)
			}
		}
	}
	return nil
}

// SharedPaths lists the storage paths of the shared files m references.
func (m *Metadata) SharedPaths(d chkdir.Dir) ([]string, error) {
	var out []string
	for _, h := range m.Handles {
		for _, f := range h.Files {
			if !f.Shared {
				continue
			}
			p, err := d.RefPath(f.Path)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// SharedRef is the _metadata reference of a shared file.
func SharedRef(name string) string { return chkdir.SharedDir + "/" + name }

// SubtaskDirName is the directory of one subtask's private files.
func SubtaskDirName(opID string, subtask int) string {
	return fmt.Sprintf("%s-%d", opID, subtask)
}
