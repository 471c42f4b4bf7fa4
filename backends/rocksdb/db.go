package rocksdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/linxGnu/grocksdb"
)

// defaultCF is RocksDB's own column family; it never holds state.
const defaultCF = "default"

// db owns one RocksDB instance and every native object opened with it.
// Close frees them all, column-family handles before the database, which
// Debian's assertion-enabled RocksDB insists on.
type db struct {
	path     string
	readOnly bool
	opts     *grocksdb.Options
	ro       *grocksdb.ReadOptions
	wo       *grocksdb.WriteOptions
	rdb      *grocksdb.DB
	handles  []*grocksdb.ColumnFamilyHandle
	cfs      map[string]*grocksdb.ColumnFamilyHandle
	// checked says every file's CRC32C was verified just before the
	// database was opened read-only, so reads need not verify each
	// block's checksum again.
	checked bool
}

// The SST block layout of every file stateutil writes, through the
// database or its own SST writer (native.go). Blocks of 16 KiB rather
// than RocksDB's 4 KiB: building and checksumming a quarter as many blocks
// makes writing markedly cheaper, and a point lookup still reads little.
// xxHash64 block checksums rather than CRC32C: Debian's portable RocksDB
// computes CRC32C without the CPU's instruction, xxHash64 is fast on any
// CPU, and every RocksDB since 5.x (FRocksDB included) reads it.
const (
	blockSize     = 16 << 10
	blockChecksum = 3 // rocksdb::kxxHash64
)

// newOptions is the one place database options are chosen.
func newOptions(create bool) *grocksdb.Options {
	o := grocksdb.NewDefaultOptions()
	t := grocksdb.NewDefaultBlockBasedTableOptions()
	t.SetBlockSize(blockSize)
	t.SetChecksum(blockChecksum)
	o.SetBlockBasedTableFactory(t) // copies t
	t.Destroy()
	o.SetInfoLogLevel(grocksdb.InfoInfoLogLevel)
	o.SetKeepLogFileNum(2)
	o.SetMaxOpenFiles(256)
	o.SetCreateIfMissing(create)
	o.SetCreateIfMissingColumnFamilies(create)
	return o
}

// openDB opens (creating if needed) the database at dir with a column
// family for each of states. Existing column families are opened too.
func openDB(dir string, states []string) (*db, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	names := []string{defaultCF}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
		probe := newOptions(false)
		existing, err := grocksdb.ListColumnFamilies(probe, dir)
		probe.Destroy()
		if err != nil {
			return nil, fmt.Errorf("rocksdb %q: list column families: %w", dir, err)
		}
		names = appendNew(names, existing...)
	}
	names = appendNew(names, states...)
	return openNative(dir, names, false)
}

// openReadOnly opens the database at dir read-only with all its column
// families; checked as in db.checked.
func openReadOnly(dir string, checked bool) (*db, error) {
	probe := newOptions(false)
	names, err := grocksdb.ListColumnFamilies(probe, dir)
	probe.Destroy()
	if err != nil {
		return nil, fmt.Errorf("rocksdb %q: list column families: %w", dir, err)
	}
	d, err := openNative(dir, names, true)
	if err == nil && checked {
		d.checked = true
		d.ro.SetVerifyChecksums(false)
	}
	return d, err
}

func appendNew(names []string, more ...string) []string {
	for _, n := range more {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func openNative(dir string, names []string, readOnly bool) (*db, error) {
	d := &db{path: dir, readOnly: readOnly, opts: newOptions(!readOnly), cfs: map[string]*grocksdb.ColumnFamilyHandle{}}
	cfOpts := make([]*grocksdb.Options, len(names))
	for i := range cfOpts {
		cfOpts[i] = d.opts
	}
	var err error
	if readOnly {
		d.rdb, d.handles, err = grocksdb.OpenDbForReadOnlyColumnFamilies(d.opts, dir, names, cfOpts, false)
	} else {
		d.rdb, d.handles, err = grocksdb.OpenDbColumnFamilies(d.opts, dir, names, cfOpts)
	}
	if err != nil {
		d.opts.Destroy()
		return nil, fmt.Errorf("rocksdb %q: open: %w", dir, err)
	}
	for i, h := range d.handles {
		d.cfs[names[i]] = h
	}
	d.ro = grocksdb.NewDefaultReadOptions()
	d.ro.SetVerifyChecksums(true)
	d.wo = grocksdb.NewDefaultWriteOptions()
	// Like Flink: durability comes from checkpoints, not the WAL.
	d.wo.DisableWAL(true)
	return d, nil
}

// Close frees handles, the database and the options, in that order.
func (d *db) Close() {
	if d == nil || d.rdb == nil {
		return
	}
	for _, h := range d.handles {
		h.Destroy()
	}
	d.handles, d.cfs = nil, nil
	d.rdb.Close()
	d.rdb = nil
	d.ro.Destroy()
	d.wo.Destroy()
	d.opts.Destroy()
}

// columnFamilies lists the state column families (without "default").
func (d *db) columnFamilies() []string {
	var out []string
	for n := range d.cfs {
		if n != defaultCF {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// cf returns the handle of a state's column family, creating it if the
// database is writable.
func (d *db) cf(name string) (*grocksdb.ColumnFamilyHandle, error) {
	if h, ok := d.cfs[name]; ok {
		return h, nil
	}
	if d.readOnly {
		return nil, nil
	}
	h, err := d.rdb.CreateColumnFamily(d.opts, name)
	if err != nil {
		return nil, fmt.Errorf("rocksdb %q: create column family %q: %w", d.path, name, err)
	}
	d.handles = append(d.handles, h)
	d.cfs[name] = h
	return h, nil
}

// get returns a copy of the value at key, or nil if there is none.
func (d *db) get(cf *grocksdb.ColumnFamilyHandle, key []byte) ([]byte, bool, error) {
	s, err := d.rdb.GetCF(d.ro, cf, key)
	if err != nil {
		return nil, false, err
	}
	defer s.Free()
	if !s.Exists() {
		return nil, false, nil
	}
	return slices.Clone(s.Data()), true, nil
}

func (d *db) put(cf *grocksdb.ColumnFamilyHandle, key, value []byte) error {
	return d.rdb.PutCF(d.wo, cf, key, value)
}

func (d *db) delete(cf *grocksdb.ColumnFamilyHandle, key []byte) error {
	return d.rdb.DeleteCF(d.wo, cf, key)
}

// flush writes every memtable to SST files and waits.
func (d *db) flush() error {
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	fo.SetWait(true)
	for _, h := range d.handles {
		if err := d.rdb.FlushCF(h, fo); err != nil {
			return fmt.Errorf("rocksdb %q: flush: %w", d.path, err)
		}
	}
	return nil
}

// checkpoint hard-links a consistent copy of the database into dir, which
// must not exist yet (its parent is created).
func (d *db) checkpoint(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	cp, err := d.rdb.NewCheckpoint()
	if err != nil {
		return fmt.Errorf("rocksdb %q: checkpoint: %w", d.path, err)
	}
	defer cp.Destroy()
	if err := cp.CreateCheckpoint(dir, 0); err != nil {
		return fmt.Errorf("rocksdb %q: checkpoint into %q: %w", d.path, dir, err)
	}
	return nil
}

// ingest moves finished SST files into a column family.
func (d *db) ingest(cf *grocksdb.ColumnFamilyHandle, files []string) error {
	return d.ingestFiles(cf, files, true)
}

// ingestUnchanged moves SST files other snapshots share (hard links) into
// a column family, failing rather than writing a sequence number into
// them.
func (d *db) ingestUnchanged(cf *grocksdb.ColumnFamilyHandle, files []string) error {
	return d.ingestFiles(cf, files, false)
}

func (d *db) ingestFiles(cf *grocksdb.ColumnFamilyHandle, files []string, mayWrite bool) error {
	if err := syncFiles(files); err != nil {
		return fmt.Errorf("rocksdb %q: ingest: %w", d.path, err)
	}
	io := grocksdb.NewDefaultIngestExternalFileOptions()
	defer io.Destroy()
	io.SetMoveFiles(true)
	io.SetAllowGlobalSeqNo(mayWrite)
	if err := d.rdb.IngestExternalFileCF(cf, files, io); err != nil {
		return fmt.Errorf("rocksdb %q: ingest %v: %w", d.path, files, err)
	}
	return nil
}

// keyGroupSizes estimates the bytes column family c.state holds in each
// key group from first to last, from its files' indexes (RocksDB's
// approximate sizes).
func (d *db) keyGroupSizes(c *codec, first, last int) ([]uint64, error) {
	h, err := d.cf(c.state)
	if err != nil || h == nil {
		return make([]uint64, last-first+1), err
	}
	ranges := make([]grocksdb.Range, last-first+1)
	for kg := first; kg <= last; kg++ {
		ranges[kg-first] = grocksdb.Range{Start: c.kgPrefix(kg), Limit: c.kgPrefix(kg + 1)}
	}
	sizes, err := d.rdb.GetApproximateSizesCF(h, ranges)
	if err != nil {
		return nil, fmt.Errorf("rocksdb %q: sizes of state %q: %w", d.path, c.state, err)
	}
	return sizes, nil
}

// syncFiles makes files durable, all at once. Ingestion syncs each file it
// links, one after another, and each sync of a new file waits for its own
// commit of the file system's journal; synced together first, they share
// commits, and ingestion's syncs find nothing left to do.
func syncFiles(files []string) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, path := range files {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = syncPath(path)
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

// liveFile is an SST file of a column family and the keys it spans.
type liveFile struct {
	name              string // its base name
	smallest, largest []byte
}

// files lists the SST files of column family name by smallest key; ok is
// false when the memtables hold entries too, so the files are not all.
func (d *db) files(name string) (files []liveFile, ok bool) {
	h := d.cfs[name]
	if h == nil {
		return nil, true
	}
	for _, p := range []string{"rocksdb.num-entries-active-mem-table", "rocksdb.num-entries-imm-mem-tables"} {
		if d.rdb.GetPropertyCF(p, h) != "0" {
			return nil, false
		}
	}
	for _, f := range d.rdb.GetLiveFilesMetaData() {
		if f.ColumnFamilyName == name {
			files = append(files, liveFile{name: filepath.Base(f.Name), smallest: f.SmallestKey, largest: f.LargestKey})
		}
	}
	slices.SortFunc(files, func(a, b liveFile) int { return bytes.Compare(a.smallest, b.smallest) })
	return files, true
}

// compact fully compacts every column family.
func (d *db) compact() {
	for _, h := range d.handles {
		d.rdb.CompactRangeCF(h, grocksdb.Range{})
	}
}

// iter is a bounded iterator that owns its read options.
type iter struct {
	ro *grocksdb.ReadOptions
	it *grocksdb.Iterator
}

// newIter iterates cf over [lower, upper); a nil bound is open.
func (d *db) newIter(cf *grocksdb.ColumnFamilyHandle, lower, upper []byte) *iter {
	ro := grocksdb.NewDefaultReadOptions()
	ro.SetVerifyChecksums(!d.checked)
	ro.SetFillCache(false)
	if lower != nil {
		ro.SetIterateLowerBound(lower)
	}
	if upper != nil {
		ro.SetIterateUpperBound(upper)
	}
	it := d.rdb.NewIteratorCF(ro, cf)
	if lower != nil {
		it.Seek(lower)
	} else {
		it.SeekToFirst()
	}
	return &iter{ro: ro, it: it}
}

func (i *iter) valid() bool   { return i.it.Valid() }
func (i *iter) key() []byte   { return i.it.Key().Data() }
func (i *iter) value() []byte { return i.it.Value().Data() }
func (i *iter) next()         { i.it.Next() }
func (i *iter) err() error    { return i.it.Err() }

// Close frees the iterator, then its read options.
func (i *iter) Close() {
	if i.it != nil {
		i.it.Close()
		i.ro.Destroy()
		i.it, i.ro = nil, nil
	}
}

var errClosed = errors.New("rocksdb: instance is closed")
