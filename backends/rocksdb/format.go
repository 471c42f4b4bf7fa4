package rocksdb

import (
	"context"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// FormatName is the registered name of this format, and Flink's config
// name of its RocksDB state backend.
const FormatName = rocksdbformat.FormatName

// Format is the registered rocksdb format.
var Format = &snapshot.Format{
	Name:    FormatName,
	Summary: "RocksDB instances per keyed subtask, incremental shared SST files",
	Probe:   probe,
	Open:    openReader,
	Describe: func(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*snapshot.Description, error) {
		r, err := newReader(ctx, st, p, opts)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.d.Description(r.m.Snapshot, r)
	},
	Create: create,
}

func probe(ctx context.Context, st storage.Storage, p string) (bool, error) {
	d, err := chkdir.ResolveIn(ctx, st, p)
	if err != nil {
		return false, err // snapshot.Detect passes over ErrNotFound
	}
	return rocksdbformat.ProbeMetadata(ctx, d)
}

// Register adds the rocksdb format to reg.
func Register(reg *snapshot.Registry) { reg.Register(Format) }

// LibraryVersion is the version of the RocksDB library the format reads
// and writes with, as major.minor.patch.
func LibraryVersion() string { return rocksdb.LibraryVersion() }
