package filesystem

import (
	"context"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Name is the format's canonical name.
const Name = "filesystem"

// Format is the filesystem format.
var Format = &snapshot.Format{
	Name:    Name,
	Aliases: []string{"fs", "hashmap"},
	Summary: "checkpoint directory: _metadata plus one keyed and one operator-state file per subtask",
	Probe:   probe,
	Open: func(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (snapshot.Reader, error) {
		return Open(ctx, st, p, opts)
	},
	Describe: func(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*snapshot.Description, error) {
		r, err := Open(ctx, st, p, opts)
		if err != nil {
			return nil, err
		}
		return r.dir.Description(r.snap, r)
	},
	Create: func(ctx context.Context, st storage.Storage, p string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
		return Create(ctx, st, p, opts)
	},
}

// probe reports whether p is a directory (or job directory) whose
// _metadata carries this format's magic.
func probe(ctx context.Context, st storage.Storage, p string) (bool, error) {
	d, err := chkdir.ResolveIn(ctx, st, p)
	if err != nil {
		return false, err // snapshot.Detect passes over ErrNotFound
	}
	return metaKind.Probe(ctx, d.Storage, d.Metadata())
}

// Register adds the filesystem format to reg.
func Register(reg *snapshot.Registry) { reg.Register(Format) }
