// Package storage is where snapshot bytes live: local disk (plain paths and
// file:// URIs) and HDFS (hdfs://host:port/path), behind one small interface.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ErrNotFound reports a path that does not exist.
var ErrNotFound = errors.New("not found")

// ErrExist reports a path that already exists where a new one was required.
var ErrExist = errors.New("already exists")

// ErrPermission reports a path the caller may not read or write.
var ErrPermission = errors.New("permission denied")

// ErrUnavailable reports storage that cannot be reached (a namenode or
// datanode that is down, a refused connection).
var ErrUnavailable = errors.New("storage unavailable")

// Info describes one file or directory.
type Info struct {
	Name    string    // base name
	Path    string    // path within the storage
	Size    int64     // bytes; 0 for directories
	IsDir   bool      // true for directories
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

// Storage is one file system. Paths are slash-separated and absolute
// within the storage.
type Storage interface {
	// Open opens path for reading.
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
	// URI renders path as a URI a user can pass back to stateutil.
	URI(path string) string
}

// Opener builds a Storage for a parsed URI.
type Opener func(ctx context.Context, u *url.URL) (Storage, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// RegisterScheme makes URIs with the given scheme resolvable by Resolve.
func RegisterScheme(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[scheme] = open
}

// Resolve splits a user-supplied location (a plain path, file://..., or
// hdfs://host:port/...) into the Storage that holds it and the path within.
func Resolve(ctx context.Context, location string) (Storage, string, error) {
	if !strings.Contains(location, "://") {
		return Local(), location, nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, "", fmt.Errorf("invalid location %q: %w", location, err)
	}
	openersMu.RLock()
	open, ok := openers[u.Scheme]
	openersMu.RUnlock()
	if !ok {
		return nil, "", fmt.Errorf("unsupported storage scheme %q in %q (known: file, hdfs)", u.Scheme, location)
	}
	st, err := open(ctx, u)
	if err != nil {
		return nil, "", err
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return st, p, nil
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
	if _, err := p.Write(data); err != nil {
		p.Abort()
		return err
	}
	return p.Commit()
}
