package rocksdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/recovered"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/tempdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// reader reads a rocksdb snapshot. Metadata-level figures come from
// _metadata alone; a subtask's files are checked (size, CRC32C) and opened
// read-only the first time its entries are asked for: on local disk in
// place, through links in a temporary directory; elsewhere downloaded
// into it. A point read of a local snapshot, and every read of one opened
// with ChecksumReads, links the files unread instead, its instance
// verifying each block it reads: a point read reads a few blocks, not
// every byte, and a dump streams from the first block.
type reader struct {
	d        chkdir.Dir
	m        *rocksdbformat.Metadata
	recorded string // the format _metadata names
	tmpRoot  string
	// checksumReads: see snapshot.OpenOptions.ChecksumReads.
	checksumReads bool
	mu            sync.Mutex
	tmp           *tempdir.Dir
	dbs           map[opening]*localDB
}

// opening names one local instance of a subtask: unread is the one whose
// files were linked unread (see reader).
type opening struct {
	h      *rocksdbformat.Handle
	unread bool
}

// localDB is a subtask's instance, opened by the first caller of local
// while later callers wait: subtasks are checked and opened in parallel,
// each once.
type localDB struct {
	ready chan struct{} // closed when d or err is set
	d     *rocksdb.ReadOnlyDB
	err   error
}

func openReader(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (snapshot.Reader, error) {
	r, err := newReader(ctx, st, p, opts)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newReader reads and checks _metadata; nothing else is read until a
// subtask's entries are asked for.
func newReader(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*reader, error) {
	d, err := chkdir.ResolveIn(ctx, st, p)
	if err != nil {
		return nil, err
	}
	m, err := rocksdbformat.ReadMetadata(ctx, d)
	if err != nil {
		return nil, err
	}
	// References are refused where they cannot be followed (out of the
	// snapshot, to a FIFO) now, as the filesystem format does, not when a
	// subtask's entries are first asked for.
	for _, h := range m.Handles {
		for _, f := range h.AllFiles() {
			if _, err := d.RefPath(f.Path); err != nil {
				return nil, err
			}
		}
	}
	d.Describe(m.Snapshot)
	r := &reader{d: d, m: m, recorded: m.Snapshot.Format, tmpRoot: opts.TempDir, checksumReads: opts.ChecksumReads, dbs: map[opening]*localDB{}}
	m.Snapshot.Format = FormatName
	return r, nil
}

func (r *reader) Snapshot() *snapshot.Snapshot { return r.m.Snapshot }

// RecordedFormat is the format _metadata names; see
// snapshot.FormatRecorder.
func (r *reader) RecordedFormat() string { return r.recorded }

// FollowedFiles lists the files that rebuild a subtask's instance and hold
// its operator state, as its handle records them; see
// snapshot.FileFollower. A subtask without a handle has no files.
func (r *reader) FollowedFiles(op *snapshot.Operator, subtask int) ([]snapshot.FileRef, error) {
	h, ok := r.m.Handle(op.ID, subtask)
	if !ok {
		return nil, nil
	}
	return h.Refs(), nil
}

func (r *reader) handle(op *snapshot.Operator, subtask int) (*rocksdbformat.Handle, error) {
	h, ok := r.m.Handle(op.ID, subtask)
	if ok {
		return h, nil
	}
	// A subtask nothing was written for has no instance: it is empty, if
	// the metadata says so.
	if subtask >= 0 && subtask < len(op.Subtasks) {
		if sub := op.Subtasks[subtask]; sub != nil && isEmpty(sub) {
			return &rocksdbformat.Handle{Operator: op.ID, Subtask: subtask, KeyGroups: sub.KeyGroups, PrefixBytes: rocksdbformat.PrefixWidth(op.MaxParallelism)}, nil
		}
	}
	return nil, fmt.Errorf("%w: operator %s has no subtask %d in %q", snapshot.ErrNotFound, op.Label(), subtask, r.d.URI())
}

// isEmpty reports a subtask whose metadata says it holds no state at all.
func isEmpty(sub *snapshot.Subtask) bool {
	return sub.Keyed.Known && sub.Keyed.Entries == 0 && sub.Operator.Known && sub.Operator.Entries == 0 &&
		sub.RawKeyedBytes == 0 && sub.RawOperatorBytes == 0 && len(sub.Files) == 0
}

// local downloads and opens a subtask's instance once (a failed attempt
// is forgotten, so that a later call tries again).
func (r *reader) local(ctx context.Context, h *rocksdbformat.Handle) (*rocksdb.ReadOnlyDB, error) {
	if r.checksumReads {
		return r.unreadLocal(ctx, h)
	}
	return r.instance(ctx, opening{h: h})
}

// unreadLocal is local for point reads and ChecksumReads: on local disk, an
// instance of its own whose files were not read through.
func (r *reader) unreadLocal(ctx context.Context, h *rocksdbformat.Handle) (*rocksdb.ReadOnlyDB, error) {
	if !storage.IsLocal(r.d.Storage) {
		return r.instance(ctx, opening{h: h}) // downloading reads every byte anyway
	}
	return r.instance(ctx, opening{h: h, unread: true})
}

func (r *reader) instance(ctx context.Context, o opening) (*rocksdb.ReadOnlyDB, error) {
	r.mu.Lock()
	l, opening := r.dbs[o]
	if !opening {
		l = &localDB{ready: make(chan struct{})}
		r.dbs[o] = l
	}
	r.mu.Unlock()
	if opening {
		select {
		case <-l.ready:
			return l.d, l.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l.d, l.err = r.open(ctx, o)
	close(l.ready)
	if l.err != nil {
		r.mu.Lock()
		if r.dbs[o] == l {
			delete(r.dbs, o)
		}
		r.mu.Unlock()
	}
	return l.d, l.err
}

// openAll opens the instances of hs at the same time (see local); the
// error is the first subtask's that failed.
func (r *reader) openAll(ctx context.Context, hs []*rocksdbformat.Handle) error {
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() {
			defer recovered.Capture(&errs[i])
			_, errs[i] = r.local(ctx, h)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) open(ctx context.Context, o opening) (*rocksdb.ReadOnlyDB, error) {
	tmp, err := r.tempDir(ctx)
	if err != nil {
		return nil, err
	}
	h := o.h
	dir := filepath.Join(tmp, rocksdbformat.SubtaskDirName(h.Operator, h.Subtask))
	fetch := rocksdbformat.DownloadHandle
	switch {
	case o.unread:
		dir += "-unread"
		fetch = rocksdbformat.LinkHandleUnread
	case storage.IsLocal(r.d.Storage):
		fetch = rocksdbformat.LinkHandle
	}
	os.RemoveAll(dir)
	if err := fetch(ctx, r.d, h, dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Unless linked unread, every file's CRC32C was checked.
	d, err := rocksdb.OpenReadOnly(dir, rocksdb.ReadOnlyOptions{Verified: !o.unread})
	if err != nil {
		return nil, fmt.Errorf("%w: operator %s subtask %d: %w", snapshot.ErrCorrupt, h.Operator, h.Subtask, err)
	}
	return d, nil
}

// tempDir is where the reader puts the instances it opens, made on first
// use, and reaped if the process is killed.
func (r *reader) tempDir(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tmp == nil {
		tmp, err := tempdir.New(ctx, r.tmpRoot, "stateutil-rocksdb-read-")
		if err != nil {
			return "", err
		}
		r.tmp = tmp
	}
	return r.tmp.Path, nil
}

func (r *reader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	return r.entries(ctx, op, subtask, kgs, false)
}

// HeldEntries is Entries holding each key group's pairs (see
// snapshot.KeyGroupHolder).
func (r *reader) HeldEntries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	return r.entries(ctx, op, subtask, kgs, true)
}

func (r *reader) entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range, hold bool) snapshot.Entries {
	h, err := r.keyedHandle(op, subtask)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	kgs = kgs.Intersect(h.KeyGroups)
	if kgs.Len() == 0 || len(h.Files) == 0 {
		return func(func(snapshot.Entry, error) bool) {}
	}
	d, err := r.local(ctx, h)
	if err != nil {
		return snapshot.FailedEntries(err)
	}
	return rocksdbformat.ScanEntries(ctx, d, op, kgs, hold)
}

// KeyEntries reads one key's entries with a point read (lookup.KeyReader).
func (r *reader) KeyEntries(ctx context.Context, op *snapshot.Operator, subtask, kg int, state string, key, namespace []byte) ([]snapshot.Entry, error) {
	h, err := r.keyedHandle(op, subtask)
	if err != nil {
		return nil, err
	}
	if !h.KeyGroups.Contains(kg) || len(h.Files) == 0 {
		return nil, nil
	}
	d, err := r.unreadLocal(ctx, h)
	if err != nil {
		return nil, err
	}
	return rocksdbformat.KeyEntries(d, op, state, kg, key, namespace)
}

// keyedHandle is a subtask's handle, its key-group prefix checked.
func (r *reader) keyedHandle(op *snapshot.Operator, subtask int) (*rocksdbformat.Handle, error) {
	h, err := r.handle(op, subtask)
	if err != nil {
		return nil, err
	}
	if w := rocksdbformat.PrefixWidth(op.MaxParallelism); w != h.PrefixBytes {
		return nil, snapshot.Corrupt(r.d.Storage.URI(r.d.Metadata()), -1, "operator %s subtask %d: %d-byte key-group prefix recorded, max parallelism %d implies %d", op.Label(), subtask, h.PrefixBytes, op.MaxParallelism, w)
	}
	return h, nil
}

func (r *reader) opState(ctx context.Context, op *snapshot.Operator, subtask int) (*rocksdbformat.OpState, error) {
	h, err := r.handle(op, subtask)
	if err != nil {
		return nil, err
	}
	return rocksdbformat.ReadOpState(ctx, r.d, h.OperatorState)
}

func (r *reader) Elements(ctx context.Context, op *snapshot.Operator, subtask int) snapshot.Elements {
	o, err := r.opState(ctx, op, subtask)
	if err != nil {
		return snapshot.FailedElements(err)
	}
	return func(yield func(snapshot.Element, error) bool) {
		done := map[string]bool{}
		emit := func(l rocksdbformat.OpList) bool {
			done[l.Name] = true
			for _, v := range l.Values {
				if !yield(snapshot.Element{State: l.Name, Subtask: subtask, Value: v}, nil) {
					return false
				}
			}
			return true
		}
		for _, d := range op.OperatorStates {
			for _, l := range o.States {
				if l.Name == d.Name && !emit(l) {
					return
				}
			}
		}
		for _, l := range o.States {
			if !done[l.Name] && !emit(l) {
				return
			}
		}
	}
}

func (r *reader) Raw(ctx context.Context, op *snapshot.Operator, subtask int) (snapshot.RawState, error) {
	o, err := r.opState(ctx, op, subtask)
	if err != nil {
		return snapshot.RawState{}, err
	}
	return o.Raw, nil
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for o, l := range r.dbs {
		<-l.ready
		if l.d != nil {
			l.d.Close()
		}
		delete(r.dbs, o)
	}
	err := r.tmp.Remove()
	r.tmp = nil
	return err
}
