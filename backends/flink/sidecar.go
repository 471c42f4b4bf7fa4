package flink

import (
	"context"
	"fmt"
	"regexp"

	"github.com/stateutil/stateutil/backends/flink/internal/sidecar"
)

// ChecksumsFile is the checksum manifest's name in a savepoint directory
// (package sidecar): Flink's files carry no checksums, so every savepoint
// stateutil writes gets one beside `_metadata`, which Flink never looks at.
const ChecksumsFile = sidecar.File

// CompanionFiles names the checksum manifest, if the savepoint has one;
// see snapshot.CompanionFiler.
func (r *SnapshotReader) CompanionFiles() []string {
	if r.sums == nil {
		return nil
	}
	return []string{ChecksumsFile}
}

// writtenName matches the names stateutil's writer gives the state files
// of a savepoint (writer_subtask.go); Flink names its own by UUID.
var writtenName = regexp.MustCompile(`^op[0-9]+-[0-9]+(\.[0-9a-f]{8})?-(keyed|operator|raw-keyed|raw-operator|channels)$`)

// Warnings says, for verify (snapshot.Warner), that a savepoint stateutil
// wrote has lost its checksum manifest: its metadata says who wrote it,
// every state file it refers to in the savepoint directory being named as
// stateutil names them, and without the manifest damage to those files
// can go unseen.
func (r *SnapshotReader) Warnings() []string {
	if r.sums != nil {
		return nil
	}
	files := 0
	for _, op := range r.snap.Operators {
		for _, sub := range op.Subtasks {
			for _, f := range sub.Files {
				if f.Absolute || f.Shared || !writtenName.MatchString(f.Path) {
					return nil
				}
				files++
			}
		}
	}
	if files == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s has no checksum manifest %s, though stateutil wrote it (its %d state files are named as stateutil names them): the manifest was removed, and damage to the state files can go unseen",
		r.res.Storage.URI(r.res.Dir), ChecksumsFile, files)}
}

// checkSums checks every file the checksum manifest lists beside
// `_metadata` (checked when the snapshot was opened) against its size and
// CRC32C; each mismatch is an error of its own. Without a manifest there
// is nothing to check.
func (r *SnapshotReader) checkSums(ctx context.Context) []error {
	if r.sums == nil {
		return nil
	}
	return r.sums.CheckFiles(ctx, r.res.Storage, r.res.Dir)
}
