package rocksdb

// #include <stdlib.h>
// #include "native.h"
import "C"

import (
	"encoding/binary"
	"sync"

	"github.com/linxGnu/grocksdb"
)

// Iterator walks one column family's pairs in key order between the
// bounds it was made with. A read-only database's iterator is the shim's
// and reads its pairs a batch per cgo call rather than four calls per
// pair; a writable database's is grocksdb's. Key and Value are valid until
// Next or Close, or with Retain until Release. An iterator of a column
// family that does not exist is empty. Close it before its database.
type Iterator struct {
	// A read-only database's: the shim's iterator and the batch of pairs
	// it filled, laid out as su_iter_fill does, in buf: *batch, or a larger
	// buffer for a pair that does not fit. With retain, the batches read
	// before are kept.
	n        *C.su_iter
	batch    *[]byte
	buf      []byte
	pos, end int
	k, v     []byte
	ok       bool
	retain   bool
	kept     []*[]byte
	// A writable database's.
	g  *grocksdb.Iterator
	ro *grocksdb.ReadOptions
}

// batchBytes is the usual batch; a pair larger than that gets a batch of
// its own.
const batchBytes = 256 << 10

// batches are the iterators' buffers: a scan of a few key groups makes an
// iterator per state, and clearing a new buffer for each would cost more
// than the pairs it holds.
var batches = sync.Pool{New: func() any {
	b := make([]byte, batchBytes)
	return &b
}}

func newNativeIterator(n *C.su_iter) *Iterator {
	b := batches.Get().(*[]byte)
	it := &Iterator{n: n, batch: b, buf: *b}
	it.Next()
	return it
}

// Valid reports whether the iterator stands at a pair.
func (it *Iterator) Valid() bool {
	if it.g != nil {
		return it.g.Valid()
	}
	return it.ok
}

// Key is the current pair's key.
func (it *Iterator) Key() []byte {
	if it.g != nil {
		return it.g.Key().Data()
	}
	return it.k
}

// Value is the current pair's value.
func (it *Iterator) Value() []byte {
	if it.g != nil {
		return it.g.Value().Data()
	}
	return it.v
}

// Retain keeps the pairs of a read-only database's iterator valid until
// Release, not just until Next: the batches they lie in are kept rather
// than reused. It reports false, changing nothing, for a writable
// database's.
func (it *Iterator) Retain() bool {
	if it.g != nil {
		return false
	}
	it.retain = true
	return true
}

// Release ends Retain's hold on every pair but the current one.
func (it *Iterator) Release() {
	for _, b := range it.kept {
		batches.Put(b)
	}
	clear(it.kept)
	it.kept = it.kept[:0]
}

// Next moves to the next pair.
func (it *Iterator) Next() {
	if it.g != nil {
		it.g.Next()
		return
	}
	if it.pos == it.end && !it.fill() {
		it.ok, it.k, it.v = false, nil, nil
		return
	}
	kl := int(binary.NativeEndian.Uint32(it.buf[it.pos:]))
	vl := int(binary.NativeEndian.Uint32(it.buf[it.pos+4:]))
	p := it.pos + 8
	it.k, it.v = it.buf[p:p+kl:p+kl], it.buf[p+kl:p+kl+vl:p+kl+vl]
	it.pos, it.ok = p+kl+vl, true
}

// fill reads the next batch; false when the iterator is exhausted (or
// failed: Err tells).
func (it *Iterator) fill() bool {
	if it.n == nil {
		return false
	}
	switch {
	case len(it.buf) > batchBytes: // a large pair's own, now read: the batch is free
		it.buf = *it.batch
	case it.retain: // the batch's pairs are held: fill another
		it.kept = append(it.kept, it.batch)
		it.batch = batches.Get().(*[]byte)
		it.buf = *it.batch
	}
	for {
		var need C.size_t
		n := C.su_iter_fill(it.n, bytesPtr(it.buf), C.size_t(len(it.buf)), &need)
		if need > 0 {
			it.buf = make([]byte, int(need))
			continue
		}
		it.pos, it.end = 0, int(n)
		return n > 0
	}
}

// Err is the error that ended the iteration, if one did.
func (it *Iterator) Err() error {
	switch {
	case it.g != nil:
		return it.g.Err()
	case it.n != nil:
		var cerr *C.char
		if C.su_iter_status(it.n, &cerr) != 0 {
			return takeError(cerr)
		}
	}
	return nil
}

// Close frees the iterator (then, for a writable database's, its read
// options).
func (it *Iterator) Close() {
	if it.g != nil {
		it.g.Close()
		it.ro.Destroy()
		it.g, it.ro = nil, nil
	}
	if it.n != nil {
		C.su_iter_destroy(it.n)
		it.n = nil
		it.Release()
		batches.Put(it.batch)
	}
	it.ok, it.k, it.v, it.buf, it.batch = false, nil, nil, nil, nil
}
