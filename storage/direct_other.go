//go:build !linux

package storage

import (
	"errors"
	"os"
)

// setDirect reports that direct I/O is not used here: files go through
// the operating system's cache.
func setDirect(*os.File, bool) bool { return false }

var errDirectRefused = errors.New("direct I/O refused")
