package rocksdbformat

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

func isNotFound(err error) bool {
	return errors.Is(err, storage.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, snapshot.ErrNotFound)
}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// UploadFile copies the local file src to remote path dst atomically and
// returns its size and CRC32C.
func UploadFile(ctx context.Context, st storage.Storage, src, dst string) (int64, uint32, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	out, err := st.Create(ctx, dst)
	if err != nil {
		return 0, 0, fmt.Errorf("upload %q: %w", st.URI(dst), err)
	}
	h := crc32.New(envelope.Castagnoli)
	n, err := io.Copy(io.MultiWriter(out, h), ctxReader{ctx, in})
	if err != nil {
		out.Abort()
		return 0, 0, fmt.Errorf("upload %q to %q: %w", src, st.URI(dst), err)
	}
	if err := out.Commit(); err != nil {
		return 0, 0, fmt.Errorf("upload %q: %w", st.URI(dst), err)
	}
	return n, h.Sum32(), nil
}

// linkLocal hard-links the local file src to dst (a local path; a file
// there is replaced) and returns its size and CRC32C: the one sums knows
// for it, else read back from the link. Where a link is impossible
// (another file system, a symbolic link to a snapshot's file) it copies.
func linkLocal(ctx context.Context, src, dst string, sums fileSums) (int64, uint32, error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return 0, 0, err
	} else if !fi.Mode().IsRegular() {
		return UploadFile(ctx, storage.Local(), src, dst)
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	if err := os.Link(src, dst); err != nil {
		return UploadFile(ctx, storage.Local(), src, dst)
	}
	if crc, ok := sums.lookup(fi); ok {
		return fi.Size(), crc, nil
	}
	f, err := os.Open(dst)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(envelope.Castagnoli)
	n, err := io.CopyBuffer(h, ctxReader{ctx, f}, make([]byte, 1<<20))
	if err != nil {
		return 0, 0, fmt.Errorf("checksum %q: %w", dst, err)
	}
	return n, h.Sum32(), nil
}

// fileSums holds the CRC32C of files whose bytes stateutil already knows
// (SST files it wrote, files linked from a snapshot that records them), by
// file identity: RocksDB takes files in by hard link (ingestion moves
// them, checkpoints link them), so the name changes and the file does
// not. The size and modification time are part of the identity, so a
// file changed in place is read again.
type fileSums map[fileID]uint32

type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// record notes the CRC32C of the file at path.
func (s fileSums) record(path string, crc uint32) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if id, ok := idOf(fi); ok {
		s[id] = crc
	}
	return nil
}

func (s fileSums) lookup(fi os.FileInfo) (uint32, bool) {
	id, ok := idOf(fi)
	if !ok {
		return 0, false
	}
	crc, ok := s[id]
	return crc, ok
}

// download copies remote file f (at src) into local path dst, checking
// it as readChecked does.
func download(ctx context.Context, st storage.Storage, src, dst string, f File) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = readChecked(ctx, st, src, f, out, make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// readChecked reads file f (at src) through to w, checking its size and
// CRC32C against the metadata. A missing file wraps snapshot.ErrNotFound,
// a damaged one snapshot.ErrCorrupt; both name the file.
func readChecked(ctx context.Context, st storage.Storage, src string, f File, w io.Writer, buf []byte) error {
	in, err := st.Open(ctx, src)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%w: rocksdb file %q (%s) is missing: %w", snapshot.ErrNotFound, st.URI(src), f.Local, err)
		}
		return fmt.Errorf("rocksdb file %q: %w", st.URI(src), err)
	}
	defer in.Close()
	if in.Size() != f.Size {
		return snapshot.Corrupt(st.URI(src), -1, "%s: size %d, metadata records %d", f.Local, in.Size(), f.Size)
	}
	h := crc32.New(envelope.Castagnoli)
	n, err := io.CopyBuffer(io.MultiWriter(w, h), ctxReader{ctx, in}, buf)
	if err != nil {
		return fmt.Errorf("read %q: %w", st.URI(src), err)
	}
	if n != f.Size {
		return snapshot.Corrupt(st.URI(src), n, "%s: truncated: read %d of %d bytes", f.Local, n, f.Size)
	}
	if got := h.Sum32(); got != f.CRC32C {
		return snapshot.Corrupt(st.URI(src), -1, "%s: checksum mismatch: metadata records crc32c %08x, file has %08x", f.Local, f.CRC32C, got)
	}
	return nil
}

// DownloadHandle fetches a subtask's RocksDB files from snapshot d into
// the new local directory dir.
func DownloadHandle(ctx context.Context, d chkdir.Dir, h *Handle, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range h.Files {
		src, err := d.RefPath(f.Path)
		if err != nil {
			return err
		}
		if err := download(ctx, d.Storage, src, filepath.Join(dir, f.Local), f); err != nil {
			return err
		}
	}
	return nil
}

// LinkHandle is DownloadHandle for a snapshot on local disk: it checks
// each file's size and CRC32C as download does, then links it into dir
// instead of copying it: a hard link where dir is on the same file system
// (no new inode to allocate), else a symbolic link. The instance in dir
// must be opened read-only: its files are the snapshot's.
func LinkHandle(ctx context.Context, d chkdir.Dir, h *Handle, dir string) error {
	buf := make([]byte, 1<<20)
	return linkHandle(ctx, d, h, dir, func(src string, f File) error {
		return readChecked(ctx, d.Storage, src, f, io.Discard, buf)
	})
}

// LinkHandleUnread is LinkHandle checking each file's size but not its
// contents, for a read of a few keys: the instance in dir must then be
// opened to verify every block it reads.
func LinkHandleUnread(ctx context.Context, d chkdir.Dir, h *Handle, dir string) error {
	return linkHandle(ctx, d, h, dir, func(src string, f File) error {
		info, err := d.Storage.Stat(ctx, src)
		if err != nil {
			if isNotFound(err) {
				return wrapNotFound(d.Storage.URI(src), err)
			}
			return err
		}
		if info.Size != f.Size {
			return snapshot.Corrupt(d.Storage.URI(src), -1, "%s: size %d, metadata records %d", f.Local, info.Size, f.Size)
		}
		return nil
	})
}

// linkHandle links h's files into dir, each checked first; d is on local
// disk.
func linkHandle(ctx context.Context, d chkdir.Dir, h *Handle, dir string, check func(src string, f File) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range h.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, err := d.RealRefPath(f.Path)
		if err != nil {
			return err
		}
		if err := check(src, f); err != nil {
			return err
		}
		to := filepath.Join(dir, f.Local)
		if os.Link(src, to) == nil {
			continue
		}
		if err := os.Symlink(src, to); err != nil {
			return err
		}
	}
	return nil
}

// wrapNotFound marks a missing file with snapshot.ErrNotFound.
func wrapNotFound(name string, err error) error {
	return fmt.Errorf("%w: rocksdb file %q is missing: %w", snapshot.ErrNotFound, name, err)
}
