package rocksdb

// #include <stdlib.h>
// #include "native.h"
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"unsafe"
)

// ReadOnlyDB is a database opened read-only, with all its column
// families, by the C++ shim rather than through grocksdb, so that the
// shim makes and drives its iterators (see Iterator). Close frees the
// column-family handles before the database.
type ReadOnlyDB struct {
	path   string
	d      *C.su_db
	cfs    map[string]C.int
	verify bool
}

// ReadOnlyOptions choose how a read-only database is read.
type ReadOnlyOptions struct {
	// Verified says every file's checksum was checked just before the
	// open, so iterators need not verify each block's again.
	Verified bool
	// FlinkLists merges list-state operands as Flink's RocksDB backend
	// does: joined by ','.
	FlinkLists bool
}

// OpenReadOnly opens the database at dir read-only.
func OpenReadOnly(dir string, o ReadOnlyOptions) (*ReadOnlyDB, error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var cerr *C.char
	d := C.su_db_open_read_only(cdir, cBool(o.FlinkLists), &cerr)
	if d == nil {
		return nil, fmt.Errorf("rocksdb %q: %w", dir, takeError(cerr))
	}
	db := &ReadOnlyDB{path: dir, d: d, cfs: map[string]C.int{}, verify: !o.Verified}
	for i := range C.su_db_cf_count(d) {
		var n C.size_t
		p := C.su_db_cf_name(d, i, &n)
		db.cfs[C.GoStringN(p, C.int(n))] = i
	}
	return db, nil
}

// Path is the database's directory.
func (d *ReadOnlyDB) Path() string { return d.path }

// Close frees the database.
func (d *ReadOnlyDB) Close() {
	if d == nil || d.d == nil {
		return
	}
	C.su_db_close(d.d)
	d.d, d.cfs = nil, nil
}

// ColumnFamilies lists the column families that can hold state: all but
// RocksDB's own "default".
func (d *ReadOnlyDB) ColumnFamilies() []string {
	return stateFamilies(d.cfs)
}

// Has reports whether the column family exists.
func (d *ReadOnlyDB) Has(cf string) bool {
	_, ok := d.cfs[cf]
	return ok
}

// NewIterator iterates cf over [lower, upper); a nil bound is open. It
// does not fill the block cache.
func (d *ReadOnlyDB) NewIterator(cf string, lower, upper []byte) *Iterator {
	i, ok := d.cfs[cf]
	if !ok {
		return &Iterator{}
	}
	n := C.su_iter_new(d.d, i, bytesPtr(lower), C.size_t(len(lower)), cBool(lower != nil),
		bytesPtr(upper), C.size_t(len(upper)), cBool(upper != nil), cBool(d.verify))
	return newNativeIterator(n)
}

// LiveFile is an SST file of a column family and the keys it spans.
type LiveFile struct {
	Name              string // its base name
	Smallest, Largest []byte
}

// LiveFiles lists the SST files of column family cf by smallest key; ok
// is false when the memtables hold entries too, so the files are not all.
func (d *ReadOnlyDB) LiveFiles(cf string) (files []LiveFile, ok bool) {
	i, exists := d.cfs[cf]
	if !exists {
		return nil, true
	}
	var out *C.char
	var n C.size_t
	count := C.su_db_live_files(d.d, i, &out, &n)
	if count < 0 {
		return nil, false
	}
	buf := C.GoBytes(unsafe.Pointer(out), C.int(n))
	C.free(unsafe.Pointer(out))
	part := func() []byte {
		l := binary.NativeEndian.Uint32(buf)
		p := buf[4 : 4+l : 4+l]
		buf = buf[4+l:]
		return p
	}
	for range count {
		name, smallest, largest := part(), part(), part()
		files = append(files, LiveFile{Name: filepath.Base(string(name)), Smallest: smallest, Largest: largest})
	}
	slices.SortFunc(files, func(a, b LiveFile) int { return bytes.Compare(a.Smallest, b.Smallest) })
	return files, true
}

// Range is the keys from Start to before Limit.
type Range struct{ Start, Limit []byte }

// ApproximateSizes estimates the bytes column family cf holds in each
// range, from its files' indexes.
func (d *ReadOnlyDB) ApproximateSizes(cf string, ranges []Range) ([]uint64, error) {
	sizes := make([]uint64, len(ranges))
	i, ok := d.cfs[cf]
	if !ok || len(ranges) == 0 {
		return sizes, nil
	}
	var keys []byte
	offs := make([]C.size_t, 0, 2*len(ranges)+1)
	for _, r := range ranges {
		offs = append(offs, C.size_t(len(keys)))
		keys = append(keys, r.Start...)
		offs = append(offs, C.size_t(len(keys)))
		keys = append(keys, r.Limit...)
	}
	offs = append(offs, C.size_t(len(keys)))
	var cerr *C.char
	if C.su_db_approximate_sizes(d.d, i, bytesPtr(keys), &offs[0], C.int(len(ranges)), (*C.uint64_t)(unsafe.Pointer(&sizes[0])), &cerr) != 0 {
		return nil, fmt.Errorf("rocksdb %q: approximate sizes of %q: %w", d.path, cf, takeError(cerr))
	}
	return sizes, nil
}
