package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/sstcheck"
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
	op    *metadata.OperatorState
	index int
}

// nativeDB is one rebuilt RocksDB instance, opened read-only with Flink's
// list-state merge operator. Close frees it, then removes the directory.
type nativeDB struct {
	dir     string
	db      *rocksdb.ReadOnlyDB
	layouts []*statefile.Layout
	prefix  int
}

// openNative rebuilds and opens the RocksDB instance of one subtask.
func (r *SnapshotReader) openNative(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, h *metadata.IncrementalKeyedHandle) (*nativeDB, error) {
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
	n := &nativeDB{dir: dir, prefix: 1}
	if op.MaxParallelism > 128 {
		n.prefix = 2
	}
	n.layouts, _ = statefile.LayoutsOf(hdr)
	for _, f := range files {
		if err = r.placeNative(ctx, dir, f); err != nil {
			break
		}
	}
	if err == nil {
		err = n.open()
	}
	if err == nil {
		err = r.checkFamilies(ctx, n, hdr, h)
	}
	if err == nil {
		err = r.checkLiveFiles(n, files)
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
func (r *SnapshotReader) placeNative(ctx context.Context, dir string, f statefile.NativeFile) error {
	name := filepath.Base(filepath.FromSlash(f.LocalName))
	if name == "." || name == ".." || name != f.LocalName {
		return &wire.CorruptError{File: r.res.MetadataFile, Offset: -1, Reason: fmt.Sprintf("native file name %q is not a plain file name", f.LocalName)}
	}
	dst := filepath.Join(dir, name)
	// RocksDB asserts on some damaged blocks: its tables are checked first.
	table := strings.HasSuffix(name, ".sst")
	if f.Location.Inline || f.Location.Offset != 0 {
		data, file, base, err := r.res.Bytes(ctx, f.Handle)
		if err != nil {
			return err
		}
		if table {
			if err := sstcheck.Verify(bytes.NewReader(data), int64(len(data)), file, base); err != nil {
				return err
			}
		}
		return os.WriteFile(dst, data, 0o600)
	}
	src, err := r.res.Open(ctx, f.Handle, f.Location)
	if err != nil {
		return err
	}
	defer src.F.Close()
	if table {
		if err := sstcheck.Verify(io.NewSectionReader(src.F, src.Off, src.Size), src.Size, src.File, src.Off); err != nil {
			return err
		}
	}
	if f.Location.Storage == storage.Local() {
		if err := os.Link(f.Location.Path, dst); err == nil {
			return nil
		}
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.NewSectionReader(src.F, src.Off, src.Size)); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src.File, err)
	}
	return out.Close()
}

func (n *nativeDB) open() error {
	db, err := rocksdb.OpenReadOnly(n.dir, rocksdb.ReadOnlyOptions{FlinkLists: true})
	if err != nil {
		return &wire.CorruptError{File: n.dir, Offset: -1, Reason: "open RocksDB: " + err.Error()}
	}
	n.db = db
	return nil
}

// checkFamilies holds the instance to its meta data: Flink makes a column
// family for every state it registers and none other, so a state without
// one, or one without a state, is damage (a state name changed in the
// meta data would otherwise read as a state with no entries).
func (r *SnapshotReader) checkFamilies(ctx context.Context, n *nativeDB, hdr *statefile.KeyedHeader, h *metadata.IncrementalKeyedHandle) error {
	declared := map[string]bool{}
	for _, m := range hdr.States {
		declared[m.Name] = true
	}
	var problem string
	for _, cf := range n.db.ColumnFamilies() {
		if !declared[cf] && problem == "" {
			problem = fmt.Sprintf("the RocksDB instance has column family %q, which the meta data declares no state for", cf)
		}
		delete(declared, cf)
	}
	if names := slices.Sorted(maps.Keys(declared)); len(names) > 0 {
		problem = fmt.Sprintf("state %q has no column family in the RocksDB instance", names[0])
	}
	if problem == "" {
		return nil
	}
	loc, err := r.res.Locate(ctx, h.Meta)
	if err != nil {
		return err
	}
	return &wire.CorruptError{File: loc.URI(), Offset: loc.Offset, Reason: "meta data: " + problem}
}

// checkLiveFiles holds the instance to the files its handle lists: Flink
// uploads exactly the SSTs live in the instance, so one that no column
// family holds is damage (a MANIFEST whose last edit was lost would
// otherwise leave it, and its entries, out).
func (r *SnapshotReader) checkLiveFiles(n *nativeDB, files []statefile.NativeFile) error {
	live := map[string]bool{}
	for _, cf := range n.db.ColumnFamilies() {
		fs, ok := n.db.LiveFiles(cf)
		if !ok {
			return nil
		}
		for _, f := range fs {
			live[f.Name] = true
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f.LocalName, ".sst") || live[f.LocalName] {
			continue
		}
		for _, m := range files {
			if strings.HasPrefix(m.LocalName, "MANIFEST-") {
				file, off := r.res.MetadataFile, m.Handle.DataOffset
				if !m.Location.Inline {
					file, off = m.Location.URI(), m.Location.Offset
				}
				return &wire.CorruptError{File: file, Offset: off, Reason: fmt.Sprintf("RocksDB %s: no column family holds %s, which _metadata lists as a file of the instance", m.LocalName, f.LocalName)}
			}
		}
		return &wire.CorruptError{File: r.res.MetadataFile, Offset: -1, Reason: fmt.Sprintf("no column family of the RocksDB instance holds %s, which _metadata lists as one of its files", f.LocalName)}
	}
	return nil
}

// Close frees the instance and removes its directory.
func (n *nativeDB) Close() error {
	n.db.Close()
	n.db = nil
	if n.dir == "" {
		return nil
	}
	err := os.RemoveAll(n.dir)
	n.dir = ""
	return err
}

// onlyKey is one key of one state: what a point read reads.
type onlyKey struct {
	state string
	key   []byte
}

// nativeEntries streams the entries of a native RocksDB subtask, key group
// by key group, each state's column family read in key order from the
// first group's prefix; a key that sorts before its group's prefix (too
// short to hold one) is passed over.
//
// With only set, it reads only the entries of one key of one state: a
// seek to the key's prefix in that state's column family (a timer's key
// comes after its timestamp, so a timer state is read whole).
func (r *SnapshotReader) nativeEntries(ctx context.Context, op *metadata.OperatorState, st *metadata.SubtaskState, h *metadata.IncrementalKeyedHandle, kgs keygroup.Range, only *onlyKey) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		n, err := r.openNative(ctx, op, st, h)
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		kr := h.Range
		lo, hi := max(kgs.Start, int(kr.Start)), min(kgs.End, int(kr.End()))
		if lo > hi {
			return
		}
		prefixOf := func(kg int) []byte {
			if n.prefix == 2 {
				return []byte{byte(kg >> 8), byte(kg)}
			}
			return []byte{byte(kg)}
		}
		var upper []byte // past hi, if a prefix can say so
		if hi+1 < 1<<(8*n.prefix) {
			upper = prefixOf(hi + 1)
		}
		type cfIter struct {
			l  *statefile.Layout
			it *rocksdb.Iterator
		}
		var its []cfIter
		defer func() {
			for _, c := range its {
				c.it.Close()
			}
		}()
		for _, l := range n.layouts {
			if !n.db.Has(l.Name) || (only != nil && l.Name != only.state) {
				continue
			}
			lower, to := prefixOf(lo), upper
			if only != nil && l.Kind != snapshot.Timer {
				lower = append(lower, only.key...)
				to = rocksdb.PrefixEnd(lower)
			}
			its = append(its, cfIter{l, n.db.NewIterator(l.Name, lower, to)})
		}
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
			prefix := prefixOf(kg)
			for _, c := range its {
				for ; c.it.Valid(); c.it.Next() {
					key := c.it.Key()
					if !bytes.HasPrefix(key, prefix) {
						if bytes.Compare(key, prefix) < 0 {
							continue
						}
						break
					}
					_, _, err := c.l.CanonicalEntries(kg, bytes.Clone(key[n.prefix:]), bytes.Clone(c.it.Value()), emit)
					if err != nil {
						yield(snapshot.Entry{}, fmt.Errorf("native RocksDB state of subtask %d, key group %d: %w", st.Index, kg, err))
						return
					}
					if stopped {
						return
					}
				}
				if err := c.it.Err(); err != nil {
					yield(snapshot.Entry{}, errors.Join(&wire.CorruptError{File: n.dir, Offset: -1, Reason: "RocksDB iterator"}, err))
					return
				}
			}
		}
	}
}
