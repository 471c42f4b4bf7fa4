package chkdir

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Dir is one snapshot directory: a checkpoint's chk-<N> or a savepoint.
type Dir struct {
	Storage storage.Storage
	// Path is the directory that holds (or will hold) _metadata.
	Path string
	// JobDir is the job directory when Path is one of its chk-<N>; "" for
	// a savepoint, whose shared/ and taskowned/ references stay inside Path.
	JobDir string
	// Complete lists the job's complete checkpoints, oldest first, when
	// the directory was resolved from a job directory.
	Complete []Checkpoint
}

// At names the snapshot directory p without looking at it (for writers).
// A p named chk-<N> is taken to be a checkpoint of its parent job directory.
func At(st storage.Storage, p string) Dir {
	p = path.Clean(p)
	d := Dir{Storage: st, Path: p}
	if _, ok := ParseCheckpointDirName(path.Base(p)); ok {
		d.JobDir = path.Dir(p)
	}
	return d
}

// ResolveIn finds the snapshot directory p designates: a directory with a
// _metadata is itself (a chk-<N> or a savepoint); a job directory is its
// latest complete checkpoint; a _metadata file is its directory. Anything
// else wraps snapshot.ErrNotFound.
func ResolveIn(ctx context.Context, st storage.Storage, p string) (Dir, error) {
	p = path.Clean(p)
	in, err := st.Stat(ctx, p)
	if err != nil {
		return Dir{}, NotFound(err)
	}
	if !in.IsDir {
		if path.Base(p) == MetadataFile {
			return At(st, path.Dir(p)), nil
		}
		return Dir{}, fmt.Errorf("%w: %q is a file, not a checkpoint or savepoint directory", snapshot.ErrNotFound, st.URI(p))
	}
	d := At(st, p)
	ok, err := d.HasMetadata(ctx)
	if err != nil || ok {
		return d, err
	}
	cps, err := List(ctx, st, p)
	if err != nil {
		return Dir{}, err
	}
	if len(cps) == 0 {
		return Dir{}, fmt.Errorf("%w: %q holds no %s and no complete chk-<N>: not a checkpoint, savepoint or job directory", snapshot.ErrNotFound, st.URI(p), MetadataFile)
	}
	d = At(st, cps[len(cps)-1].Path)
	d.Complete = cps
	return d, nil
}

// Describe records in a snapshot's properties which complete checkpoints
// the job directory it was resolved from holds, so tools can list them.
func (d Dir) Describe(s *snapshot.Snapshot) {
	if len(d.Complete) == 0 {
		return
	}
	ids := make([]string, len(d.Complete))
	for i, c := range d.Complete {
		ids[i] = CheckpointDirName(c.ID)
	}
	if s.Properties == nil {
		s.Properties = map[string]string{}
	}
	s.Properties[snapshot.PropJobCheckpoints] = strings.Join(ids, " ")
}

// Metadata is the path of the directory's _metadata.
func (d Dir) Metadata() string { return path.Join(d.Path, MetadataFile) }

// URI renders the directory for messages and for users to pass back.
func (d Dir) URI() string { return d.Storage.URI(d.Path) }

// HasMetadata reports whether the directory holds a _metadata file, i.e.
// a committed snapshot.
func (d Dir) HasMetadata(ctx context.Context) (bool, error) {
	return isFile(ctx, d.Storage, d.Metadata())
}

// CommitMetadata writes _metadata atomically; call it after every file it
// references is committed.
func (d Dir) CommitMetadata(ctx context.Context, data []byte) error {
	return storage.WriteFile(ctx, d.Storage, d.Metadata(), data)
}

// RefPath resolves a reference recorded in _metadata to a storage path.
// It refuses, as snapshot.Corrupt naming _metadata and the reference, an
// empty or absolute reference, one with "..", "." or empty elements, and
// on local disk one whose symlinks lead outside the snapshot's root (the
// checkpoint directory, or the job's shared/ or taskowned/ directory). On
// local disk it also refuses, with storage.ErrNotRegular, a reference to a
// FIFO, device or socket, so that a reader never waits on one.
func (d Dir) RefPath(ref string) (string, error) {
	p, _, err := d.resolve(ref)
	return p, err
}

// RealRefPath is RefPath on local disk with the symlinks followed: the
// absolute path of the file itself, for a caller that links it.
func (d Dir) RealRefPath(ref string) (string, error) {
	p, real, err := d.resolve(ref)
	if err != nil || real != "" {
		return real, err
	}
	return filepath.Abs(p) // does not exist (yet): left for the caller to report
}

// resolve is RefPath, also returning, on local disk, the real path of an
// existing file.
func (d Dir) resolve(ref string) (p, real string, err error) {
	if !fs.ValidPath(ref) || ref == "." || strings.Contains(ref, `\`) {
		return "", "", snapshot.Corrupt(d.Storage.URI(d.Metadata()), -1, "reference %q is not a plain relative path inside the snapshot", ref)
	}
	root := d.Path
	first, _, _ := strings.Cut(ref, "/")
	if (first == SharedDir || first == TaskOwnedDir) && d.JobDir != "" {
		root = d.JobDir
	}
	p = path.Join(root, ref)
	if first == SharedDir || first == TaskOwnedDir {
		root = path.Join(root, first)
	}
	if storage.IsLocal(d.Storage) {
		if real, err = checkSymlinks(root, p); err != nil {
			return "", "", snapshot.Corrupt(d.Storage.URI(d.Metadata()), -1, "reference %q: %v", ref, err)
		}
		if in, err := d.Storage.Stat(context.Background(), p); err == nil && in.Special {
			return "", "", fmt.Errorf("%s references %q: %q is %w, refused", d.Storage.URI(d.Metadata()), ref, p, storage.ErrNotRegular)
		}
	}
	return p, real, nil
}

// checkSymlinks refuses p when, symlinks followed, it lies outside root,
// and returns the absolute path it leads to. A p that does not exist yet
// is left for Open to report, with real "".
func checkSymlinks(root, p string) (real string, err error) {
	real, err = filepath.EvalSymlinks(p)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil
		}
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	realRoot, _ = filepath.Abs(realRoot)
	real, _ = filepath.Abs(real)
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", fmt.Errorf("symlinks lead to %q, outside %q", real, realRoot)
	}
	return real, nil
}

// Open opens the file a _metadata reference names (see RefPath). A
// missing file wraps snapshot.ErrNotFound.
func (d Dir) Open(ctx context.Context, ref string) (storage.File, error) {
	p, err := d.RefPath(ref)
	if err != nil {
		return nil, err
	}
	f, err := d.Storage.Open(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s references %q: %w", d.Storage.URI(d.Metadata()), ref, NotFound(err))
	}
	return f, nil
}

// Description describes the snapshot s read from d's _metadata by a reader
// that follows the files the metadata lists for each subtask: those files,
// each once, located as RefPath does (see snapshot.Format.Describe).
func (d Dir) Description(s *snapshot.Snapshot, ff snapshot.FileFollower) (*snapshot.Description, error) {
	desc := &snapshot.Description{Snapshot: s, Metadata: d.Metadata()}
	seen := map[string]bool{}
	for _, op := range s.Operators {
		for i := range op.Subtasks {
			refs, err := ff.FollowedFiles(op, i)
			if err != nil {
				return nil, err
			}
			for _, ref := range refs {
				if seen[ref.Path] {
					continue
				}
				seen[ref.Path] = true
				f := snapshot.DescribedFile{Ref: ref.Path, MinSize: ref.Size}
				if f.Path, f.Err = d.RefPath(ref.Path); f.Err == nil {
					f.Storage = d.Storage
				}
				desc.Files = append(desc.Files, f)
			}
		}
	}
	return desc, nil
}
