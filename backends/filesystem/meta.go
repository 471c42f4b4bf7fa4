package filesystem

import (
	"context"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
)

// metaKind frames _metadata.
var metaKind = envelope.Kind{
	Magic:   [8]byte{'S', 'T', 'U', 'T', 'I', 'L', 'F', 'S'},
	Version: 1,
	Name:    "filesystem _metadata",
}

// maxMetadataBody bounds the _metadata body a reader accepts.
const maxMetadataBody = 1 << 31

// metadata is the _metadata body.
type metadata struct {
	Snapshot *snapshot.Snapshot `msgpack:"snapshot"`
	// Layouts[i][j] is where Snapshot.Operators[i].Subtasks[j]'s state lies.
	Layouts [][]subtaskLayout `msgpack:"layouts"`
}

// subtaskLayout locates one subtask's state.
type subtaskLayout struct {
	Keyed       *keyedLayout    `msgpack:"keyed,omitempty"`
	Operator    *operatorLayout `msgpack:"operator,omitempty"`
	RawKeyed    *blob           `msgpack:"raw_keyed,omitempty"`
	RawOperator *blob           `msgpack:"raw_operator,omitempty"`
}

// blob is a run of bytes: a file next to _metadata, or inline.
type blob struct {
	File   string `msgpack:"file,omitempty"` // reference relative to the snapshot directory; "" = inline
	Inline []byte `msgpack:"inline,omitempty"`
	Size   int64  `msgpack:"size"`
	CRC32C uint32 `msgpack:"crc32c"`
}

// keyedLayout locates a subtask's key-group sections.
type keyedLayout struct {
	Data blob `msgpack:"data"`
	// States maps the entries' state index to the state name.
	States []string `msgpack:"states"`
	// Offsets has one more element than the subtask has key groups: key
	// group KeyGroups.Start+i spans Offsets[i]..Offsets[i+1].
	Offsets []int64 `msgpack:"offsets"`
	// CRCs is the CRC32C of each key group's section.
	CRCs []uint32 `msgpack:"crcs"`
}

// operatorLayout locates a subtask's operator-state elements.
type operatorLayout struct {
	Data   blob                  `msgpack:"data"`
	States []operatorStateLayout `msgpack:"states"`
}

// operatorStateLayout locates one state's elements, in list order.
type operatorStateLayout struct {
	Name    string  `msgpack:"name"`
	Offsets []int64 `msgpack:"offsets"`
	Lengths []int64 `msgpack:"lengths"`
}

func encodeMetadata(m *metadata) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", metaKind.Name, err)
	}
	return metaKind.Encode(body), nil
}

// readMetadata reads and decodes d's _metadata; it does not validate it.
func readMetadata(ctx context.Context, d chkdir.Dir) (*metadata, error) {
	var m metadata
	if err := metaKind.ReadMsgpack(ctx, d.Storage, d.Metadata(), maxMetadataBody, &m); err != nil {
		return nil, chkdir.NotFound(err)
	}
	if m.Snapshot == nil {
		return nil, snapshot.Corrupt(d.Storage.URI(d.Metadata()), -1, "%s holds no snapshot", metaKind.Name)
	}
	return &m, nil
}

// files lists the files m references.
func (m *metadata) files() []string {
	var out []string
	for _, op := range m.Layouts {
		for i := range op {
			for _, f := range op[i].files() {
				out = append(out, f.Path)
			}
		}
	}
	return out
}

// files lists the files a subtask's layout refers to (blobs not inline):
// keyed state, operator state, raw keyed and raw operator state, in that
// order. The writer records them as the subtask's Files.
func (l *subtaskLayout) files() []snapshot.FileRef {
	var out []snapshot.FileRef
	add := func(b *blob) {
		if b != nil && b.File != "" {
			out = append(out, snapshot.FileRef{Path: b.File, Size: b.Size, CRC32C: b.CRC32C})
		}
	}
	if l.Keyed != nil {
		add(&l.Keyed.Data)
	}
	if l.Operator != nil {
		add(&l.Operator.Data)
	}
	add(l.RawKeyed)
	add(l.RawOperator)
	return out
}
