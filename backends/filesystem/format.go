package filesystem

import (
	"context"

	"github.com/stateutil/stateutil/backends/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Name is the format's canonical name.
const Name = "filesystem"

func init() {
	snapshot.Register(&snapshot.Format{
		Name:    Name,
		Aliases: []string{"fs", "hashmap"},
		Summary: "checkpoint directory: _metadata plus one keyed and one operator-state file per subtask",
		Probe:   probe,
		Open: func(ctx context.Context, location string, opts snapshot.OpenOptions) (snapshot.Reader, error) {
			st, p, err := storage.Resolve(ctx, location)
			if err != nil {
				return nil, err
			}
			return Open(ctx, st, p, opts)
		},
		Create: func(ctx context.Context, location string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
			st, p, err := storage.Resolve(ctx, location)
			if err != nil {
				return nil, err
			}
			return Create(ctx, st, p, opts)
		},
	})
}

// probe reports whether location resolves to a directory whose _metadata
// carries this format's magic.
func probe(ctx context.Context, location string) (bool, error) {
	d, err := chkdir.Resolve(ctx, location)
	if err != nil {
		return false, err // snapshot.Detect passes over ErrNotFound
	}
	return metaKind.Probe(ctx, d.Storage, d.Metadata())
}
