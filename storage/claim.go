package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// TempPrefix starts the name of everything stateutil writes that is not
// (yet) part of a snapshot: pending files, staging directories, claims.
// Whatever carries it inside a destination a writer has claimed is left
// over from a writer that was killed, and may go.
const TempPrefix = ".stateutil-"

// claimName is the file that holds a claim on path: beside it, so that a
// destination that is a single file can be claimed as well as a directory.
func claimName(p string) string {
	dir, base := path.Split(path.Clean(p))
	return dir + TempPrefix + "claim-" + base
}

// claimSet is the claims this process holds. Neither flock (per open
// file) nor an HDFS lease (per client, and the client is shared) tells
// two claims of one process apart.
type claimSet struct {
	mu   sync.Mutex
	held map[string]bool
}

var processClaims = claimSet{held: map[string]bool{}}

// take marks key held; false if it already is.
func (c *claimSet) take(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key] {
		return false
	}
	c.held[key] = true
	return true
}

func (c *claimSet) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, key)
}

type localClaim struct {
	f     *os.File
	path  string
	inode *os.File // the destination itself, when it exists
	keys  []string // in processClaims
	once  sync.Once
	err   error
}

// Claim on local disk is an exclusive flock on a file beside the
// canonical path (see Canonical), which the kernel drops when the process
// dies, and, when something is there already, one on that file or
// directory itself: so that two names of one place (symbolic links, "..",
// a bind mount, a hard link) are one claim. The file beside is removed on
// Release; a claimer that locked a file another one removed meanwhile
// tries again.
func (local) Claim(_ context.Context, p string) (Claim, error) {
	canon, err := canonicalLocal(p)
	if err != nil {
		return nil, err
	}
	name := filepath.FromSlash(claimName(filepath.ToSlash(canon)))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, fmt.Errorf("claim %q: %w", p, localErr(err))
	}
	if !processClaims.take(name) {
		return nil, fmt.Errorf("%q: %w (by this process)", p, ErrInUse)
	}
	c, err := lockLocal(p, name)
	if err != nil {
		processClaims.drop(name)
		return nil, err
	}
	c.keys = []string{name}
	if err := c.lockInode(p, canon); err != nil {
		return nil, errors.Join(err, c.Release())
	}
	return c, nil
}

func lockLocal(p, name string) (*localClaim, error) {
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("claim %q: %w", p, localErr(err))
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(name)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%q: %w%s", p, ErrInUse, describeHolder(holder))
			}
			return nil, fmt.Errorf("claim %q: %w", p, err)
		}
		// The previous holder may have removed the file between our open
		// and our lock: then we hold a lock on nothing.
		held, err1 := f.Stat()
		now, err2 := os.Stat(name)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d on %s\n", os.Getpid(), host)), 0)
		return &localClaim{f: f, path: name}, nil
	}
}

// lockInode locks what is at canon, if anything: a directory or a
// regular file, by device and inode, which every name of it shares.
func (c *localClaim) lockInode(p, canon string) error {
	fi, err := os.Stat(canon)
	if err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
		return nil // nothing there yet, or a FIFO the writer refuses
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	key := fmt.Sprintf("inode %d:%d", st.Dev, st.Ino)
	if !processClaims.take(key) {
		return fmt.Errorf("%q: %w (by this process, under another name)", p, ErrInUse)
	}
	c.keys = append(c.keys, key)
	f, err := openNonBlocking(canon)
	if errors.Is(err, fs.ErrPermission) {
		return nil // unreadable: the name's claim is all there is
	}
	if err != nil {
		return fmt.Errorf("claim %q: %w", p, localErr(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%q: %w (under another name of it)", p, ErrInUse)
		}
		return fmt.Errorf("claim %q: %w", p, err)
	}
	c.inode = f
	return nil
}

func describeHolder(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" || len(s) > 200 {
		return ""
	}
	if pid, ok := strings.CutPrefix(s, "pid "); ok {
		if n, _, _ := strings.Cut(pid, " "); n != "" {
			if _, err := strconv.Atoi(n); err == nil {
				return " (" + s + ")"
			}
		}
	}
	return ""
}

func (c *localClaim) Release() error {
	c.once.Do(func() {
		defer func() {
			for _, k := range c.keys {
				processClaims.drop(k)
			}
		}()
		if c.inode != nil {
			c.inode.Close()
		}
		// Remove while still locked, so that nobody locks the old file
		// after we let go of it without noticing it is gone.
		if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.err = err
		}
		if err := c.f.Close(); err != nil && c.err == nil {
			c.err = err
		}
	})
	return c.err
}
