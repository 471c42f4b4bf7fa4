// Package tempdir makes temporary directories that a killed process does
// not leave for good. Each is named with its prefix, its process's PID
// and a random number, and claimed (storage's flock) from before it
// exists until it is removed; making one removes the directories of the
// same prefix that processes killed (SIGKILL) left, whose PID no longer
// runs and whose claim nobody holds.
package tempdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/stateutil/stateutil/storage"
)

// Dir is a temporary directory of this process.
type Dir struct {
	// Path is where it is.
	Path  string
	claim storage.Claim
}

// New makes a directory in parent ("" is the system's) named prefix, the
// PID and a random number, after removing what killed processes left
// there under prefix. prefix must not end in a digit, so that a prefix
// that starts another one does not take its directories for its own.
func New(ctx context.Context, parent, prefix string) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	RemoveAbandoned(ctx, parent, prefix)
	for {
		dir := filepath.Join(parent, fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), rand.Uint32()))
		claim, err := storage.Local().Claim(ctx, dir)
		if err != nil {
			return nil, err
		}
		if err = os.Mkdir(dir, 0o700); err == nil {
			return &Dir{Path: dir, claim: claim}, nil
		}
		_ = claim.Release()
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
}

// Remove removes the directory and all below it, then gives its claim
// up. Safe on nil and more than once.
func (d *Dir) Remove() error {
	if d == nil || d.Path == "" {
		return nil
	}
	err := os.RemoveAll(d.Path)
	if d.claim != nil {
		if rerr := d.claim.Release(); err == nil {
			err = rerr
		}
	}
	d.Path, d.claim = "", nil
	return err
}

// Unclaimed is a directory made otherwise (one whose leftovers something
// else clears), to be removed as a Dir is.
func Unclaimed(path string) *Dir { return &Dir{Path: path} }

// RemoveAbandoned removes the directories of prefix in parent whose
// process is gone (kill(pid, 0) finds none; a PID reused since keeps the
// directory, to be safe) and whose claim nobody holds (a process of
// another PID namespace sharing parent holds its own). It is best effort:
// what it cannot remove stays for a later run, and fails nothing.
func RemoveAbandoned(ctx context.Context, parent, prefix string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		n, ok := ownerPID(e.Name(), prefix)
		if !ok || !e.IsDir() || !errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		claim, err := storage.Local().Claim(ctx, dir)
		if err != nil {
			continue
		}
		_ = os.RemoveAll(dir)
		_ = claim.Release()
	}
}

// ownerPID is the PID in the name New gives a directory of prefix: the
// prefix, the PID, '-' and a number. A name of another shape (os.MkdirTemp
// names its directories with the prefix and digits alone) is no one's.
func ownerPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	pid, random, dashed := strings.Cut(rest, "-")
	if !ok || !dashed {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	if _, rerr := strconv.ParseUint(random, 10, 32); err != nil || rerr != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
