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

func openLocal(_ context.Context, u *url.URL) (Storage, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("file URI %q names host %q; only local files are supported", u.String(), u.Host)
	}
	return Local(), nil
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
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, localErr(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, localErr(err)
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, fmt.Errorf("%q is a directory, expected a file", path)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("%q: %w (%s), refused", path, ErrNotRegular, kindOf(fi.Mode()))
	}
	return localFile{File: f, size: fi.Size()}, nil
}

// kindOf names what a special file is, for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// localPending writes through the page cache (buffered), or, made by
// CreateOnce, holds the file's first bytes (head) and past directChunk
// writes with direct I/O (see directWriter) where the file system allows.
type localPending struct {
	*os.File
	path     string
	done     bool
	head     []byte
	direct   *directWriter
	buffered bool
	// volatile: Commit does not wait for the disk (WriteFileVolatile).
	volatile bool
	// written and queued are the bytes written through the page cache,
	// and those handed to the kernel to write back (writeBehind).
	written, queued int64
}

// writeBehindBytes is how much a buffered file lets accumulate before it
// asks the kernel to start writing it to disk, so that Commit's fsync
// finds little left to do and the disk works while the caller computes.
const writeBehindBytes = 8 << 20

func (p *localPending) Write(b []byte) (int, error) {
	switch {
	case p.direct != nil:
		return p.direct.Write(b)
	case p.buffered:
		return p.writeBuffered(b)
	case len(p.head)+len(b) < directChunk:
		p.head = append(p.head, b...)
		return len(b), nil
	}
	head := p.head
	p.head = nil
	if d, ok := newDirectWriter(p.File); ok {
		p.direct = d
		if _, err := d.Write(head); err != nil {
			return 0, err
		}
		return d.Write(b)
	}
	p.buffered = true
	if _, err := p.writeBuffered(head); err != nil {
		return 0, err
	}
	return p.writeBuffered(b)
}

func (p *localPending) writeBuffered(b []byte) (int, error) {
	n, err := p.File.Write(b)
	p.written += int64(n)
	if p.written-p.queued >= writeBehindBytes {
		writeBehind(p.File, p.queued, p.written-p.queued)
		p.queued = p.written
	}
	return n, err
}

// flush writes whatever the file still holds in memory.
func (p *localPending) flush() error {
	if p.direct != nil {
		return p.direct.finish()
	}
	_, err := p.File.Write(p.head)
	return err
}

func (local) Create(_ context.Context, path string) (Pending, error) {
	return createLocal(path, false)
}

// CreateOnce is st.Create for a large file written once and not read
// back soon, such as a snapshot's state: on local disk, past its first
// directChunk bytes, it is written around the page cache (see
// directWriter).
func CreateOnce(ctx context.Context, st Storage, path string) (Pending, error) {
	switch s := st.(type) {
	case local:
		return createLocal(path, true)
	case *recording:
		if err := s.rec(ctx, Made{MadeFile, path}); err != nil {
			return nil, err
		}
		return CreateOnce(ctx, s.Storage, path)
	}
	return st.Create(ctx, path)
}

func createLocal(path string, once bool) (Pending, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+"tmp-*-"+base)
	if err != nil {
		return nil, localErr(err)
	}
	return &localPending{File: f, path: path, buffered: !once}, nil
}

func (p *localPending) Commit() error {
	if p.done {
		return fmt.Errorf("%q: already committed or aborted", p.path)
	}
	p.done = true
	tmp := p.File.Name()
	if err := p.flush(); err != nil {
		p.File.Close()
		os.Remove(tmp)
		return err
	}
	// CreateTemp makes 0600 files; a committed file is as readable as any other.
	if err := p.File.Chmod(0o644); err != nil {
		p.File.Close()
		os.Remove(tmp)
		return err
	}
	if err := p.sync(); err != nil {
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
	if p.volatile {
		return nil
	}
	return syncDir(filepath.Dir(p.path))
}

func (p *localPending) sync() error {
	if p.volatile {
		return nil
	}
	return p.File.Sync()
}

func (p *localPending) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	if p.direct != nil {
		p.direct.stop()
	}
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
	special := !fi.IsDir() && !fi.Mode().IsRegular()
	return Info{Name: fi.Name(), Path: path, Size: size, IsDir: fi.IsDir(), Special: special, ModTime: fi.ModTime()}
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
