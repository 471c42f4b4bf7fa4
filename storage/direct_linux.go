package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// setDirect turns direct I/O on or off for f; false when the file system
// refuses.
func setDirect(f *os.File, on bool) bool {
	fd := f.Fd()
	flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		return false
	}
	if on {
		flags |= unix.O_DIRECT
	} else {
		flags &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(fd, unix.F_SETFL, flags)
	return err == nil
}

// errDirectRefused is what a direct write fails with when the file system
// wants another alignment.
var errDirectRefused = unix.EINVAL
