package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBehind starts the write-back of n bytes of f from off, without
// waiting for it. It is advice: an error changes nothing.
func writeBehind(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
