// Package catalog lists what a location holds: the jobs of a checkpoint
// root (<root>/<job-id>/{chk-<N>,shared,taskowned}) with their checkpoints,
// the savepoints of a savepoint root (savepoint-<id>-<random>), and
// stateutil's own snapshots, on any storage and in any registered format.
// Each snapshot is described from its metadata alone, never its state,
// and checked for completeness: its metadata is there, and every file it
// references is present and no shorter than the metadata says. Files that
// several snapshots reference (the shared files of incremental
// checkpoints) are counted once.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// SchemaVersion is the version of the Listing JSON document.
const SchemaVersion = 1

// DefaultDepth finds the checkpoints of a checkpoint root,
// <root>/<job-id>/chk-<N>, two levels below it.
const DefaultDepth = 2

// maxProblemFiles bounds the files a snapshot's problems name one by one.
const maxProblemFiles = 5

// Listing is what a location holds.
type Listing struct {
	SchemaVersion int    `json:"schema_version"`
	Root          string `json:"root"`
	// Snapshots are in the order of their paths below the root, a job's
	// checkpoints by id.
	Snapshots []Snapshot `json:"snapshots"`
	Jobs      []Job      `json:"jobs"`
	// Files and Bytes total every file the snapshots reference and their
	// metadata, each file counted once.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Snapshot is one checkpoint or savepoint, complete or not.
type Snapshot struct {
	// Location is what inspect, verify and every other command take.
	Location string `json:"location"`
	// Name is its path below the root ("." for the root itself).
	Name string `json:"name"`
	// Job is the Name of the job directory it is a checkpoint of, if any.
	Job string `json:"job,omitempty"`
	// ID is the checkpoint id its metadata records (of a savepoint too),
	// or for a chk-<N> without metadata, N; nil when unknown.
	ID     *int64        `json:"id"`
	Kind   snapshot.Kind `json:"kind,omitempty"`
	Format string        `json:"format,omitempty"`
	// Created is when the snapshot was taken, if its metadata records it
	// (Flink's does not); Modified is when its metadata was written.
	Created  *time.Time `json:"created,omitempty"`
	Modified time.Time  `json:"modified,omitzero"`
	// Operators is nil when the metadata could not be read.
	Operators *int `json:"operators"`
	// Files and Bytes count its metadata and the referenced files present.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// SharedFiles and SharedBytes count those of its files that other
	// snapshots listed reference too: SharesWith (their Names).
	SharedFiles int      `json:"shared_files"`
	SharedBytes int64    `json:"shared_bytes"`
	SharesWith  []string `json:"shares_with"`
	// Committed says its metadata is there; Complete, that it can be
	// read: committed, metadata readable, every referenced file present.
	Committed    bool     `json:"committed"`
	Complete     bool     `json:"complete"`
	MissingFiles int      `json:"missing_files"`
	Problems     []string `json:"problems"`

	files map[string]int64 // present files by URI, with their sizes
}

// Job is a job directory of a checkpoint root.
type Job struct {
	// Name is its path below the root (the root's own name when the root
	// is a job directory): the job id, as Flink names it.
	Name        string `json:"name"`
	Location    string `json:"location"`
	Checkpoints int    `json:"checkpoints"`
	Complete    int    `json:"complete"`
	// Files and Bytes count every file its checkpoints reference, and
	// their metadata, each once; SharedFiles and SharedBytes those that
	// more than one of them reference.
	Files       int   `json:"files"`
	Bytes       int64 `json:"bytes"`
	SharedFiles int   `json:"shared_files"`
	SharedBytes int64 `json:"shared_bytes"`
}

// Options tune a listing.
type Options struct {
	// Depth is how many directory levels below the root snapshots are
	// looked for (0: DefaultDepth).
	Depth int
	// Open is how metadata is read: PathMap for the absolute paths a Flink
	// checkpoint records, when it was moved.
	Open snapshot.OpenOptions
}

// List lists the snapshots at location: a checkpoint root, a savepoint
// root, a job directory, a snapshot, or any directory holding them up to
// opts.Depth levels down. A snapshot that cannot be read is listed with
// its problems; an error is returned only when the location itself cannot
// be listed, or storage fails.
func List(ctx context.Context, reg *snapshot.Registry, location string, opts Options) (*Listing, error) {
	st, root, err := reg.Storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	if opts.Open.Storage == nil {
		opts.Open.Storage = reg.Storage
	}
	root = path.Clean(root)
	l := &lister{reg: reg, st: st, opts: opts, dirs: map[string]map[string]storage.Info{},
		out: &Listing{SchemaVersion: SchemaVersion, Root: location, Snapshots: []Snapshot{}, Jobs: []Job{}}}
	in, err := st.Stat(ctx, root)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("%w: %q does not exist", snapshot.ErrNotFound, location)
	case err != nil:
		return nil, fmt.Errorf("%q: %w", location, err)
	}
	switch {
	case in.Special:
		return nil, fmt.Errorf("%q: %w, not a snapshot or a directory", location, storage.ErrNotRegular)
	case in.IsDir:
		err = l.dir(ctx, root, ".", 0)
	default:
		err = l.file(ctx, root, ".", true)
	}
	if err != nil {
		return nil, err
	}
	l.account()
	return l.out, nil
}

type lister struct {
	reg  *snapshot.Registry
	st   storage.Storage
	opts Options
	out  *Listing
	// dirs are the directories listed to find referenced files, by URI:
	// one listing per directory, not one request per file.
	dirs map[string]map[string]storage.Info
}

// dir looks at a directory depth levels below the root.
func (l *lister) dir(ctx context.Context, p, name string, depth int) error {
	meta, err := l.st.Stat(ctx, path.Join(p, chkdir.MetadataFile))
	switch {
	case err == nil && !meta.IsDir:
		return l.snapshot(ctx, p, name, "")
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return err
	}
	if strings.HasPrefix(path.Base(p), "savepoint-") {
		l.uncommitted(ctx, p, name, "", snapshot.Savepoint, nil)
		return nil
	}
	infos, err := l.st.List(ctx, p)
	switch {
	case depth > 0 && errors.Is(err, storage.ErrNotFound):
		return nil // removed since its parent was listed
	case err != nil:
		return chkdir.NotFound(err)
	case isJobDir(infos) && depth < l.opts.Depth:
		return l.job(ctx, p, name, depth)
	case isJobDir(infos):
		return nil
	}
	if depth >= l.opts.Depth {
		return nil
	}
	for _, in := range infos {
		child, cname := path.Join(p, in.Name), path.Join(name, in.Name)
		switch {
		case in.Special:
		case in.IsDir:
			err = l.dir(ctx, child, cname, depth+1)
		default:
			err = l.file(ctx, child, cname, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isJobDir says whether a directory's entries are a job directory's:
// checkpoints, or the directories of their shared files.
func isJobDir(infos []storage.Info) bool {
	return slices.ContainsFunc(infos, func(in storage.Info) bool {
		name, file := strings.CutSuffix(in.Name, chkdir.CheckpointFileSuffix)
		_, chk := chkdir.ParseCheckpointDirName(name)
		return chk && file != in.IsDir || in.IsDir && (in.Name == chkdir.SharedDir || in.Name == chkdir.TaskOwnedDir)
	})
}

// job lists a job directory's checkpoints.
func (l *lister) job(ctx context.Context, p, name string, depth int) error {
	cps, err := chkdir.Scan(ctx, l.st, p)
	switch {
	case depth > 0 && errors.Is(err, storage.ErrNotFound):
		return nil // removed since its parent was listed
	case err != nil:
		return err
	}
	job, under := name, name
	if name == "." {
		job, under = path.Base(p), ""
	}
	l.out.Jobs = append(l.out.Jobs, Job{Name: job, Location: l.st.URI(p)})
	for _, c := range cps {
		cname := path.Join(under, path.Base(c.Path))
		if c.Complete {
			err = l.snapshot(ctx, c.Path, cname, job)
		} else {
			l.uncommitted(ctx, c.Path, cname, job, snapshot.Checkpoint, &c.ID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// file looks at a file: a one-file snapshot, or, below the root, anything
// else, which is passed over.
func (l *lister) file(ctx context.Context, p, name string, root bool) error {
	f, err := l.reg.DetectIn(ctx, l.st, p, l.st.URI(p))
	if err != nil {
		if root || fatal(ctx, err) {
			return err
		}
		return nil
	}
	return l.described(ctx, f, p, name, "")
}

// snapshot lists the snapshot directory p, whose metadata is there.
func (l *lister) snapshot(ctx context.Context, p, name, job string) error {
	f, err := l.reg.DetectIn(ctx, l.st, p, l.st.URI(p))
	if err != nil {
		return l.unreadable(ctx, p, name, job, "", err)
	}
	return l.described(ctx, f, p, name, job)
}

// described lists a snapshot of format f from its metadata.
func (l *lister) described(ctx context.Context, f *snapshot.Format, p, name, job string) error {
	if f.Describe == nil {
		return l.unreadable(ctx, p, name, job, f.Name, errors.New("the "+f.Name+" format cannot be listed without reading its state"))
	}
	d, err := f.Describe(ctx, l.st, p, l.opts.Open)
	if err != nil {
		return l.unreadable(ctx, p, name, job, f.Name, err)
	}
	s := d.Snapshot
	e := Snapshot{Location: l.st.URI(p), Name: name, Job: job, ID: &s.CheckpointID, Kind: s.Kind, Format: f.Name,
		Operators: new(len(s.Operators)), Committed: true, Complete: true, SharesWith: []string{}, Problems: []string{}, files: map[string]int64{}}
	if !s.Created.IsZero() {
		e.Created = new(s.Created.UTC())
	}
	meta, err := l.st.Stat(ctx, d.Metadata)
	if err != nil {
		return l.unreadable(ctx, p, name, job, f.Name, err)
	}
	e.Modified = meta.ModTime.UTC()
	e.files[l.st.URI(d.Metadata)] = meta.Size
	var missing []string
	for _, df := range d.Files {
		problem, err := l.check(ctx, df, e.files)
		if err != nil {
			return err
		}
		if problem != "" {
			e.MissingFiles++
			missing = append(missing, problem)
		}
	}
	if len(missing) > 0 {
		if _, err := l.st.Stat(ctx, d.Metadata); errors.Is(err, storage.ErrNotFound) {
			return l.unreadable(ctx, p, name, job, f.Name, err)
		}
		e.Complete = false
		if len(missing) > maxProblemFiles {
			missing = append(missing[:maxProblemFiles], fmt.Sprintf("and %d more", len(missing)-maxProblemFiles))
		}
		e.Problems = append(e.Problems, missing...)
	}
	l.add(e)
	return nil
}

// check finds a referenced file, recording it in files when it is there
// whole; otherwise it says what is wrong with it.
func (l *lister) check(ctx context.Context, df snapshot.DescribedFile, files map[string]int64) (string, error) {
	if df.Storage == nil {
		return fmt.Sprintf("cannot locate %q: %v", df.Ref, df.Err), nil
	}
	uri := df.Storage.URI(df.Path)
	dir := path.Dir(df.Path)
	key := df.Storage.URI(dir)
	entries, ok := l.dirs[key]
	if !ok {
		infos, err := df.Storage.List(ctx, dir)
		switch {
		case err == nil, errors.Is(err, storage.ErrNotFound):
		case fatal(ctx, err):
			return "", err
		default:
			return fmt.Sprintf("cannot list %q for %q: %v", key, df.Ref, err), nil
		}
		entries = make(map[string]storage.Info, len(infos))
		for _, in := range infos {
			entries[in.Name] = in
		}
		l.dirs[key] = entries
	}
	in, ok := entries[path.Base(df.Path)]
	switch {
	case !ok && df.Unmapped:
		return fmt.Sprintf("missing %q (an absolute path as recorded where the snapshot was written: if it was moved, map it with --path-map OLD=NEW)", uri), nil
	case !ok:
		return fmt.Sprintf("missing %q", uri), nil
	case in.IsDir || in.Special:
		return fmt.Sprintf("%q is not a regular file", uri), nil
	case in.Size < df.MinSize:
		return fmt.Sprintf("%q is %d bytes, its metadata records %d: truncated", uri, in.Size, df.MinSize), nil
	}
	files[uri] = in.Size
	return "", nil
}

// uncommitted lists a snapshot directory without metadata: being written,
// failed, or left behind.
func (l *lister) uncommitted(ctx context.Context, p, name, job string, kind snapshot.Kind, id *int64) {
	var modified time.Time
	if in, err := l.st.Stat(ctx, p); err == nil {
		modified = in.ModTime.UTC()
	}
	l.add(Snapshot{Location: l.st.URI(p), Name: name, Job: job, ID: id, Kind: kind, Modified: modified,
		SharesWith: []string{}, Problems: []string{"no " + chkdir.MetadataFile + ": being written, failed or left behind"}})
}

// unreadable lists a snapshot whose metadata is there but could not be
// read; errors of the storage itself, or a cancellation, end the listing.
func (l *lister) unreadable(ctx context.Context, p, name, job, format string, err error) error {
	if fatal(ctx, err) {
		return err
	}
	e := Snapshot{Location: l.st.URI(p), Name: name, Job: job, Format: format, Committed: true,
		SharesWith: []string{}, Problems: []string{err.Error()}, files: map[string]int64{}}
	meta := p
	if in, err := l.st.Stat(ctx, p); err == nil && in.IsDir {
		meta = path.Join(p, chkdir.MetadataFile)
	}
	in, serr := l.st.Stat(ctx, meta)
	switch {
	case errors.Is(serr, storage.ErrNotFound):
		// Discarded while it was listed (a job's older checkpoints go
		// as new ones complete): no longer a snapshot.
		e.Committed, e.Problems = false, []string{"removed while it was listed"}
	case serr == nil && !in.IsDir && !in.Special:
		e.Modified = in.ModTime.UTC()
		e.files[l.st.URI(meta)] = in.Size
	}
	if id, ok := chkdir.ParseCheckpointDirName(path.Base(p)); ok && job != "" {
		e.ID, e.Kind = &id, snapshot.Checkpoint
	}
	l.add(e)
	return nil
}

// fatal says whether an error ends the listing rather than describing one
// snapshot: storage that cannot be reached, or a cancelled context.
func fatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (l *lister) add(e Snapshot) { l.out.Snapshots = append(l.out.Snapshots, e) }

// account counts each snapshot's files, and its jobs' and the listing's
// with each file once, and says which snapshots share files.
func (l *lister) account() {
	snaps := l.out.Snapshots
	users := map[string][]int{} // file URI -> the snapshots referencing it, in order
	sizes := map[string]int64{}
	for i, e := range snaps {
		for uri, size := range e.files {
			users[uri] = append(users[uri], i)
			sizes[uri] = size
		}
	}
	for uri := range users {
		slices.Sort(users[uri])
	}
	for i := range snaps {
		e := &snaps[i]
		var with []int
		for uri, size := range e.files {
			e.Files++
			e.Bytes += size
			if len(users[uri]) > 1 {
				e.SharedFiles++
				e.SharedBytes += size
				with = append(with, users[uri]...)
			}
		}
		slices.Sort(with)
		for _, j := range slices.Compact(with) {
			if j != i {
				e.SharesWith = append(e.SharesWith, snaps[j].Name)
			}
		}
	}
	for k := range l.out.Jobs {
		j := &l.out.Jobs[k]
		refs := map[string]int{}
		for _, e := range snaps {
			if e.Job != j.Name {
				continue
			}
			j.Checkpoints++
			if e.Complete {
				j.Complete++
			}
			for uri := range e.files {
				refs[uri]++
			}
		}
		for uri, n := range refs {
			j.Files++
			j.Bytes += sizes[uri]
			if n > 1 {
				j.SharedFiles++
				j.SharedBytes += sizes[uri]
			}
		}
	}
	for _, size := range sizes {
		l.out.Files++
		l.out.Bytes += size
	}
}
