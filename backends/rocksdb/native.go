package rocksdb

// #cgo CXXFLAGS: -std=c++17 -O2
// #cgo LDFLAGS: -lrocksdb -lstdc++
// #include <stdlib.h>
// #include "native.h"
import "C"

import (
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// LibraryVersion is the version of the RocksDB library stateutil was
// built against, as major.minor.patch.
func LibraryVersion() string {
	var major, minor, patch C.int
	C.su_rocksdb_version(&major, &minor, &patch)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// sstWriter writes one external SST file (native.h) and owns it.
type sstWriter struct {
	w    *C.su_sst
	path string
	n    int
	// bytes counts the keys and values added.
	bytes int64
	// size and crc describe the finished file.
	size int64
	crc  uint32
}

// newSSTWriter starts an SST file at path, its blocks LZ4-compressed when
// lz4 is set. LZ4 rather than RocksDB's default Snappy: Flink's RocksDB
// (FRocksDB) reads it, and on incompressible blocks it gives up faster.
func newSSTWriter(path string, lz4 bool) (*sstWriter, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	w := C.su_sst_open(cpath, cBool(lz4), blockSize, blockChecksum, &cerr)
	if w == nil {
		return nil, fmt.Errorf("rocksdb: open SST writer %q: %w", path, takeError(cerr))
	}
	return &sstWriter{w: w, path: path}, nil
}

func (s *sstWriter) add(key, value []byte) error {
	var cerr *C.char
	if C.su_sst_put(s.w, bytesPtr(key), C.size_t(len(key)), bytesPtr(value), C.size_t(len(value)), &cerr) != 0 {
		return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
	}
	s.n++
	s.bytes += int64(len(key) + len(value))
	return nil
}

// addRecords adds the records of buf, in increasing key order, in one call
// into C: a call per pair would cost as much as RocksDB's own work.
func (s *sstWriter) addRecords(buf []byte, recs []sortRec) error {
	if len(recs) == 0 {
		return nil
	}
	var cerr *C.char
	if C.su_sst_put_records(s.w, bytesPtr(buf), (*C.intptr_t)(unsafe.Pointer(&recs[0])), C.size_t(len(recs)), &cerr) != 0 {
		return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
	}
	s.n += len(recs)
	for _, r := range recs {
		s.bytes += int64(r.klen + r.vlen)
	}
	return nil
}

// finish completes the file; it reports false when nothing was added,
// leaving an unfinished file at path for the caller to remove.
func (s *sstWriter) finish() (bool, error) {
	if s.n == 0 {
		return false, nil
	}
	var size C.uint64_t
	var crc C.uint32_t
	var cerr *C.char
	if C.su_sst_finish(s.w, &size, &crc, &cerr) != 0 {
		return false, fmt.Errorf("rocksdb: finish SST %q: %w", s.path, takeError(cerr))
	}
	s.size, s.crc = int64(size), uint32(crc)
	return true, nil
}

// Close frees the writer.
func (s *sstWriter) Close() {
	if s.w != nil {
		C.su_sst_destroy(s.w)
		s.w = nil
	}
}

// copyPairs moves every pair it yields into the file, a batch of pairs per
// call into C, so that a pair costs no cgo transitions: on a copy, those
// are as expensive as RocksDB's own work.
func (s *sstWriter) copyPairs(ctx context.Context, it *iter) error {
	const batch = 4096
	cit := (*C.rocksdb_iterator_t)(cPointer(it.it))
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var cerr *C.char
		n := C.su_sst_copy(s.w, cit, batch, &cerr)
		if n < 0 {
			return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
		}
		s.n += int(n)
		if n < batch {
			return nil
		}
	}
}

// linkable reports whether the SST file at path can be ingested into
// another database unchanged (see native.h).
func linkable(path string) (bool, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	switch C.su_sst_linkable(cpath, &cerr) {
	case 1:
		return true, nil
	case 0:
		return false, nil
	}
	return false, fmt.Errorf("rocksdb: SST %q: %w", path, takeError(cerr))
}

// batchIter reads an iterator's pairs a batch at a time, one cgo call per
// batch rather than four per pair. key and value are valid until next.
type batchIter struct {
	*iter
	buf      []byte // pairs as su_iter_fill lays them out
	pos, end int
	k, v     []byte
	ok       bool
}

// batchBytes is the usual batch; a pair larger than that gets a batch of
// its own.
const batchBytes = 256 << 10

// pairs iterates the pairs of it, in batches where grocksdb's iterator is
// what the batching assumes (nativeIterator).
func pairs(it *iter) pairIter {
	if !nativeIterator {
		return it
	}
	b := &batchIter{iter: it, buf: make([]byte, batchBytes)}
	b.next()
	return b
}

// pairIter is an iterator's pairs, one at a time.
type pairIter interface {
	valid() bool
	key() []byte
	value() []byte
	next()
	err() error
	Close()
}

func (b *batchIter) valid() bool   { return b.ok }
func (b *batchIter) key() []byte   { return b.k }
func (b *batchIter) value() []byte { return b.v }

func (b *batchIter) next() {
	if b.pos == b.end && !b.fill() {
		b.ok, b.k, b.v = false, nil, nil
		return
	}
	kl := int(binary.NativeEndian.Uint32(b.buf[b.pos:]))
	vl := int(binary.NativeEndian.Uint32(b.buf[b.pos+4:]))
	p := b.pos + 8
	b.k, b.v = b.buf[p:p+kl:p+kl], b.buf[p+kl:p+kl+vl:p+kl+vl]
	b.pos, b.ok = p+kl+vl, true
}

// fill reads the next batch; false when the iterator is exhausted (or
// failed: err tells).
func (b *batchIter) fill() bool {
	cit := (*C.rocksdb_iterator_t)(cPointer(b.it))
	if len(b.buf) > batchBytes { // grown for a large pair, now used
		b.buf = make([]byte, batchBytes)
	}
	for {
		var need C.size_t
		n := C.su_iter_fill(cit, bytesPtr(b.buf), C.size_t(len(b.buf)), &need)
		if need > 0 {
			b.buf = make([]byte, int(need))
			continue
		}
		b.pos, b.end = 0, int(n)
		return n > 0
	}
}

// fileCRC32C extends crc over p as the SST writer's file checksum does,
// with the CPU's CRC32C instruction if it has one, unless portable.
func fileCRC32C(crc uint32, p []byte, portable bool) uint32 {
	return uint32(C.su_crc32c(C.uint32_t(crc), bytesPtr(p), C.size_t(len(p)), cBool(portable)))
}

// nativeIterator reports whether grocksdb's Iterator is what copyPairs
// and batchIter assume: a struct holding only the C pointer. If a grocksdb
// upgrade changes that, copies and scans take grocksdb's pair-by-pair
// calls.
var nativeIterator = onlyPointer(reflect.TypeFor[grocksdb.Iterator]())

func onlyPointer(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.NumField() == 1 && t.Field(0).Type.Kind() == reflect.Pointer
}

// cPointer is the C object a grocksdb wrapper holds (see nativeIterator).
func cPointer[T any](w *T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(w)) }

func bytesPtr(b []byte) *C.char { return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))) }

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// takeError frees a C error message and returns it as an error.
func takeError(cerr *C.char) error {
	msg := C.GoString(cerr)
	C.free(unsafe.Pointer(cerr))
	return errors.New(msg)
}

// compressible reports whether LZ4 would pay on blocks like sample.
// RocksDB stores a block that compression shrinks by less than an eighth
// uncompressed, after spending the time to find out; a state whose data
// will not compress (random, encrypted or already compressed values) is
// better written uncompressed from the start. DEFLATE at its fastest
// stands in for LZ4: it compresses at least as well, so data it cannot
// shrink by an eighth LZ4 cannot either.
func compressible(sample []byte) bool {
	const enough = 4 << 10
	if len(sample) < enough {
		return true // too little to judge: RocksDB decides block by block
	}
	sample = sample[:min(len(sample), compressionSample)]
	var out byteCounter
	fw, err := flate.NewWriter(&out, flate.BestSpeed)
	if err != nil {
		return true
	}
	fw.Write(sample)
	fw.Close()
	return int(out) < len(sample)-len(sample)/8
}

// compressionSample is the most data compressible looks at.
const compressionSample = 256 << 10

type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
