package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Canonical is the one spelling of the place p names in st, whatever
// spelling p is: on local disk an absolute path with every symbolic link
// and ".." resolved as the kernel resolves them when it opens p (a link
// to a place that does not exist yet is followed too); elsewhere the
// cleaned path (HDFS and S3 have no links). Two writers that claim and
// write canonical paths cannot reach one place by two names.
func Canonical(st Storage, p string) (string, error) {
	if IsLocal(st) {
		return canonicalLocal(p)
	}
	return path.Clean("/" + p), nil
}

// maxLinks bounds the symbolic links followed, as the kernel's ELOOP.
const maxLinks = 255

func canonicalLocal(p string) (string, error) {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = filepath.ToSlash(wd) + "/" + p
	}
	resolved, rest, links := "/", strings.Split(p, "/"), 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// resolved has no links left in it: its parent is the
			// parent the kernel finds.
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, c)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			// Nothing there yet: the rest is made as it is spelled.
			resolved = next
			continue
		case err != nil:
			return "", fmt.Errorf("resolving %q: %w", p, localErr(err))
		case fi.Mode()&fs.ModeSymlink == 0:
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("resolving %q: more than %d symbolic links", p, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolving %q: %w", p, localErr(err))
		}
		target = filepath.ToSlash(target)
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.FromSlash(resolved), nil
}
