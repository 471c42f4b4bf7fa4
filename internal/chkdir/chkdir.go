// Package chkdir is the checkpoint directory layout shared by the
// filesystem and rocksdb formats and the runtime's RocksDB checkpointer:
//
//	<root>/<job-id>/chk-<N>/_metadata   one checkpoint; _metadata is its commit point
//	<root>/<job-id>/shared/             files several checkpoints share
//	<root>/<job-id>/taskowned/          files owned by tasks rather than checkpoints
//	<root>/<job-id>/chk-<N>.dump        a one-file checkpoint (the memory format's)
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
	// CheckpointFileSuffix ends the name of a one-file checkpoint,
	// chk-<N>.dump (the memory format's).
	CheckpointFileSuffix = ".dump"
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

// Checkpoint is one checkpoint of a job directory.
type Checkpoint struct {
	ID   int64
	Path string // the chk-<ID> directory, or the chk-<ID>.dump file
	// File marks a one-file checkpoint (chk-<ID>.dump, the memory
	// format's), which is complete by being there.
	File bool
	// Complete says the checkpoint is committed: a file, or a directory
	// holding a _metadata file.
	Complete bool
}

// Scan returns every checkpoint of jobDir, complete or not, by ascending
// id: each chk-<N> directory and chk-<N>.dump file.
func Scan(ctx context.Context, st storage.Storage, jobDir string) ([]Checkpoint, error) {
	infos, err := st.List(ctx, jobDir)
	if err != nil {
		return nil, NotFound(err)
	}
	var out []Checkpoint
	for _, in := range infos {
		name, file := strings.CutSuffix(in.Name, CheckpointFileSuffix)
		id, ok := ParseCheckpointDirName(name)
		if !ok || in.Special || file == in.IsDir {
			continue
		}
		c := Checkpoint{ID: id, Path: path.Join(jobDir, in.Name), File: file, Complete: file}
		if !file {
			if c.Complete, err = isFile(ctx, st, path.Join(c.Path, MetadataFile)); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// List returns the complete checkpoint directories of jobDir (those whose
// chk-<N> holds a _metadata file), by ascending id.
func List(ctx context.Context, st storage.Storage, jobDir string) ([]Checkpoint, error) {
	cps, err := Scan(ctx, st, jobDir)
	return slices.DeleteFunc(cps, func(c Checkpoint) bool { return c.File || !c.Complete }), err
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
