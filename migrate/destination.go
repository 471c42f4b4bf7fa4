package migrate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// ErrBadDestination reports a destination the copy must not write to:
// missing, the source itself, inside it or above it, or a directory that
// holds files that are not a snapshot.
var ErrBadDestination = errors.New("bad destination")

// CheckLocations refuses a missing DST, and a DST that is SRC, lies inside
// it (writing there would change SRC) or contains it (a forced replace
// would remove it). It looks at names only; see Create for what is there.
func CheckLocations(src, dst string) error {
	if dst == "" {
		return fmt.Errorf("%w: no destination given", ErrBadDestination)
	}
	s, d := NormalizeLocation(src), NormalizeLocation(dst)
	switch {
	case d == s:
		return fmt.Errorf("%w: %q is the source itself; write somewhere else", ErrBadDestination, dst)
	case strings.HasPrefix(d, strings.TrimSuffix(s, "/")+"/"):
		return fmt.Errorf("%w: %q lies inside the source %q; write somewhere else", ErrBadDestination, dst, src)
	case strings.HasPrefix(s, strings.TrimSuffix(d, "/")+"/"):
		return fmt.Errorf("%w: %q contains the source %q; write somewhere else", ErrBadDestination, dst, src)
	}
	return nil
}

// NormalizeLocation renders a location as scheme://host/clean/absolute/path,
// local paths absolute with symlinks resolved, so that two spellings of
// one place compare equal.
func NormalizeLocation(loc string) string {
	if strings.Contains(loc, "://") {
		if u, err := url.Parse(loc); err == nil {
			if u.Scheme == "file" {
				loc = u.Path
			} else {
				return u.Scheme + "://" + u.Host + path.Clean("/"+u.Path)
			}
		}
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	loc = realPath(loc)
	return "file://" + filepath.ToSlash(loc)
}

// realPath resolves symlinks in p, or in its longest existing parent when
// p does not exist yet.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(realPath(parent), filepath.Base(p))
}

// destination is a claimed DST with its format's writer.
type destination struct {
	snapshot.Writer
	claim storage.Claim
	st    storage.Storage
	path  string
	// existed is whether something was at path before; staged, when set,
	// is where the new snapshot is written to replace it on Commit.
	existed bool
	staged  string
	marked  bool // writingMarker is in the directory written
}

// Commit commits, puts a staged snapshot in place, and gives the claim up.
func (d *destination) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	err := d.Writer.Commit(ctx, s)
	switch {
	case err != nil:
		err = errors.Join(err, d.Writer.Abort(context.WithoutCancel(ctx)), d.cleanUp(context.WithoutCancel(ctx)))
	case d.staged != "":
		err = d.swap(context.WithoutCancel(ctx))
		fallthrough
	default:
		err = errors.Join(err, d.unmark(context.WithoutCancel(ctx)))
	}
	return errors.Join(err, d.claim.Release())
}

// Abort aborts, removes what the writer made, and gives the claim up.
func (d *destination) Abort(ctx context.Context) error {
	return errors.Join(d.Writer.Abort(ctx), d.cleanUp(ctx), d.claim.Release())
}

// cleanUp removes what an aborted write made: the staged snapshot, or the
// destination itself when nothing was there before.
func (d *destination) cleanUp(ctx context.Context) error {
	switch {
	case d.staged != "":
		return d.st.RemoveAll(ctx, d.staged)
	case !d.existed:
		return d.st.RemoveAll(ctx, d.path)
	}
	return d.unmark(ctx)
}

// mark puts writingMarker into the directory the writer writes, if it
// writes one: a writer killed before Commit or Abort leaves it, and the
// next writer of the destination then knows what is not a snapshot's.
func (d *destination) mark(ctx context.Context) error {
	target := cmpOr(d.staged, d.path)
	if info, err := d.st.Stat(ctx, target); err != nil || !info.IsDir {
		return nil
	}
	host, _ := os.Hostname()
	if err := storage.WriteFile(ctx, d.st, path.Join(target, writingMarker), fmt.Appendf(nil, "pid %d on %s\n", os.Getpid(), host)); err != nil {
		return err
	}
	d.marked = true
	return nil
}

func (d *destination) unmark(ctx context.Context) error {
	if !d.marked {
		return nil
	}
	err := d.st.Remove(ctx, path.Join(d.path, writingMarker))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// swap replaces the old snapshot by the staged one: the old one is moved
// aside, the new one moved in, and only then the old one removed.
func (d *destination) swap(ctx context.Context) error {
	old := sibling(d.path, "old")
	if err := d.st.Rename(ctx, d.path, old); err != nil {
		return fmt.Errorf("moving the old snapshot at %s aside: %w (the new one is complete at %s)", d.st.URI(d.path), err, d.st.URI(d.staged))
	}
	if err := d.st.Rename(ctx, d.staged, d.path); err != nil {
		if back := d.st.Rename(ctx, old, d.path); back != nil {
			return fmt.Errorf("putting the new snapshot at %s: %w; the old one is at %s, the new one at %s", d.st.URI(d.path), err, d.st.URI(old), d.st.URI(d.staged))
		}
		return fmt.Errorf("putting the new snapshot at %s: %w (the old one is back; the new one is at %s)", d.st.URI(d.path), err, d.st.URI(d.staged))
	}
	return d.st.RemoveAll(ctx, old)
}

// sibling names a temporary neighbour of p for role (staged new, old
// moved aside), carrying storage.TempPrefix and p's base name.
func sibling(p, role string) string {
	dir, base := path.Split(path.Clean(p))
	var b [4]byte
	_, _ = rand.Read(b[:])
	return dir + storage.TempPrefix + role + "-" + hex.EncodeToString(b[:]) + "-" + base
}

// isSibling reports whether name is a sibling(…, role) of base, or a
// storage pending file of it (role "tmp").
func isSibling(name, role, base string) bool {
	rest, ok := strings.CutPrefix(name, storage.TempPrefix+role+"-")
	if !ok {
		return false
	}
	random, b, ok := strings.Cut(rest, "-")
	return ok && random != "" && b == base
}

// writingMarker, inside a destination directory, says a writer is (or
// was, if it is there without one) writing it.
const writingMarker = storage.TempPrefix + "writing"

// Create claims dst for this writer alone and starts a snapshot of format
// f there. An existing snapshot is refused unless opts.Force; a forced
// write replaces it whole and leaves it untouched until the new one is
// committed: the format replaces a snapshot of its own, and one of another
// format is replaced by a new one written beside it and moved in on
// Commit. A directory that holds anything but a snapshot is refused, and
// what a killed writer left behind (names with storage.TempPrefix) is
// removed. On Abort nothing of the write is left.
func Create(ctx context.Context, reg *snapshot.Registry, f *snapshot.Format, dst string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	if f.Create == nil {
		return nil, fmt.Errorf("%w: stateutil reads %q but does not write it", snapshot.ErrReadOnly, f.Name)
	}
	st, p, err := reg.Storage.Resolve(ctx, dst)
	if err != nil {
		return nil, err
	}
	claim, err := st.Claim(ctx, p)
	if err != nil {
		return nil, err
	}
	d := &destination{claim: claim, st: st, path: p}
	if err := d.prepare(ctx, reg, dst, f, opts); err != nil {
		return nil, errors.Join(err, claim.Release())
	}
	if err := d.mark(ctx); err != nil {
		return nil, errors.Join(err, d.Abort(context.WithoutCancel(ctx)))
	}
	return d, nil
}

// prepare looks at what dst holds, clears what may go, and creates the
// writer; the claim is held.
func (d *destination) prepare(ctx context.Context, reg *snapshot.Registry, dst string, f *snapshot.Format, opts snapshot.WriteOptions) error {
	st, p := d.st, d.path
	if err := removeStaged(ctx, st, p); err != nil {
		return err
	}
	info, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		d.Writer, err = f.Create(ctx, st, p, opts)
		return err
	case err != nil:
		return err
	case info.Special:
		return fmt.Errorf("%w: %q is %w", ErrBadDestination, dst, storage.ErrNotRegular)
	}
	if info.IsDir {
		if err := removeDeadWrite(ctx, reg, st, p, dst); err != nil {
			return err
		}
		if info, err = st.Stat(ctx, p); errors.Is(err, storage.ErrNotFound) {
			d.Writer, err = f.Create(ctx, st, p, opts)
			return err
		}
		if err := removeLeftovers(ctx, st, p); err != nil {
			return err
		}
	}
	d.existed = true
	old, _, _, detectErr := reg.Detect(ctx, dst)
	if detectErr == nil && info.IsDir {
		// A job directory detects as its latest checkpoint; it is not one
		// snapshot to replace.
		if meta, err := st.Stat(ctx, path.Join(p, "_metadata")); err != nil || meta.IsDir {
			return fmt.Errorf("%w: %q is a job directory of checkpoints; write to a new chk-<N> or savepoint directory", ErrBadDestination, dst)
		}
	}
	switch {
	case detectErr == nil && !opts.Force:
		return fmt.Errorf("%w: %q already holds a %s snapshot (--force replaces it)", storage.ErrExist, dst, old.Name)
	case detectErr == nil && old == f:
		d.Writer, err = f.Create(ctx, st, p, opts)
		return err
	case detectErr == nil, errors.Is(detectErr, snapshot.ErrCorrupt) && opts.Force:
		// Another format, or a damaged snapshot: the new one is written
		// beside it and moved in on Commit.
		d.staged = sibling(p, "replace")
		opts.Force = false
		d.Writer, err = f.Create(ctx, st, d.staged, opts)
		return err
	case info.IsDir:
		entries, err := st.List(ctx, p)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			return fmt.Errorf("%w: %q is a directory that holds no snapshot but %s; write to a new or empty directory",
				ErrBadDestination, dst, someNames(entries))
		}
		d.Writer, err = f.Create(ctx, st, p, opts)
		return err
	case errors.Is(detectErr, snapshot.ErrCorrupt):
		return fmt.Errorf("%w: %q already holds a file that is not a readable snapshot (--force replaces it)", storage.ErrExist, dst)
	}
	return fmt.Errorf("%w: %q: %w", ErrBadDestination, dst, detectErr)
}

// someNames names a directory's first entries for a message.
func someNames(entries []storage.Info) string {
	var names []string
	for _, e := range entries[:min(3, len(entries))] {
		names = append(names, strconv.Quote(e.Name))
	}
	if len(entries) > 3 {
		return fmt.Sprintf("%d entries (%s, ...)", len(entries), strings.Join(names, ", "))
	}
	return strings.Join(names, ", ")
}

// removeStaged removes the staged and moved-aside neighbours of p, and
// its pending files, that a killed writer of p left.
func removeStaged(ctx context.Context, st storage.Storage, p string) error {
	dir, base := path.Split(path.Clean(p))
	entries, err := st.List(ctx, path.Clean(dir+"."))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		for _, role := range []string{"replace", "old", "tmp"} {
			if isSibling(e.Name, role, base) {
				if err := st.RemoveAll(ctx, e.Path); err != nil {
					return fmt.Errorf("removing %s, left by an earlier writer: %w", st.URI(e.Path), err)
				}
			}
		}
	}
	return nil
}

// removeDeadWrite clears what a writer killed while writing the directory
// p left (it left writingMarker there): everything, when p holds no
// snapshot, else every file the snapshot does not reference.
func removeDeadWrite(ctx context.Context, reg *snapshot.Registry, st storage.Storage, p, dst string) error {
	if _, err := st.Stat(ctx, path.Join(p, writingMarker)); err != nil {
		return nil
	}
	r, err := reg.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		if err := st.RemoveAll(ctx, p); err != nil {
			return fmt.Errorf("removing what a killed writer left at %s: %w", st.URI(p), err)
		}
		return nil
	}
	keep := map[string]bool{path.Join(p, "_metadata"): true}
	if c, ok := r.(snapshot.CompanionFiler); ok {
		for _, name := range c.CompanionFiles() {
			keep[path.Join(p, name)] = true
		}
	}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, f := range sub.Files {
				keep[path.Join(p, f.Path)] = true
			}
		}
	}
	r.Close()
	return removeUnkept(ctx, st, p, keep)
}

// removeUnkept removes every file below dir not in keep, and directories
// left empty.
func removeUnkept(ctx context.Context, st storage.Storage, dir string, keep map[string]bool) error {
	entries, err := st.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch {
		case e.IsDir:
			if err := removeUnkept(ctx, st, e.Path, keep); err != nil {
				return err
			}
			if left, err := st.List(ctx, e.Path); err == nil && len(left) == 0 {
				_ = st.Remove(ctx, e.Path)
			}
		case !keep[e.Path]:
			if err := st.Remove(ctx, e.Path); err != nil {
				return fmt.Errorf("removing %s, left by a killed writer: %w", st.URI(e.Path), err)
			}
		}
	}
	return nil
}

// removeLeftovers removes, anywhere below dir, the files and directories
// whose names start with storage.TempPrefix: what a killed writer left.
func removeLeftovers(ctx context.Context, st storage.Storage, dir string) error {
	entries, err := st.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name, storage.TempPrefix):
			if err := st.RemoveAll(ctx, e.Path); err != nil {
				return fmt.Errorf("removing %s, left by an earlier writer: %w", st.URI(e.Path), err)
			}
		case e.IsDir:
			if err := removeLeftovers(ctx, st, e.Path); err != nil {
				return err
			}
		}
	}
	return nil
}
