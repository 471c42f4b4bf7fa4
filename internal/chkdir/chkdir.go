// Package chkdir is the checkpoint directory layout shared by the
// filesystem and rocksdb formats and the runtime's RocksDB checkpointer:
//
//	<root>/<job-id>/chk-<N>/_metadata   one checkpoint; _metadata is its commit point
//	<root>/<job-id>/shared/             files several checkpoints share
//	<root>/<job-id>/taskowned/          files owned by tasks rather than checkpoints
//
// A savepoint is a self-contained directory holding a _metadata. References
// recorded in _metadata are relative: to the checkpoint directory, or, when
// they start with shared/ or taskowned/, to the job directory. A reference
// never leaves the snapshot's root.
package chkdir

import (
	"cmp"
	"context"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Names of the fixed entries of the layout.
const (
	MetadataFile = "_metadata"
	SharedDir    = "shared"
	TaskOwnedDir = "taskowned"
	chkPrefix    = "chk-"
)

// CheckpointDirName is the directory name of checkpoint id: "chk-<id>".
func CheckpointDirName(id int64) string { return chkPrefix + strconv.FormatInt(id, 10) }

// ParseCheckpointDirName returns the id of a "chk-<id>" name. Only the
// canonical decimal form of a non-negative id is accepted.
func ParseCheckpointDirName(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, chkPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != s {
		return 0, false
	}
	return id, true
}

// Checkpoint is one complete checkpoint of a job directory.
type Checkpoint struct {
	ID   int64
	Path string // the chk-<ID> directory
}

// List returns the complete checkpoints of jobDir (those whose chk-<N>
// holds a _metadata file), by ascending id.
func List(ctx context.Context, st storage.Storage, jobDir string) ([]Checkpoint, error) {
	infos, err := st.List(ctx, jobDir)
	if err != nil {
		return nil, NotFound(err)
	}
	var out []Checkpoint
	for _, in := range infos {
		id, ok := ParseCheckpointDirName(in.Name)
		if !ok || !in.IsDir {
			continue
		}
		dir := path.Join(jobDir, in.Name)
		ok, err := isFile(ctx, st, path.Join(dir, MetadataFile))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Checkpoint{ID: id, Path: dir})
		}
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// isFile reports whether p exists and is a regular file.
func isFile(ctx context.Context, st storage.Storage, p string) (bool, error) {
	in, err := st.Stat(ctx, p)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !in.IsDir, nil
}

// NotFound makes a storage "not found" error also match
// snapshot.ErrNotFound, keeping its message; other errors pass unchanged.
func NotFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) && !errors.Is(err, snapshot.ErrNotFound) {
		return notFoundError{err}
	}
	return err
}

type notFoundError struct{ error }

func (e notFoundError) Unwrap() error        { return e.error }
func (e notFoundError) Is(target error) bool { return target == snapshot.ErrNotFound }
