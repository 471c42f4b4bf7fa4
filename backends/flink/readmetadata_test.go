package flink

import (
	"context"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/storage"
)

// ReadMetadata reads and decodes the `_metadata` file at path in st, as
// opening a snapshot does before it checks the checksum manifest.
func ReadMetadata(ctx context.Context, st storage.Storage, path string) (*metadata.Metadata, error) {
	data, name, err := metadata.ReadMetadataFile(ctx, st, path)
	if err != nil {
		return nil, err
	}
	return metadata.ParseMetadata(data, name)
}
