package rocksdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/linxGnu/grocksdb"
)

// DefaultColumnFamily is RocksDB's own column family; it never holds state.
const DefaultColumnFamily = "default"

// DB is a writable RocksDB instance, opened through grocksdb, with every
// native object opened with it. Column families are named by the state
// they hold. Close frees them all, column-family handles before the
// database, which Debian's assertion-enabled RocksDB insists on.
type DB struct {
	path    string
	opts    *grocksdb.Options
	ro      *grocksdb.ReadOptions
	wo      *grocksdb.WriteOptions
	rdb     *grocksdb.DB
	handles []*grocksdb.ColumnFamilyHandle
	cfs     map[string]*grocksdb.ColumnFamilyHandle
}

// The SST block layout of every file stateutil writes, through the
// database or its own SST writer (sst.go). Blocks of 16 KiB rather than
// RocksDB's 4 KiB: building and checksumming a quarter as many blocks
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

// Open opens (creating if needed) the database at dir with a column
// family for each of states. Existing column families are opened too.
func Open(dir string, states []string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	names := []string{DefaultColumnFamily}
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
	d := &DB{path: dir, opts: newOptions(true), cfs: map[string]*grocksdb.ColumnFamilyHandle{}}
	cfOpts := make([]*grocksdb.Options, len(names))
	for i := range cfOpts {
		cfOpts[i] = d.opts
	}
	var err error
	d.rdb, d.handles, err = grocksdb.OpenDbColumnFamilies(d.opts, dir, names, cfOpts)
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

func appendNew(names []string, more ...string) []string {
	for _, n := range more {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Path is the database's directory.
func (d *DB) Path() string { return d.path }

// Close frees handles, the database and the options, in that order.
func (d *DB) Close() {
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

// ColumnFamilies lists the column families that can hold state: all but
// RocksDB's own "default".
func (d *DB) ColumnFamilies() []string { return stateFamilies(d.cfs) }

func stateFamilies[H any](cfs map[string]H) []string {
	var out []string
	for n := range cfs {
		if n != DefaultColumnFamily {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Has reports whether the column family exists.
func (d *DB) Has(cf string) bool {
	_, ok := d.cfs[cf]
	return ok
}

// handle returns a column family's handle, creating the column family if
// it does not exist yet.
func (d *DB) handle(name string) (*grocksdb.ColumnFamilyHandle, error) {
	if h, ok := d.cfs[name]; ok {
		return h, nil
	}
	h, err := d.rdb.CreateColumnFamily(d.opts, name)
	if err != nil {
		return nil, fmt.Errorf("rocksdb %q: create column family %q: %w", d.path, name, err)
	}
	d.handles = append(d.handles, h)
	d.cfs[name] = h
	return h, nil
}

// DropColumnFamily drops a column family and frees its handle.
func (d *DB) DropColumnFamily(name string) error {
	h, ok := d.cfs[name]
	if !ok {
		return nil
	}
	if err := d.rdb.DropColumnFamily(h); err != nil {
		return fmt.Errorf("rocksdb %q: drop column family %q: %w", d.path, name, err)
	}
	d.handles = slices.DeleteFunc(d.handles, func(x *grocksdb.ColumnFamilyHandle) bool { return x == h })
	delete(d.cfs, name)
	h.Destroy()
	return nil
}

// Get returns a copy of the value at key in cf, and false when there is
// none (a column family that does not exist holds nothing).
func (d *DB) Get(cf string, key []byte) ([]byte, bool, error) {
	h, ok := d.cfs[cf]
	if !ok {
		return nil, false, nil
	}
	s, err := d.rdb.GetCF(d.ro, h, key)
	if err != nil {
		return nil, false, err
	}
	defer s.Free()
	if !s.Exists() {
		return nil, false, nil
	}
	return slices.Clone(s.Data()), true, nil
}

// Put sets key to value in cf, creating cf if needed.
func (d *DB) Put(cf string, key, value []byte) error {
	h, err := d.handle(cf)
	if err != nil {
		return err
	}
	return d.rdb.PutCF(d.wo, h, key, value)
}

// Delete removes key from cf.
func (d *DB) Delete(cf string, key []byte) error {
	h, err := d.handle(cf)
	if err != nil {
		return err
	}
	return d.rdb.DeleteCF(d.wo, h, key)
}

// DeleteOutside deletes cf's keys before lower and, unless upper is nil,
// from upper on; it reports whether there were any.
func (d *DB) DeleteOutside(cf string, lower, upper []byte) (bool, error) {
	h, ok := d.cfs[cf]
	if !ok {
		return false, nil
	}
	it := d.NewIterator(cf, nil, nil)
	defer it.Close()
	if !it.Valid() {
		return false, it.Err()
	}
	first := slices.Clone(it.Key())
	it.g.SeekToLast()
	if !it.Valid() {
		return false, it.Err()
	}
	// Past the last key: DeleteRange's end is exclusive.
	end := append(slices.Clone(it.Key()), 0)
	deleted := false
	if bytes.Compare(first, lower) < 0 {
		if err := d.rdb.DeleteRangeCF(d.wo, h, first, lower); err != nil {
			return false, err
		}
		deleted = true
	}
	if upper != nil && bytes.Compare(end, upper) > 0 {
		if err := d.rdb.DeleteRangeCF(d.wo, h, upper, end); err != nil {
			return false, err
		}
		deleted = true
	}
	return deleted, nil
}

// Flush writes every memtable to SST files and waits.
func (d *DB) Flush() error {
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

// Checkpoint hard-links a consistent copy of the database into dir, which
// must not exist yet (its parent is created).
func (d *DB) Checkpoint(dir string) error {
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

// Ingest moves finished SST files into a column family.
func (d *DB) Ingest(cf string, files []string) error {
	return d.ingest(cf, files, true)
}

// IngestUnchanged moves SST files other snapshots share (hard links) into
// a column family, failing rather than writing a sequence number into
// them.
func (d *DB) IngestUnchanged(cf string, files []string) error {
	return d.ingest(cf, files, false)
}

func (d *DB) ingest(cf string, files []string, mayWrite bool) error {
	h, err := d.handle(cf)
	if err != nil {
		return err
	}
	if err := syncFiles(files); err != nil {
		return fmt.Errorf("rocksdb %q: ingest: %w", d.path, err)
	}
	io := grocksdb.NewDefaultIngestExternalFileOptions()
	defer io.Destroy()
	io.SetMoveFiles(true)
	io.SetAllowGlobalSeqNo(mayWrite)
	if err := d.rdb.IngestExternalFileCF(h, files, io); err != nil {
		return fmt.Errorf("rocksdb %q: ingest %v: %w", d.path, files, err)
	}
	return nil
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
			errs[i] = SyncPath(path)
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

// SyncPath makes a local file, or the entries of a local directory,
// durable.
func SyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Compact fully compacts every column family.
func (d *DB) Compact() {
	for _, h := range d.handles {
		d.rdb.CompactRangeCF(h, grocksdb.Range{})
	}
}

// Rewrite fully compacts the column families named, rewriting their
// bottommost files too, but not the ones this compaction has just
// written: what DeleteOutside dropped leaves the files.
func (d *DB) Rewrite(cfs ...string) {
	o := grocksdb.NewCompactRangeOptions()
	defer o.Destroy()
	o.SetBottommostLevelCompaction(grocksdb.KForceOptimized)
	for _, cf := range cfs {
		if h, ok := d.cfs[cf]; ok {
			d.rdb.CompactRangeCFOpt(h, grocksdb.Range{}, o)
		}
	}
}

// NewIterator iterates cf over [lower, upper); a nil bound is open. A
// scan: it does not fill the block cache.
func (d *DB) NewIterator(cf string, lower, upper []byte) *Iterator {
	return d.newIterator(cf, lower, upper, false)
}

// NewPrefixIterator iterates cf over the keys that start with prefix.
// Unlike a scan it fills the block cache: the same keys are read again
// soon.
func (d *DB) NewPrefixIterator(cf string, prefix []byte) *Iterator {
	return d.newIterator(cf, prefix, PrefixEnd(prefix), true)
}

func (d *DB) newIterator(cf string, lower, upper []byte, fillCache bool) *Iterator {
	h, ok := d.cfs[cf]
	if !ok {
		return &Iterator{}
	}
	ro := grocksdb.NewDefaultReadOptions()
	ro.SetVerifyChecksums(true)
	ro.SetFillCache(fillCache)
	if lower != nil {
		ro.SetIterateLowerBound(lower)
	}
	if upper != nil {
		ro.SetIterateUpperBound(upper)
	}
	it := d.rdb.NewIteratorCF(ro, h)
	if lower != nil {
		it.Seek(lower)
	} else {
		it.SeekToFirst()
	}
	return &Iterator{g: it, ro: ro}
}

// PrefixEnd is the first key after every key starting with prefix, or nil
// when there is none (the prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
