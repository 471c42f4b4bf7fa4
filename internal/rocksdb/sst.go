package rocksdb

// #include <stdlib.h>
// #include "native.h"
import "C"

import (
	"context"
	"fmt"
	"unsafe"
)

// SSTWriter writes one external SST file (native.h) and owns it.
type SSTWriter struct {
	w    *C.su_sst
	path string
	n    int
	// bytes counts the keys and values added.
	bytes int64
	// size and crc describe the finished file.
	size int64
	crc  uint32
}

// NewSSTWriter starts an SST file at path, its blocks LZ4-compressed when
// lz4 is set. LZ4 rather than RocksDB's default Snappy: Flink's RocksDB
// (FRocksDB) reads it, and on incompressible blocks it gives up faster.
func NewSSTWriter(path string, lz4 bool) (*SSTWriter, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	w := C.su_sst_open(cpath, cBool(lz4), blockSize, blockChecksum, &cerr)
	if w == nil {
		return nil, fmt.Errorf("rocksdb: open SST writer %q: %w", path, takeError(cerr))
	}
	return &SSTWriter{w: w, path: path}, nil
}

// Path is where the file is written.
func (s *SSTWriter) Path() string { return s.path }

// Bytes counts the bytes of the keys and values Add and AddRecords added.
func (s *SSTWriter) Bytes() int64 { return s.bytes }

// CRC32C is the finished file's checksum, computed while it was written.
func (s *SSTWriter) CRC32C() uint32 { return s.crc }

// Add adds a pair; keys come in increasing order.
func (s *SSTWriter) Add(key, value []byte) error {
	var cerr *C.char
	if C.su_sst_put(s.w, bytesPtr(key), C.size_t(len(key)), bytesPtr(value), C.size_t(len(value)), &cerr) != 0 {
		return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
	}
	s.n++
	s.bytes += int64(len(key) + len(value))
	return nil
}

// Record is a pair in a buffer: the key at Off, KeyLen bytes long, and
// the ValueLen bytes of its value right after it. AddRecords hands
// records to C as they are: three machine words each.
type Record struct{ Off, KeyLen, ValueLen int }

// AddRecords adds the records of buf, in increasing key order, in one call
// into C: a call per pair would cost as much as RocksDB's own work.
func (s *SSTWriter) AddRecords(buf []byte, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	var cerr *C.char
	if C.su_sst_put_records(s.w, bytesPtr(buf), (*C.intptr_t)(unsafe.Pointer(&recs[0])), C.size_t(len(recs)), &cerr) != 0 {
		return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
	}
	s.n += len(recs)
	for _, r := range recs {
		s.bytes += int64(r.KeyLen + r.ValueLen)
	}
	return nil
}

// Copy adds every pair it yields from its current one on, leaving it
// exhausted. A read-only database's iterator is the shim's: the pairs it
// has read ahead into Go go into the file in one call, the rest straight
// from the shim's iterator, a batch per call, so that a pair costs no cgo
// transition (on a copy, those are as expensive as RocksDB's own work).
// The iterator's error, if any, is for the caller to check.
func (s *SSTWriter) Copy(ctx context.Context, it *Iterator) error {
	if it.n == nil {
		for n := 0; it.Valid(); n++ {
			if n&0xfff == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := s.Add(it.Key(), it.Value()); err != nil {
				return err
			}
			it.Next()
		}
		return nil
	}
	if !it.ok {
		return nil
	}
	// The batch from the current pair on, then the shim's iterator, which
	// stands at the pair after the batch.
	rest := it.buf[it.pos-8-len(it.k)-len(it.v) : it.end]
	it.ok, it.k, it.v, it.pos = false, nil, nil, it.end
	var cerr *C.char
	n := C.su_sst_put_batch(s.w, bytesPtr(rest), C.size_t(len(rest)), &cerr)
	if n < 0 {
		return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
	}
	s.n += int(n)
	return s.copyNative(ctx, it.n)
}

func (s *SSTWriter) copyNative(ctx context.Context, it *C.su_iter) error {
	const batch = 4096
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var cerr *C.char
		n := C.su_sst_copy(s.w, it, batch, &cerr)
		if n < 0 {
			return fmt.Errorf("rocksdb: SST %q: %w", s.path, takeError(cerr))
		}
		s.n += int(n)
		if n < batch {
			return nil
		}
	}
}

// Finish completes the file; it reports false when nothing was added,
// leaving an unfinished file at its path for the caller to remove.
func (s *SSTWriter) Finish() (bool, error) {
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
func (s *SSTWriter) Close() {
	if s.w != nil {
		C.su_sst_destroy(s.w)
		s.w = nil
	}
}

// SSTLinkable reports whether the SST file at path can be ingested into
// another database unchanged (see native.h).
func SSTLinkable(path string) (bool, error) {
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
