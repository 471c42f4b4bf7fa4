package flink

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
)

// Format is the read-only snapshot format "flink": a real Apache Flink
// checkpoint or savepoint, given as its directory or its `_metadata` file.
var Format = &snapshot.Format{
	Name:    "flink",
	Summary: "Apache Flink checkpoint or savepoint (_metadata v2-7), read-only",
	Probe:   probe,
	Open:    open,
}

func init() { snapshot.Register(Format) }

// metadataPath turns a location into the path of its `_metadata` file; ok
// is false for locations that are not local.
func metadataPath(location string) (string, bool) {
	p, ok := localPath(location)
	if !ok {
		return "", false
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, "_metadata"), true
	}
	return p, true
}

// probe accepts a directory holding `_metadata`, or a file, whose first four
// bytes are Flink's magic number.
func probe(_ context.Context, location string) (bool, error) {
	p, ok := metadataPath(location)
	if !ok {
		return false, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false, nil
	}
	return binary.BigEndian.Uint32(b[:]) == MetadataMagic, nil
}

func open(ctx context.Context, location string, opts snapshot.OpenOptions) (snapshot.Reader, error) {
	p, ok := metadataPath(location)
	if !ok {
		return nil, fmt.Errorf("%w: %q: the flink format reads local checkpoints only", snapshot.ErrUnsupportedVersion, location)
	}
	m, err := ReadMetadata(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%w: %q", snapshot.ErrNotFound, p)
		}
		return nil, err
	}
	var maps []PathMapping
	for old, nw := range opts.PathMap {
		maps = append(maps, PathMapping{Old: old, New: nw})
	}
	r := &SnapshotReader{meta: m, res: NewResolver(p, maps...), tempDir: opts.TempDir, natives: map[nativeKey]*nativeDB{}}
	if err := r.build(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// kindFromDir guesses checkpoint or savepoint from the folder name.
func kindFromDir(metadataFile string) (snapshot.Kind, bool) {
	dir := filepath.Base(filepath.Dir(metadataFile))
	switch {
	case strings.HasPrefix(dir, "savepoint-"):
		return snapshot.Savepoint, true
	case strings.HasPrefix(dir, "chk-"):
		return snapshot.Checkpoint, true
	}
	return snapshot.Checkpoint, false
}
