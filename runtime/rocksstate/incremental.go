package rocksstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// IncrementalOptions configure an Incremental checkpointer.
type IncrementalOptions struct {
	// LocalDir holds the working RocksDB instances and checkpoint staging;
	// required. It is created if missing.
	LocalDir string
	// Retain is how many completed checkpoints to keep (at least 1; 0
	// means 1, Flink's default).
	Retain int
	// Now stamps snapshots; nil means time.Now.
	Now func() time.Time
	// Storage resolves checkpoint directories; required.
	Storage *storage.Registry
}

// Incremental drives RocksDB incremental checkpoints for the stream
// runtime: it owns one local Instance per keyed subtask, and each
// Checkpoint uploads only SST files no retained checkpoint has, under
// <root>/<job-id>/shared/, with the private files in chk-N/.
type Incremental struct {
	opts      IncrementalOptions
	ops       []*snapshot.Operator
	instances []*Instance
	// bound after the first Checkpoint or Restore:
	st       storage.Storage
	jobDir   string
	registry *Registry
	// orphans are the shared files bind collected, reported as deleted
	// by the next checkpoint.
	orphans []string
}

// CheckpointResult reports one completed checkpoint.
type CheckpointResult struct {
	UploadStats
	// Discarded are the checkpoints dropped by retention, Deleted the
	// shared files no retained checkpoint needed any more.
	Discarded []int64  `json:"discarded"`
	Deleted   []string `json:"deleted"`
}

// NewIncremental returns a checkpointer with no instances.
func NewIncremental(opts IncrementalOptions) (*Incremental, error) {
	if opts.LocalDir == "" || opts.Storage == nil {
		return nil, errors.New("rocksdb: IncrementalOptions.LocalDir and Storage are required")
	}
	if opts.Retain <= 0 {
		opts.Retain = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.LocalDir, 0o755); err != nil {
		return nil, err
	}
	return &Incremental{opts: opts}, nil
}

// Open creates (or returns) the local instance of subtask index of op,
// owning key groups kgs.
func (b *Incremental) Open(op *snapshot.Operator, index int, kgs keygroup.Range) (*Instance, error) {
	if in, ok := b.Instance(op.ID, index); ok {
		return in, nil
	}
	dir := filepath.Join(b.opts.LocalDir, "db", rocksdbformat.SubtaskDirName(op.ID, index)+"-"+rocksdbformat.RandomName())
	fi, err := rocksdbformat.OpenInstance(dir, b.operator(op), index, kgs)
	if err != nil {
		return nil, err
	}
	in := &Instance{Instance: fi, known: map[string]rocksdbformat.File{}}
	b.instances = append(b.instances, in)
	return in, nil
}

// operator keeps one descriptor per operator id.
func (b *Incremental) operator(op *snapshot.Operator) *snapshot.Operator {
	for _, o := range b.ops {
		if o.ID == op.ID {
			return o
		}
	}
	c := *op
	c.Subtasks = nil
	b.ops = append(b.ops, &c)
	return &c
}

// Instance finds an open instance.
func (b *Incremental) Instance(opID string, index int) (*Instance, bool) {
	for _, in := range b.instances {
		if in.Operator().ID == opID && in.Subtask() == index {
			return in, true
		}
	}
	return nil, false
}

// Instances lists the open instances, in the order they were opened.
func (b *Incremental) Instances() []*Instance { return slices.Clone(b.instances) }

// bind selects the job directory, loading its registry on first use.
func (b *Incremental) bind(ctx context.Context, root, jobID string) error {
	st, rootPath, err := b.opts.Storage.Resolve(ctx, root)
	if err != nil {
		return err
	}
	jobDir := path.Join(rootPath, jobID)
	if b.registry != nil && b.jobDir == jobDir && b.st == st {
		return nil
	}
	reg, err := LoadRegistry(ctx, st, jobDir)
	if err != nil {
		return err
	}
	b.st, b.jobDir, b.registry = st, jobDir, reg
	b.orphans, err = collectOrphans(ctx, st, jobDir, reg)
	return err
}

// collectOrphans removes what a checkpointer killed before its commit (or
// during retention) left in jobDir: chk-<N> directories without a
// _metadata, and files in shared/ that no complete checkpoint references
// (uploaded SSTs, and half-written temporaries). Nothing else deletes
// them: the registry only counts what a _metadata references. It returns
// the shared files removed. Like retention, it assumes this checkpointer
// is the job directory's only writer.
func collectOrphans(ctx context.Context, st storage.Storage, jobDir string, reg *Registry) ([]string, error) {
	infos, err := st.List(ctx, jobDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, in := range infos {
		id, ok := chkdir.ParseCheckpointDirName(in.Name)
		if in.IsDir && ok && !slices.Contains(reg.Checkpoints(), id) {
			if err := st.RemoveAll(ctx, path.Join(jobDir, in.Name)); err != nil {
				return nil, err
			}
		}
	}
	shared, err := st.List(ctx, path.Join(jobDir, chkdir.SharedDir))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// By base name too: shared names are unique, and a path spelled
	// differently from the registry's must never cost a referenced file.
	keep := map[string]bool{}
	for _, f := range reg.Files() {
		keep[path.Base(f)] = true
	}
	for _, in := range shared {
		if in.IsDir || reg.Referenced(in.Path) || keep[in.Name] {
			continue
		}
		if err := st.Remove(ctx, in.Path); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return removed, err
		}
		removed = append(removed, in.Path)
	}
	return removed, nil
}

// Checkpoint uploads every instance as checkpoint chkID of job jobID under
// root, commits chk-N/_metadata last, then applies retention. The first
// checkpoint into a job directory also removes what an interrupted
// checkpointer left there (collectOrphans).
func (b *Incremental) Checkpoint(ctx context.Context, root, jobID string, chkID int64) (*CheckpointResult, error) {
	if jobID == "" || path.Base(jobID) != jobID {
		return nil, fmt.Errorf("rocksdb: job id %q cannot name a directory", jobID)
	}
	if err := b.bind(ctx, root, jobID); err != nil {
		return nil, err
	}
	if slices.Contains(b.registry.Checkpoints(), chkID) {
		return nil, fmt.Errorf("%w: rocksdb checkpoint %d of job %s exists", storage.ErrExist, chkID, jobID)
	}
	chk := chkdir.At(b.st, path.Join(b.jobDir, chkdir.CheckpointDirName(chkID)))
	var newShared []string
	res, m, err := b.uploadAll(ctx, chk, &newShared, jobID, chkID)
	if err == nil {
		err = rocksdbformat.WriteMetadata(ctx, chk, m)
	}
	if err != nil {
		// Nothing references what this attempt uploaded.
		for _, p := range newShared {
			b.st.Remove(ctx, p)
		}
		b.st.RemoveAll(ctx, chk.Path)
		return nil, err
	}
	shared, err := m.SharedPaths(chk)
	if err != nil {
		return nil, err
	}
	if err := b.registry.Register(chkID, shared); err != nil {
		return nil, err
	}
	res.Location = chk.URI()
	for _, h := range m.Handles {
		for _, f := range h.Files {
			if f.Shared {
				res.SharedFiles++
				res.SharedBytes += f.Size
			}
		}
	}
	res.ReusedBytes = res.Bytes - res.UploadedBytes // what was not uploaded was referenced again
	res.Discarded, res.Deleted, err = b.retain(ctx)
	res.Deleted = append(b.orphans, res.Deleted...)
	b.orphans = nil
	return res, err
}

// uploadAll uploads every instance into checkpoint directory chk, its SST
// files into the job's shared directory (collecting the ones uploaded in
// newShared), and builds the metadata.
func (b *Incremental) uploadAll(ctx context.Context, chk chkdir.Dir, newShared *[]string, jobID string, id int64) (*CheckpointResult, *rocksdbformat.Metadata, error) {
	tmp, err := os.MkdirTemp(b.opts.LocalDir, "stage-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	sharedDir := path.Join(chk.JobDir, chkdir.SharedDir)
	if err := b.st.MkdirAll(ctx, sharedDir); err != nil {
		return nil, nil, err
	}
	s := &snapshot.Snapshot{Format: rocksdbformat.FormatName, JobID: jobID, CheckpointID: id, Kind: snapshot.Checkpoint, Created: b.opts.Now().UTC()}
	m := &rocksdbformat.Metadata{Snapshot: s}
	var total rocksdbformat.UploadCounts
	for _, op := range b.ops {
		c := *op
		c.Subtasks = nil
		for _, in := range b.instances {
			if in.Operator() != op {
				continue
			}
			t := rocksdbformat.Target{Dir: chk, Shared: b.shareSSTs(in, sharedDir, newShared)}
			h, us, err := in.Upload(ctx, t, tmp)
			if err != nil {
				return nil, nil, err
			}
			total.Add(us)
			m.Handles = append(m.Handles, h)
			c.Subtasks = append(c.Subtasks, in.SubtaskModel())
		}
		slices.SortFunc(c.Subtasks, func(x, y *snapshot.Subtask) int { return x.Index - y.Index })
		s.Operators = append(s.Operators, &c)
	}
	res := &CheckpointResult{UploadStats: UploadStats{Files: total.Files, Bytes: total.Bytes, UploadedFiles: total.UploadedFiles, UploadedBytes: total.UploadedBytes, ReusedFiles: total.ReusedFiles}}
	return res, m, nil
}

// shareSSTs uploads in's SST files into the job's shared directory
// sharedDir, as rocksdbformat.Target.Shared: a file an earlier retained
// checkpoint uploaded is referenced again, any other is uploaded under a
// new unique name and collected in newShared, so that a failed checkpoint
// can remove it.
func (b *Incremental) shareSSTs(in *Instance, sharedDir string, newShared *[]string) func(ctx context.Context, name, local string, size int64) (rocksdbformat.File, bool, error) {
	return func(ctx context.Context, name, local string, size int64) (rocksdbformat.File, bool, error) {
		if k, ok := in.known[name]; ok && k.Size == size && b.registry.Referenced(path.Join(sharedDir, path.Base(k.Path))) {
			return k, false, nil
		}
		remote := path.Join(sharedDir, rocksdbformat.RandomName()+"-"+name)
		n, crc, err := rocksdbformat.UploadFile(ctx, b.st, local, remote)
		if err != nil {
			return rocksdbformat.File{}, false, err
		}
		*newShared = append(*newShared, remote)
		f := rocksdbformat.File{Local: name, Path: rocksdbformat.SharedRef(path.Base(remote)), Size: n, CRC32C: crc, Shared: true}
		in.known[name] = f
		return f, true, nil
	}
}

// UploadStats is what a checkpoint references, what it uploaded and what
// it reused from the checkpoints before it.
type UploadStats struct {
	// Location is the chk-N directory (its _metadata is the commit point).
	Location string `json:"location"`
	// Files and Bytes are everything the checkpoint references.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// UploadedFiles and UploadedBytes are what this checkpoint copied.
	UploadedFiles int   `json:"uploaded_files"`
	UploadedBytes int64 `json:"uploaded_bytes"`
	// ReusedFiles and ReusedBytes are shared SSTs referenced from earlier
	// checkpoints instead of uploaded.
	ReusedFiles int   `json:"reused_files"`
	ReusedBytes int64 `json:"reused_bytes"`
	// SharedFiles and SharedBytes are the SSTs the checkpoint references in
	// shared/, uploaded now or reused; everything else (MANIFEST, OPTIONS,
	// operator state: the private files) is uploaded by every checkpoint.
	SharedFiles int   `json:"shared_files"`
	SharedBytes int64 `json:"shared_bytes"`
}

// retain discards the oldest checkpoints beyond Retain: their _metadata
// first (so they are no longer restorable), then their private files,
// then the shared files no retained checkpoint references.
func (b *Incremental) retain(ctx context.Context) (discarded []int64, deleted []string, err error) {
	ids := b.registry.Checkpoints()
	for len(ids) > b.opts.Retain {
		id := ids[0]
		ids = ids[1:]
		dir := path.Join(b.jobDir, chkdir.CheckpointDirName(id))
		if err := b.st.Remove(ctx, path.Join(dir, rocksdbformat.MetadataName)); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return discarded, deleted, err
		}
		if err := b.st.RemoveAll(ctx, dir); err != nil {
			return discarded, deleted, err
		}
		discarded = append(discarded, id)
		for _, f := range b.registry.Release(id) {
			if err := b.st.Remove(ctx, f); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return discarded, deleted, err
			}
			deleted = append(deleted, f)
		}
	}
	return discarded, deleted, nil
}

// Restore replaces the open instances with the subtasks of the snapshot at
// location (a chk-N or savepoint directory, its _metadata, or a job
// directory, meaning its latest complete checkpoint), downloading
// each subtask's files into a fresh local directory.
func (b *Incremental) Restore(ctx context.Context, location string) (*snapshot.Snapshot, error) {
	st, p, err := b.opts.Storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	d, err := chkdir.ResolveIn(ctx, st, p)
	if err != nil {
		return nil, err
	}
	m, err := rocksdbformat.ReadMetadata(ctx, d)
	if err != nil {
		return nil, err
	}
	b.closeInstances(true)
	b.ops = nil
	for _, op := range m.Snapshot.Operators {
		for _, sub := range op.Subtasks {
			if err := b.restoreSubtask(ctx, d, m, op, sub); err != nil {
				b.closeInstances(true)
				return nil, fmt.Errorf("rocksdb: restore operator %s subtask %d: %w", op.Label(), sub.Index, err)
			}
		}
	}
	return m.Snapshot, nil
}

func (b *Incremental) restoreSubtask(ctx context.Context, d chkdir.Dir, m *rocksdbformat.Metadata, op *snapshot.Operator, sub *snapshot.Subtask) error {
	h, ok := m.Handle(op.ID, sub.Index)
	if !ok {
		return snapshot.Corrupt(d.Storage.URI(d.Metadata()), -1, "no files listed for operator %s subtask %d", op.ID, sub.Index)
	}
	dir := filepath.Join(b.opts.LocalDir, "db", rocksdbformat.SubtaskDirName(op.ID, sub.Index)+"-"+rocksdbformat.RandomName())
	if len(h.Files) > 0 {
		if err := rocksdbformat.DownloadHandle(ctx, d, h, dir); err != nil {
			os.RemoveAll(dir)
			return err
		}
	}
	ops, err := rocksdbformat.ReadOpState(ctx, d, h.OperatorState)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	fi, err := rocksdbformat.OpenInstance(dir, b.operator(op), sub.Index, h.KeyGroups)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	in := &Instance{Instance: fi, known: map[string]rocksdbformat.File{}}
	for _, l := range ops.States {
		in.SetOperatorState(l.Name, l.Values)
	}
	in.SetRaw(ops.Raw)
	for _, f := range h.Files {
		if f.Shared {
			in.known[f.Local] = f
		}
	}
	b.instances = append(b.instances, in)
	return nil
}

func (b *Incremental) closeInstances(remove bool) {
	for _, in := range b.instances {
		if remove {
			in.Destroy()
		} else {
			in.Close()
		}
	}
	b.instances = nil
}

// Close closes every instance and removes the local working directories.
func (b *Incremental) Close() error {
	b.closeInstances(true)
	return nil
}
