package rocksdb

// #cgo LDFLAGS: -lrocksdb
// #include <rocksdb/c.h>
//
// // copy_pairs moves up to max pairs from it to w, advancing it; it
// // returns how many, or -1 with *err set.
// static int copy_pairs(rocksdb_iterator_t* it, rocksdb_sstfilewriter_t* w, int max, char** err) {
// 	int n = 0;
// 	for (; n < max && rocksdb_iter_valid(it); n++) {
// 		size_t kl, vl;
// 		const char* k = rocksdb_iter_key(it, &kl);
// 		const char* v = rocksdb_iter_value(it, &vl);
// 		rocksdb_sstfilewriter_put(w, k, kl, v, vl, err);
// 		if (*err != NULL) {
// 			return -1;
// 		}
// 		rocksdb_iter_next(it);
// 	}
// 	return n;
// }
import "C"

import (
	"context"
	"errors"
	"reflect"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// nativePointers reports whether grocksdb's Iterator and SSTFileWriter
// are what copyNative assumes: a struct holding only the C pointer. If a
// grocksdb upgrade changes that, copyIter takes the portable loop.
var nativePointers = onlyPointer(reflect.TypeFor[grocksdb.Iterator]()) && onlyPointer(reflect.TypeFor[grocksdb.SSTFileWriter]())

func onlyPointer(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.NumField() == 1 && t.Field(0).Type.Kind() == reflect.Pointer
}

// cPointer is the C object a grocksdb wrapper holds (see nativePointers).
func cPointer[T any](w *T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(w)) }

// copyNative is copyIter's loop run in C, a batch of pairs per call, so
// that a pair costs no cgo transitions: on a copy, those are as
// expensive as RocksDB's own work.
func copyNative(ctx context.Context, it *iter, dst *sstWriter) error {
	cit := (*C.rocksdb_iterator_t)(cPointer(it.it))
	cw := (*C.rocksdb_sstfilewriter_t)(cPointer(dst.w))
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var cerr *C.char
		n := C.copy_pairs(cit, cw, 4096, &cerr)
		if n < 0 {
			msg := C.GoString(cerr)
			C.rocksdb_free(unsafe.Pointer(cerr))
			return errors.New(msg)
		}
		dst.n += int(n)
		if n < 4096 {
			return nil
		}
	}
}
