package rocksdb

// #cgo CXXFLAGS: -std=c++17 -O2
// #cgo !grocksdb_no_link LDFLAGS: -lrocksdb -lstdc++
// #include <stdlib.h>
// #include "native.h"
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// LibraryVersion is the version of the RocksDB library stateutil was
// built against, as major.minor.patch.
func LibraryVersion() string {
	var major, minor, patch C.int
	C.su_rocksdb_version(&major, &minor, &patch)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// fileCRC32C extends crc over p as the SST writer's file checksum does,
// with the CPU's CRC32C instruction if it has one, unless portable. Only
// tests call it (a _test.go file cannot use cgo): scripts/lint.sh lists it
// as a test hook.
func fileCRC32C(crc uint32, p []byte, portable bool) uint32 {
	return uint32(C.su_crc32c(C.uint32_t(crc), bytesPtr(p), C.size_t(len(p)), cBool(portable)))
}

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
