package flink

import (
	"context"

	"github.com/stateutil/stateutil/storage"
)

// ReadMetadata reads and decodes the `_metadata` file at path in st, as
// opening a snapshot does before it checks the checksum manifest.
func ReadMetadata(ctx context.Context, st storage.Storage, path string) (*Metadata, error) {
	data, name, err := readMetadataFile(ctx, st, path)
	if err != nil {
		return nil, err
	}
	return ParseMetadata(data, name)
}
