package statefile

import (
	"context"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// NativeFile is one file of a native (incremental) RocksDB snapshot.
type NativeFile struct {
	// LocalName is the file's name in the RocksDB instance (000010.sst,
	// MANIFEST-000005, CURRENT, OPTIONS-000009...).
	LocalName string `json:"localName"`
	// Shared marks SST files that later checkpoints may reuse.
	Shared   bool                   `json:"shared"`
	Handle   *metadata.StreamHandle `json:"-"`
	Location Location               `json:"location"`
}

// NativeFiles lists the shared and private files of a native RocksDB handle
// with where they are (relative handles resolved next to `_metadata`,
// absolute ones through the path mappings).
func (res *Resolver) NativeFiles(ctx context.Context, h *metadata.IncrementalKeyedHandle) ([]NativeFile, error) {
	if h == nil {
		return nil, fmt.Errorf("no incremental keyed handle")
	}
	var out []NativeFile
	for i, list := range [][]metadata.NamedStreamHandle{h.Shared, h.Private} {
		for _, f := range list {
			nf := NativeFile{LocalName: f.LocalName, Shared: i == 0, Handle: f.Handle}
			loc, err := res.Locate(ctx, f.Handle)
			if err != nil {
				return out, fmt.Errorf("native file %q: %w", f.LocalName, err)
			}
			nf.Location = loc
			out = append(out, nf)
		}
	}
	return out, nil
}

// ReadNativeMeta decodes the keyed header stored as the meta-data stream of a
// native RocksDB handle (state names, types and serializers).
func (res *Resolver) ReadNativeMeta(ctx context.Context, h *metadata.IncrementalKeyedHandle) (*KeyedHeader, error) {
	if h == nil || h.Meta == nil {
		return nil, fmt.Errorf("incremental handle without meta-data stream")
	}
	data, file, base, err := res.Bytes(ctx, h.Meta)
	if err != nil {
		return nil, err
	}
	hdr, err := ParseKeyedHeader(res.Serializers, data, file, base, len(data))
	if err == nil {
		MarkStatesKryo5(res.Kryo5, hdr.KeySerializer, hdr.States...)
	}
	return hdr, err
}
