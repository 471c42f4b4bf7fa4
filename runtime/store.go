package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Checkpoint layout: every job has a directory <checkpoint-dir>/<job-id>.
// Checkpoint N is chk-N.dump in it for the memory format (one file) and the
// directory chk-N for directory formats (filesystem, rocksdb), whose
// _metadata is the commit point.
const dumpSuffix = chkdir.CheckpointFileSuffix

// checkpointStore places, retains and finds the checkpoints of one job.
type checkpointStore struct {
	reg    *snapshot.Registry
	format *snapshot.Format
	jobDir string // "" = checkpoints are not persisted
	retain int
	kept   []string // completed checkpoint locations of this run, oldest first
}

// JobDir is the directory of a job's checkpoints under a checkpoint dir.
func JobDir(checkpointDir, jobID string) string {
	return strings.TrimRight(checkpointDir, "/") + "/" + jobID
}

func (s *checkpointStore) location(id int64) string {
	if s.jobDir == "" {
		return ""
	}
	loc := s.jobDir + "/chk-" + strconv.FormatInt(id, 10)
	if s.format.Name == "memory" {
		loc += dumpSuffix
	}
	return loc
}

// completed records a committed checkpoint and discards the oldest ones
// beyond the retained count.
func (s *checkpointStore) completed(ctx context.Context, location string) error {
	s.kept = append(s.kept, location)
	for len(s.kept) > s.retain {
		if err := discard(ctx, s.reg.Storage, s.kept[0]); err != nil {
			return err
		}
		s.kept = s.kept[1:]
	}
	return nil
}

// discard removes a checkpoint: its _metadata first, so that it stops
// looking complete before any of its files go.
func discard(ctx context.Context, storages *storage.Registry, location string) error {
	st, p, err := storages.Resolve(ctx, location)
	if err != nil {
		return err
	}
	in, err := st.Stat(ctx, p)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !in.IsDir {
		return st.Remove(ctx, p)
	}
	if err := st.Remove(ctx, p+"/_metadata"); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return st.RemoveAll(ctx, p)
}

// LatestCheckpoint finds the complete checkpoint with the highest id in a
// job directory: a chk-N.dump file, or a chk-N directory with a _metadata.
// It wraps snapshot.ErrNotFound when there is none.
func LatestCheckpoint(ctx context.Context, storages *storage.Registry, jobDir string) (string, error) {
	cps, err := listCheckpoints(ctx, storages, jobDir)
	if err != nil {
		return "", err
	}
	if len(cps) == 0 {
		return "", fmt.Errorf("%w: no complete checkpoint in %q", snapshot.ErrNotFound, jobDir)
	}
	return cps[len(cps)-1], nil
}

// listCheckpoints returns the complete checkpoints of a job directory by
// ascending id; a missing directory has none.
func listCheckpoints(ctx context.Context, storages *storage.Registry, jobDir string) ([]string, error) {
	st, p, err := storages.Resolve(ctx, jobDir)
	if err != nil {
		return nil, err
	}
	cps, err := chkdir.Scan(ctx, st, p)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	var out []string
	for _, c := range cps {
		if c.Complete {
			out = append(out, strings.TrimRight(jobDir, "/")+"/"+path.Base(c.Path))
		}
	}
	return out, nil
}

// nopSubtaskWriter discards state: the snapshot of a checkpoint that is
// not persisted (it still commits the sinks' output).
type nopSubtaskWriter struct{}

func (nopSubtaskWriter) Entry(*snapshot.Entry) error  { return nil }
func (nopSubtaskWriter) Element(string, []byte) error { return nil }
func (nopSubtaskWriter) Raw(snapshot.RawState) error  { return nil }
func (nopSubtaskWriter) Close() error                 { return nil }
