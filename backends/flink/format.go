package flink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/sidecar"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/avro"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/cep"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/connectors"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/coretypes"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/javaserial"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/kryo"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/scala"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/streaming"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/tableruntime"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Format is the snapshot format "flink": a real Apache Flink checkpoint or
// savepoint, given as its directory or its `_metadata` file, on any
// storage. It writes canonical savepoints (writer.go).
var Format = &snapshot.Format{
	Name:    "flink",
	Summary: "Apache Flink checkpoint or savepoint (_metadata v2-7); writes canonical savepoints",
	Probe:   probe,
	Open:    open,
	Create:  create,
	// CheckWrite: releases.go.
	CheckWrite: checkWrite,
	// Describe: describe.go.
	Describe: describe,
	// CarriesInFlight: writer_inflight.go.
	CarriesInFlight: carriesInFlight,
	// Upgrade: upgrade.go.
	Upgrade: upgrade,
}

// metadataPath turns a location into the path of its `_metadata` file.
func metadataPath(ctx context.Context, st storage.Storage, p string) (string, error) {
	info, err := st.Stat(ctx, p)
	if err != nil {
		return "", err
	}
	if info.IsDir {
		return path.Join(p, "_metadata"), nil
	}
	return p, nil
}

// readMetadata reads the `_metadata` file of a location: its path, bytes
// and name.
func readMetadata(ctx context.Context, st storage.Storage, p string) (mp string, data []byte, name string, err error) {
	if mp, err = metadataPath(ctx, st, p); err != nil {
		return "", nil, "", err
	}
	data, name, err = metadata.ReadMetadataFile(ctx, st, mp)
	if errors.Is(err, snapshot.ErrNotFound) {
		err = fmt.Errorf("%w: %q", snapshot.ErrNotFound, st.URI(mp))
	}
	return mp, data, name, err
}

// probe accepts a directory holding `_metadata`, or a file, whose first four
// bytes are Flink's magic number.
func probe(ctx context.Context, st storage.Storage, p string) (bool, error) {
	mp, err := metadataPath(ctx, st, p)
	if err != nil {
		return false, err
	}
	f, err := st.Open(ctx, mp)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false, nil
	}
	return binary.BigEndian.Uint32(b[:]) == metadata.MetadataMagic, nil
}

func open(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (snapshot.Reader, error) {
	mp, data, name, err := readMetadata(ctx, st, p)
	if err != nil {
		return nil, err
	}
	// Before a byte of _metadata is decoded: damage then reads as damage,
	// not as whatever a flipped byte makes of it.
	sums, err := sidecar.Open(ctx, st, mp, name, data)
	if err != nil {
		return nil, err
	}
	m, err := metadata.ParseMetadata(data, name)
	if err != nil {
		return nil, err
	}
	var maps []statefile.PathMapping
	for old, nw := range opts.PathMap {
		maps = append(maps, statefile.PathMapping{Old: old, New: nw})
	}
	r := &SnapshotReader{meta: m, sums: sums, res: statefile.NewResolver(st, mp, opts.Storage, maps...), tempDir: opts.TempDir, natives: map[nativeKey]*nativeDB{}}
	r.res.Kryo5 = m.Version >= 5
	r.res.Serializers = serializers.WithSchemas(opts.Schemas)
	if opts.Schemas != nil && opts.Schemas.KeySerializersFrom != "" {
		if r.keysFrom, err = openKeySource(ctx, opts.Schemas.KeySerializersFrom, opts); err != nil {
			return nil, err
		}
	}
	if err := r.build(ctx); err != nil {
		r.Close()
		return nil, err
	}
	if err := snapshot.Validate(r.snap, r.res.MetadataFile); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// kindFromDir guesses checkpoint or savepoint from the folder name.
func kindFromDir(metadataFile string) (snapshot.Kind, bool) {
	dir := path.Base(path.Dir(metadataFile))
	switch {
	case strings.HasPrefix(dir, "savepoint-"):
		return snapshot.Savepoint, true
	case strings.HasPrefix(dir, "chk-"):
		return snapshot.Checkpoint, true
	}
	return snapshot.Checkpoint, false
}

// serializers are the families of serializers stateutil reads beside
// flink-core's own: a new family is a file of its own and a row here.
var serializers = typeser.NewTable(
	kryo.Family,
	avro.Family,
	tableruntime.Family,
	scala.Family,
	connectors.Family,
	cep.Family,
	streaming.Family,
	coretypes.Family,
	javaserial.Family,
)

// Register adds the flink format and the codecs of Flink types to reg.
func Register(reg *snapshot.Registry) {
	reg.Register(Format)
	reg.Codecs.Register(typeser.TypePrefix, serializers.CodecFactoryWith)
}
