package storage

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading without waiting for a writer if
// it is a FIFO, so that the caller can look at what it opened and refuse
// it. For regular files and directories the flag changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
