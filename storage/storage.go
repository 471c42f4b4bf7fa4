// Package storage is where snapshot bytes live: local disk (plain paths and
// file:// URIs) and HDFS (hdfs://host:port/path), behind one small interface.
// The schemes a process knows are the ones registered in its Registry.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// notFound is ErrNotFound: it matches fs.ErrNotExist too, so that callers
// that know only the standard library's sentinel see it.
type notFound struct{}

func (notFound) Error() string        { return "not found" }
func (notFound) Is(target error) bool { return target == fs.ErrNotExist }

// ErrNotFound reports a path (or a snapshot, file, operator or state) that
// does not exist. errors.Is(err, fs.ErrNotExist) holds for it as well.
var ErrNotFound error = notFound{}

// ErrExist reports a path that already exists where a new one was required.
var ErrExist = errors.New("already exists")

// ErrPermission reports a path the caller may not read or write.
var ErrPermission = errors.New("permission denied")

// ErrUnavailable reports storage that cannot be reached (a namenode or
// datanode that is down, a refused connection).
var ErrUnavailable = errors.New("storage unavailable")

// ErrInUse reports a destination another writer has claimed (see
// Storage.Claim), under this name or another of the same place.
var ErrInUse = errors.New("in use: held by another writer")

// ErrNotRegular reports a path that is neither a regular file nor a
// directory: a FIFO, a device or a socket, which is never read, because
// reading one can block forever or never end.
var ErrNotRegular = errors.New("not a regular file")

// Info describes one file or directory.
type Info struct {
	Name    string    // base name
	Path    string    // path within the storage
	Size    int64     // bytes; 0 for directories
	IsDir   bool      // true for directories
	Special bool      // neither a regular file nor a directory (FIFO, device, socket)
	ModTime time.Time // last modification
}

// File is an open file: sequential and ranged reads.
type File interface {
	io.Reader
	io.ReaderAt
	io.Closer
	// Size is the file's length in bytes at open time.
	Size() int64
	// Name is the URI the file was opened by, for error messages.
	Name() string
}

// Pending is a file being written. Nothing is visible at its path until
// Commit returns nil; Abort (or a crash) leaves no file at the path.
type Pending interface {
	io.Writer
	// Commit makes the written bytes visible at the path, atomically.
	Commit() error
	// Abort discards what was written. Safe to call after Commit (no-op).
	Abort() error
}

// Claim is a writer's exclusive hold on a destination; see Storage.Claim.
type Claim interface {
	// Release gives the destination up. Safe to call more than once.
	Release() error
}

// Storage is one file system. Paths are slash-separated and absolute
// within the storage.
type Storage interface {
	// Open opens path for reading. A path that is not a regular file is
	// refused without being read (ErrNotRegular).
	Open(ctx context.Context, path string) (File, error)
	// Create starts writing path; the file appears only on Commit. An
	// existing file at path is replaced on Commit.
	Create(ctx context.Context, path string) (Pending, error)
	// Stat describes path.
	Stat(ctx context.Context, path string) (Info, error)
	// List returns the entries of directory path, sorted by name.
	List(ctx context.Context, path string) ([]Info, error)
	// MkdirAll creates path and its parents.
	MkdirAll(ctx context.Context, path string) error
	// Remove removes a file or an empty directory.
	Remove(ctx context.Context, path string) error
	// RemoveAll removes path and everything below it; a missing path is no error.
	RemoveAll(ctx context.Context, path string) error
	// Rename moves oldpath to newpath, which must not exist.
	Rename(ctx context.Context, oldpath, newpath string) error
	// Claim takes path for one writer: while the claim is held, another
	// Claim of the same path, by this process or any other, fails with
	// ErrInUse. A claim dies with its process, so a killed writer does not
	// keep its destination (on HDFS, once the namenode's lease on it
	// expires). Claim neither creates nor checks path itself.
	Claim(ctx context.Context, path string) (Claim, error)
	// URI renders path as a URI a user can pass back to stateutil.
	URI(path string) string
}

// ReadAll reads a whole file, refusing files larger than limit bytes.
func ReadAll(ctx context.Context, st Storage, path string, limit int64) ([]byte, error) {
	f, err := st.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d bytes allowed", f.Name(), f.Size(), limit)
	}
	buf := make([]byte, f.Size())
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return buf, nil
}

// WriteFile writes data to path atomically.
func WriteFile(ctx context.Context, st Storage, path string, data []byte) error {
	p, err := st.Create(ctx, path)
	if err != nil {
		return err
	}
	return writeAll(p, data)
}

// WriteFileVolatile writes data to path atomically, as WriteFile, but on
// local disk does not wait for the disk: what it writes outlives its
// process, not a crash of the machine. For records whose loss in a crash
// loses no data (a write's journal: without it, what the write left is
// refused by the next one, not removed).
func WriteFileVolatile(ctx context.Context, st Storage, path string, data []byte) error {
	if _, ok := st.(local); !ok {
		return WriteFile(ctx, st, path, data)
	}
	p, err := createLocal(path, false)
	if err != nil {
		return err
	}
	p.(*localPending).volatile = true
	return writeAll(p, data)
}

func writeAll(p Pending, data []byte) error {
	if _, err := p.Write(data); err != nil {
		p.Abort()
		return err
	}
	return p.Commit()
}
