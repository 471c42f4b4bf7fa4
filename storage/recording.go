package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// MadeKind says what a writer makes at a path (see Made).
type MadeKind string

// What a writer makes: a file (with the pending files a Create makes
// beside it until Commit), a directory, or a temporary directory under a
// fresh name, which nobody else has reason to put anything in and which
// goes whole.
const (
	MadeFile MadeKind = "file"
	MadeDir  MadeKind = "dir"
	MadeTemp MadeKind = "temp"
)

// Made is one thing a writer is about to make.
type Made struct {
	Kind MadeKind `json:"made"`
	Path string   `json:"path"`
}

// Recorder is told what a writer is about to make before it makes it;
// an error stops the making.
type Recorder func(ctx context.Context, made ...Made) error

// recording is a Storage that tells its Recorder of everything made
// through it first.
type recording struct {
	Storage
	rec Recorder
}

// Recording returns st, telling rec before it makes them of the files
// Create makes (and Rename's new path) and of the directories MkdirAll
// makes that are not there yet. A writer that makes local files around
// the Storage (hard links, temporary directories) tells it first with
// Expect and MkdirTemp. Everything else passes through.
func Recording(st Storage, rec Recorder) Storage {
	return &recording{Storage: st, rec: rec}
}

func (r *recording) Create(ctx context.Context, p string) (Pending, error) {
	if err := r.rec(ctx, Made{MadeFile, p}); err != nil {
		return nil, err
	}
	return r.Storage.Create(ctx, p)
}

func (r *recording) MkdirAll(ctx context.Context, p string) error {
	var missing []Made
	for dir := path.Clean(p); ; dir = path.Dir(dir) {
		if _, err := r.Storage.Stat(ctx, dir); !errors.Is(err, ErrNotFound) {
			break
		}
		missing = append(missing, Made{MadeDir, dir})
		if path.Dir(dir) == dir {
			break
		}
	}
	if len(missing) > 0 {
		if err := r.rec(ctx, missing...); err != nil {
			return err
		}
	}
	return r.Storage.MkdirAll(ctx, p)
}

func (r *recording) Rename(ctx context.Context, oldpath, newpath string) error {
	if err := r.rec(ctx, Made{MadeFile, newpath}); err != nil {
		return err
	}
	return r.Storage.Rename(ctx, oldpath, newpath)
}

// IsLocal reports whether st is the local disk, recorded or not.
func IsLocal(st Storage) bool {
	if r, ok := st.(*recording); ok {
		return IsLocal(r.Storage)
	}
	_, ok := st.(local)
	return ok
}

// Expect tells st's Recorder, if it has one, of what the caller is about
// to make around it, but for directories that are there already.
func Expect(ctx context.Context, st Storage, made ...Made) error {
	r, ok := st.(*recording)
	if !ok {
		return nil
	}
	var out []Made
	for _, m := range made {
		if m.Kind == MadeDir {
			if _, err := r.Storage.Stat(ctx, m.Path); !errors.Is(err, ErrNotFound) {
				continue
			}
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil
	}
	return r.rec(ctx, out...)
}

// MkdirTemp makes a new directory in the local directory dir, named
// prefix and random characters, as os.MkdirTemp does, telling st's
// Recorder of it first.
func MkdirTemp(ctx context.Context, st Storage, dir, prefix string) (string, error) {
	for {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		if err := Expect(ctx, st, Made{MadeTemp, name}); err != nil {
			return "", err
		}
		err := os.Mkdir(name, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", localErr(err)
		}
		return name, nil
	}
}
