package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/linxGnu/grocksdb"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Native RocksDB snapshots (incremental checkpoints, NATIVE savepoints) are
// a RocksDB instance split into files: the subtask's shared SST files and
// its private MANIFEST, CURRENT and OPTIONS files. They are put back
// together in a temporary directory, opened read-only, and read with
// Flink's key layout: one column family per state, keys prefixed by their
// key group.

type nativeKey struct {
	op    *OperatorState
	index int
}

// nativeDB is one rebuilt, read-only RocksDB instance. Close frees the
// column-family handles before the database (Debian's assertion-enabled
// RocksDB insists), then the read options, then removes the directory.
type nativeDB struct {
	dir     string
	db      *grocksdb.DB
	opts    *grocksdb.Options
	ro      *grocksdb.ReadOptions
	handles []*grocksdb.ColumnFamilyHandle
	cfs     map[string]*grocksdb.ColumnFamilyHandle
	layouts []*layout
	prefix  int
}

// listAppend is Flink's list-state merge operator: operands joined by ','.
type listAppend struct{}

// Name is the merge operator name Flink configures.
func (listAppend) Name() string { return "stringappendtest" }

// FullMerge joins the existing value and the operands with ','.
func (listAppend) FullMerge(_, existing []byte, operands [][]byte) ([]byte, bool) {
	parts := operands
	if existing != nil {
		parts = append([][]byte{existing}, operands...)
	}
	return bytes.Join(parts, []byte{','}), true
}

// openNative rebuilds and opens the RocksDB instance of one subtask.
func (r *SnapshotReader) openNative(ctx context.Context, op *OperatorState, st *SubtaskState, h *IncrementalKeyedHandle) (*nativeDB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := nativeKey{op, st.Index}
	if db := r.natives[k]; db != nil {
		return db, nil
	}
	hdr, err := r.res.ReadNativeMeta(ctx, h)
	if err != nil {
		return nil, err
	}
	files, err := r.res.NativeFiles(ctx, h)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(r.tempDir, "stateutil-flink-rocksdb-")
	if err != nil {
		return nil, err
	}
	n := &nativeDB{dir: dir, cfs: map[string]*grocksdb.ColumnFamilyHandle{}, prefix: 1}
	if op.MaxParallelism > 128 {
		n.prefix = 2
	}
	n.layouts, _ = layoutsOf(hdr)
	for _, f := range files {
		if err = r.placeNative(ctx, dir, f); err != nil {
			break
		}
	}
	if err == nil {
		err = n.open()
	}
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("native RocksDB state of subtask %d: %w", st.Index, err)
	}
	r.natives[k] = n
	return n, nil
}

// placeNative puts one file of the instance into dir: a hard link when
// possible, else a copy (inline files are written out).
func (r *SnapshotReader) placeNative(ctx context.Context, dir string, f NativeFile) error {
	name := filepath.Base(filepath.FromSlash(f.LocalName))
	if name == "." || name == ".." || name != f.LocalName {
		return &CorruptError{File: r.res.MetadataFile, Offset: -1, Reason: fmt.Sprintf("native file name %q is not a plain file name", f.LocalName)}
	}
	dst := filepath.Join(dir, name)
	if f.Location.Inline || f.Location.Offset != 0 {
		data, _, _, err := r.res.Bytes(ctx, f.Handle)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	}
	src, err := r.res.open(ctx, f.Handle, f.Location)
	if err != nil {
		return err
	}
	defer src.f.Close()
	if f.Location.Storage == storage.Local() {
		if err := os.Link(f.Location.Path, dst); err == nil {
			return nil
		}
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.NewSectionReader(src.f, src.off, src.size)); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src.file, err)
	}
	return out.Close()
}

// sharedOptions are the options of every instance opened here, created once
// and never destroyed: grocksdb v1.7.15's Options.Destroy frees a Go merge
// operator that the options' own shared pointer frees too (a double free),
// so options holding one must live as long as the process. RocksDB copies
// options when it opens a database, so sharing them is safe.
var sharedOptions = sync.OnceValue(func() *grocksdb.Options {
	o := grocksdb.NewDefaultOptions()
	o.SetInfoLogLevel(grocksdb.InfoInfoLogLevel)
	o.SetKeepLogFileNum(1)
	o.SetMergeOperator(listAppend{})
	return o
})

func (n *nativeDB) open() error {
	n.opts = sharedOptions()
	names, err := grocksdb.ListColumnFamilies(n.opts, n.dir)
	if err != nil {
		return &CorruptError{File: n.dir, Offset: -1, Reason: "RocksDB column families: " + err.Error()}
	}
	cfOpts := make([]*grocksdb.Options, len(names))
	for i := range cfOpts {
		cfOpts[i] = n.opts
	}
	n.db, n.handles, err = grocksdb.OpenDbForReadOnlyColumnFamilies(n.opts, n.dir, names, cfOpts, false)
	if err != nil {
		return &CorruptError{File: n.dir, Offset: -1, Reason: "open RocksDB: " + err.Error()}
	}
	for i, h := range n.handles {
		n.cfs[names[i]] = h
	}
	n.ro = grocksdb.NewDefaultReadOptions()
	n.ro.SetVerifyChecksums(true)
	return nil
}

// Close frees the instance and removes its directory.
func (n *nativeDB) Close() error {
	for _, h := range n.handles {
		h.Destroy()
	}
	n.handles, n.cfs = nil, nil
	if n.db != nil {
		n.db.Close()
		n.db = nil
	}
	if n.ro != nil {
		n.ro.Destroy()
		n.ro = nil
	}
	n.opts = nil // shared, see sharedOptions
	if n.dir == "" {
		return nil
	}
	err := os.RemoveAll(n.dir)
	n.dir = ""
	return err
}

// nativeEntries streams the entries of a native RocksDB subtask, key group
// by key group, each state's column family seeked to the group's prefix.
func (r *SnapshotReader) nativeEntries(ctx context.Context, op *OperatorState, st *SubtaskState, h *IncrementalKeyedHandle, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		n, err := r.openNative(ctx, op, st, h)
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		type cfIter struct {
			l  *layout
			it *grocksdb.Iterator
		}
		var its []cfIter
		defer func() {
			for _, c := range its {
				c.it.Close()
			}
		}()
		for _, l := range n.layouts {
			if cf := n.cfs[l.name]; cf != nil {
				its = append(its, cfIter{l, n.db.NewIteratorCF(n.ro, cf)})
			}
		}
		kr := h.Range
		lo, hi := max(kgs.Start, int(kr.Start)), min(kgs.End, int(kr.End()))
		stopped := false
		emit := func(e snapshot.Entry) bool {
			if !yield(e, nil) {
				stopped = true
			}
			return !stopped
		}
		for kg := lo; kg <= hi; kg++ {
			if err := ctx.Err(); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			prefix := []byte{byte(kg)}
			if n.prefix == 2 {
				prefix = []byte{byte(kg >> 8), byte(kg)}
			}
			for _, c := range its {
				for c.it.Seek(prefix); c.it.Valid(); c.it.Next() {
					k, v := c.it.Key(), c.it.Value()
					key, val := k.Data(), v.Data()
					if !bytes.HasPrefix(key, prefix) {
						k.Free()
						v.Free()
						break
					}
					_, _, err := c.l.canonicalEntries(kg, bytes.Clone(key[n.prefix:]), bytes.Clone(val), emit)
					k.Free()
					v.Free()
					if err != nil {
						yield(snapshot.Entry{}, fmt.Errorf("native RocksDB state of subtask %d, key group %d: %w", st.Index, kg, err))
						return
					}
					if stopped {
						return
					}
				}
				if err := c.it.Err(); err != nil {
					yield(snapshot.Entry{}, errors.Join(&CorruptError{File: n.dir, Offset: -1, Reason: "RocksDB iterator"}, err))
					return
				}
			}
		}
	}
}
