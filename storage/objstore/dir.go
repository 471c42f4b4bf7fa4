package objstore

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// errStop ends a listing early.
var errStop = errors.New("enough")

// first returns the first object below the directory k, if any.
func (s *store) first(ctx context.Context, k string) (Object, bool, error) {
	var found Object
	ok := false
	err := s.b.List(ctx, dirPrefix(k), false, 1, func(o Object) error {
		found, ok = o, true
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return found, ok, err
}

// isDir reports whether k is a directory: an object lies below it, or its
// marker is a key of its own (the bucket's root always is one, if the
// bucket exists).
func (s *store) isDir(ctx context.Context, k string) (bool, error) {
	_, ok, err := s.first(ctx, k)
	if err != nil || ok || k == "" {
		return ok || k == "", err
	}
	o, err := s.b.Head(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil && o.Dir, err
}

func (s *store) Stat(ctx context.Context, p string) (storage.Info, error) {
	k := key(p)
	info := storage.Info{Name: path.Base(path.Clean("/" + p)), Path: p}
	if t, ok := s.dirs.time(k); ok {
		info.IsDir, info.ModTime = true, t
		return info, nil
	}
	if k != "" {
		o, err := s.b.Head(ctx, k)
		if err == nil {
			info.IsDir, info.Size, info.ModTime = o.Dir, o.Size, o.ModTime
			if o.Dir {
				info.Size = 0
				s.dirs.rememberAt(k, o.ModTime)
			}
			return info, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return storage.Info{}, s.wrap("stat", p, err)
		}
	}
	o, ok, err := s.first(ctx, k)
	if err != nil {
		return storage.Info{}, s.wrap("stat", p, err)
	}
	if !ok && k != "" {
		return storage.Info{}, s.wrap("stat", p, notFound("no such file or directory"))
	}
	info.IsDir = true
	info.ModTime = time.Now()
	if ok {
		info.ModTime = o.ModTime
	}
	s.dirs.rememberAt(k, info.ModTime)
	return info, nil
}

// List lists the objects and directories directly below p. A directory
// has the time of its marker, or else of its first object.
func (s *store) List(ctx context.Context, p string) ([]storage.Info, error) {
	k := key(p)
	prefix := dirPrefix(k)
	byName := map[string]int{}
	var out []storage.Info
	var prefixes []int // directories with no marker of their own
	exists := k == ""
	err := s.b.List(ctx, prefix, true, 0, func(o Object) error {
		exists = true
		name := strings.TrimPrefix(o.Key, prefix)
		if name == "" {
			return nil // the directory's own marker
		}
		if i, seen := byName[name]; seen {
			// A marker beside the prefix of the same directory.
			if o.Dir && out[i].IsDir && out[i].ModTime.IsZero() {
				out[i].ModTime = o.ModTime
			}
			return nil
		}
		byName[name] = len(out)
		if o.Dir && o.ModTime.IsZero() {
			prefixes = append(prefixes, len(out))
		}
		info := storage.Info{Name: name, Path: path.Join(p, name), Size: o.Size, IsDir: o.Dir, ModTime: o.ModTime}
		if o.Dir {
			info.Size = 0
		}
		out = append(out, info)
		return nil
	})
	if err != nil {
		return nil, s.wrap("list", p, err)
	}
	if !exists {
		o, err := s.b.Head(ctx, k)
		switch {
		case err == nil && !o.Dir:
			return nil, fmt.Errorf("list %s: not a directory", s.URI(p))
		case err == nil:
			exists = true
		case !errors.Is(err, storage.ErrNotFound):
			return nil, s.wrap("list", p, err)
		}
	}
	if !exists {
		return nil, s.wrap("list", p, notFound("no such directory"))
	}
	for _, i := range prefixes {
		if !out[i].ModTime.IsZero() {
			continue
		}
		o, ok, err := s.first(ctx, key(out[i].Path))
		if err != nil {
			return nil, s.wrap("list", out[i].Path, err)
		}
		out[i].ModTime = time.Now() // removed meanwhile
		if ok {
			out[i].ModTime = o.ModTime
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	s.dirs.remember(k)
	return out, nil
}

// MkdirAll writes the directory's marker, after checking that neither p
// nor a parent is a file.
func (s *store) MkdirAll(ctx context.Context, p string) error {
	k := key(p)
	if k == "" {
		_, err := s.isDir(ctx, k)
		return s.wrap("mkdir", p, err)
	}
	if s.dirs.known(k) {
		return nil
	}
	for a := k; a != "." && !s.dirs.known(a); a = path.Dir(a) {
		o, err := s.b.Head(ctx, a)
		if err == nil && !o.Dir {
			return fmt.Errorf("mkdir %s: %s is a file, not a directory", s.URI(p), s.URI("/"+a))
		}
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return s.wrap("mkdir", p, err)
		}
	}
	if err := s.b.Mkdir(ctx, k); err != nil {
		return s.wrap("mkdir", p, err)
	}
	s.dirs.remember(k)
	return nil
}

// Remove removes an object, or a directory that holds nothing but its
// marker.
func (s *store) Remove(ctx context.Context, p string) error {
	k := key(p)
	if k == "" {
		return fmt.Errorf("remove %s: refusing to remove the bucket's root", s.URI(p))
	}
	o, err := s.b.Head(ctx, k)
	switch {
	case err == nil && !o.Dir:
		return s.wrap("remove", p, s.b.Delete(ctx, k, Cond{}))
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return s.wrap("remove", p, err)
	}
	marker := err == nil
	var below []Object
	err = s.b.List(ctx, dirPrefix(k), false, 2, func(o Object) error {
		below = append(below, o)
		if len(below) == 2 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return s.wrap("remove", p, err)
	}
	for _, b := range below {
		if b.Key != dirPrefix(k) {
			return fmt.Errorf("remove %s: directory not empty", s.URI(p))
		}
	}
	if !marker && len(below) == 0 {
		return s.wrap("remove", p, notFound("no such file or directory"))
	}
	s.dirs.forget(k)
	if marker {
		return s.wrap("remove", p, s.b.Delete(ctx, k, Cond{}))
	}
	return s.wrap("remove", p, s.b.Delete(ctx, dirPrefix(k), Cond{}))
}

// RemoveAll deletes the object p and every object below it: the files
// first, then the directory markers, deepest first, as a store with real
// directories (Data Lake Storage) removes only empty ones.
func (s *store) RemoveAll(ctx context.Context, p string) error {
	k := key(p)
	s.dirs.forget(k)
	var files, dirs []string
	if k != "" {
		o, err := s.b.Head(ctx, k)
		switch {
		case err == nil && o.Dir:
			dirs = append(dirs, k)
		case err == nil:
			files = append(files, k)
		case !errors.Is(err, storage.ErrNotFound):
			return s.wrap("remove", p, err)
		}
	}
	if err := s.b.List(ctx, dirPrefix(k), false, 0, func(o Object) error {
		if o.Dir {
			dirs = append(dirs, o.Key)
		} else {
			files = append(files, o.Key)
		}
		return nil
	}); err != nil {
		return s.wrap("remove", p, err)
	}
	del := func(ctx context.Context, key string) error {
		err := s.b.Delete(ctx, key, Cond{})
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return s.wrap("remove", "/"+key, err)
	}
	if err := parallel(ctx, len(files), func(ctx context.Context, i int) error { return del(ctx, files[i]) }); err != nil {
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := del(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// Rename copies on the server, then deletes: object stores have no
// rename, so it is neither atomic nor cheap (it takes time in proportion
// to the bytes). Within a directory the commit points, _metadata files,
// are copied last and deleted first, so that a reader never takes a
// half-moved snapshot for a whole one, at either name.
func (s *store) Rename(ctx context.Context, oldpath, newpath string) error {
	ko, kn := key(oldpath), key(newpath)
	if ko == "" || kn == "" || kn == ko || strings.HasPrefix(kn, ko+"/") {
		return fmt.Errorf("rename %s to %s: cannot move a directory into itself or the bucket's root", s.URI(oldpath), s.URI(newpath))
	}
	if _, err := s.Stat(ctx, newpath); err == nil {
		return fmt.Errorf("rename %s to %s: %w", s.URI(oldpath), s.URI(newpath), storage.ErrExist)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	o, err := s.b.Head(ctx, ko)
	if err == nil && !o.Dir {
		if err := s.b.Copy(ctx, ko, kn); err != nil {
			return s.wrap("rename", oldpath, err)
		}
		return s.wrap("rename", oldpath, s.b.Delete(ctx, ko, Cond{}))
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return s.wrap("rename", oldpath, err)
	}
	marker := err == nil
	var objs, commits []string
	err = s.b.List(ctx, ko+"/", false, 0, func(o Object) error {
		if path.Base(o.Key) == "_metadata" {
			commits = append(commits, o.Key)
		} else {
			objs = append(objs, o.Key)
		}
		return nil
	})
	if err != nil {
		return s.wrap("rename", oldpath, err)
	}
	if len(objs)+len(commits) == 0 && !marker {
		return s.wrap("rename", oldpath, notFound("no such file or directory"))
	}
	s.dirs.forget(ko)
	target := func(k string) string { return kn + "/" + strings.TrimPrefix(k, ko+"/") }
	copyAll := func(list []string) error {
		return parallel(ctx, len(list), func(ctx context.Context, i int) error {
			return s.b.Copy(ctx, list[i], target(list[i]))
		})
	}
	del := func(list []string) error {
		return parallel(ctx, len(list), func(ctx context.Context, i int) error {
			return s.b.Delete(ctx, list[i], Cond{})
		})
	}
	if marker {
		if err := s.b.Mkdir(ctx, kn); err != nil {
			return s.wrap("rename", oldpath, err)
		}
	}
	for _, step := range []func() error{
		func() error { return copyAll(objs) },
		func() error { return copyAll(commits) },
		func() error { return del(commits) },
		func() error { return del(objs) },
	} {
		if err := step(); err != nil {
			return s.wrap("rename", oldpath, err)
		}
	}
	if marker {
		return s.wrap("rename", oldpath, s.b.Delete(ctx, ko, Cond{}))
	}
	return nil
}

// parallel runs fn for 0..n-1, eight at a time, and returns the first
// error; the others are cancelled.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 8)
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	for i := range n {
		slots <- struct{}{}
		if err := ctx.Err(); err != nil {
			fail(err)
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := fn(ctx, i); err != nil {
				fail(err)
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}
