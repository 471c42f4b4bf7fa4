package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
)

func init() {
	RegisterScheme("file", func(_ context.Context, u *url.URL) (Storage, error) {
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URI %q names host %q; only local files are supported", u.String(), u.Host)
		}
		return Local(), nil
	})
}

type local struct{}

// Local returns the storage of the local file system.
func Local() Storage { return local{} }

func (local) URI(path string) string { return path }

// localErr maps an os error onto the package's sentinels, keeping the message.
func localErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: %w", ErrExist, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return err
}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

func (local) Open(_ context.Context, path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, localErr(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, localErr(err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%q is a directory, expected a file", path)
	}
	return localFile{File: f, size: fi.Size()}, nil
}

type localPending struct {
	*os.File
	path string
	done bool
	// written and queued are the bytes written, and those handed to the
	// kernel to write back (writeBehind).
	written, queued int64
}

// writeBehindBytes is how much a pending file lets accumulate before it
// asks the kernel to start writing it to disk, so that Commit's fsync
// finds little left to do and the disk works while the caller computes.
const writeBehindBytes = 8 << 20

func (p *localPending) Write(b []byte) (int, error) {
	n, err := p.File.Write(b)
	p.written += int64(n)
	if p.written-p.queued >= writeBehindBytes {
		writeBehind(p.File, p.queued, p.written-p.queued)
		p.queued = p.written
	}
	return n, err
}

func (local) Create(_ context.Context, path string) (Pending, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, localErr(err)
	}
	return &localPending{File: f, path: path}, nil
}

func (p *localPending) Commit() error {
	if p.done {
		return fmt.Errorf("%q: already committed or aborted", p.path)
	}
	p.done = true
	tmp := p.File.Name()
	// CreateTemp makes 0600 files; a committed file is as readable as any other.
	if err := p.File.Chmod(0o644); err != nil {
		p.File.Close()
		os.Remove(tmp)
		return err
	}
	if err := p.File.Sync(); err != nil {
		p.File.Close()
		os.Remove(tmp)
		return err
	}
	if err := p.File.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p.path); err != nil {
		os.Remove(tmp)
		return localErr(err)
	}
	return syncDir(filepath.Dir(p.path))
}

func (p *localPending) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	p.File.Close()
	return os.Remove(p.File.Name())
}

// syncDir makes a rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return localErr(err)
	}
	defer d.Close()
	return d.Sync()
}

func infoOf(path string, fi fs.FileInfo) Info {
	size := fi.Size()
	if fi.IsDir() {
		size = 0
	}
	return Info{Name: fi.Name(), Path: path, Size: size, IsDir: fi.IsDir(), ModTime: fi.ModTime()}
}

func (local) Stat(_ context.Context, path string) (Info, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Info{}, localErr(err)
	}
	return infoOf(path, fi), nil
}

func (local) List(_ context.Context, path string) ([]Info, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, localErr(err)
	}
	out := make([]Info, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return nil, localErr(err)
		}
		out = append(out, infoOf(filepath.Join(path, e.Name()), fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (local) MkdirAll(_ context.Context, path string) error {
	return localErr(os.MkdirAll(path, 0o755))
}

func (local) Remove(_ context.Context, path string) error { return localErr(os.Remove(path)) }

func (local) RemoveAll(_ context.Context, path string) error { return localErr(os.RemoveAll(path)) }

func (local) Rename(_ context.Context, oldpath, newpath string) error {
	if _, err := os.Lstat(newpath); err == nil {
		return fmt.Errorf("%w: %q", ErrExist, newpath)
	}
	return localErr(os.Rename(oldpath, newpath))
}
