package migrate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
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
}

// Commit commits and gives the claim up.
func (d *destination) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	err := d.Writer.Commit(ctx, s)
	if err != nil {
		_ = d.Writer.Abort(context.WithoutCancel(ctx))
	}
	return errors.Join(err, d.claim.Release())
}

// Abort aborts and gives the claim up.
func (d *destination) Abort(ctx context.Context) error {
	return errors.Join(d.Writer.Abort(ctx), d.claim.Release())
}

// Create claims dst for this writer alone and starts a snapshot of format
// f there. An existing snapshot is refused unless opts.Force; a forced
// write replaces it whole: one of the same format is replaced by the
// format (the old one stays readable until the new one commits), one of
// another format is removed first. A directory that holds anything but a
// snapshot is refused, and what a killed writer left behind (names with
// storage.TempPrefix) is removed.
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
	w, err := prepare(ctx, reg, st, p, dst, f, opts)
	if err != nil {
		return nil, errors.Join(err, claim.Release())
	}
	return &destination{Writer: w, claim: claim}, nil
}

// prepare looks at what dst holds, clears what may go, and creates the
// writer; the claim is held.
func prepare(ctx context.Context, reg *snapshot.Registry, st storage.Storage, p, dst string, f *snapshot.Format, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	info, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return f.Create(ctx, st, p, opts)
	case err != nil:
		return nil, err
	case info.Special:
		return nil, fmt.Errorf("%w: %q is %w", ErrBadDestination, dst, storage.ErrNotRegular)
	}
	if info.IsDir {
		if err := removeLeftovers(ctx, st, p); err != nil {
			return nil, err
		}
	}
	old, _, _, detectErr := reg.Detect(ctx, dst)
	if detectErr == nil && info.IsDir {
		// A job directory detects as its latest checkpoint; it is not one
		// snapshot to replace.
		if meta, err := st.Stat(ctx, path.Join(p, "_metadata")); err != nil || meta.IsDir {
			return nil, fmt.Errorf("%w: %q is a job directory of checkpoints; write to a new chk-<N> or savepoint directory", ErrBadDestination, dst)
		}
	}
	switch {
	case detectErr == nil && !opts.Force:
		return nil, fmt.Errorf("%w: %q already holds a %s snapshot (--force replaces it)", storage.ErrExist, dst, old.Name)
	case detectErr == nil && old != f:
		if err := removeSnapshot(ctx, st, p, info.IsDir); err != nil {
			return nil, fmt.Errorf("removing the %s snapshot at %q: %w", old.Name, dst, err)
		}
	case detectErr == nil:
	case errors.Is(detectErr, snapshot.ErrCorrupt) && opts.Force:
		// A damaged snapshot: forced, it goes like any other.
		if err := removeSnapshot(ctx, st, p, info.IsDir); err != nil {
			return nil, fmt.Errorf("removing the damaged snapshot at %q: %w", dst, err)
		}
	case info.IsDir:
		if entries, err := st.List(ctx, p); err != nil {
			return nil, err
		} else if len(entries) > 0 {
			return nil, fmt.Errorf("%w: %q is a directory that holds %d entries but no snapshot (%s, ...); write to a new or empty directory",
				ErrBadDestination, dst, len(entries), entries[0].Name)
		}
	case errors.Is(detectErr, snapshot.ErrCorrupt):
		return nil, fmt.Errorf("%w: %q already holds a file that is not a readable snapshot (--force replaces it)", storage.ErrExist, dst)
	default:
		return nil, fmt.Errorf("%w: %q: %w", ErrBadDestination, dst, detectErr)
	}
	return f.Create(ctx, st, p, opts)
}

// removeSnapshot removes what lies at p: a file, or a directory with all
// it holds (the caller has checked that it is a snapshot).
func removeSnapshot(ctx context.Context, st storage.Storage, p string, dir bool) error {
	if !dir {
		return st.Remove(ctx, p)
	}
	return st.RemoveAll(ctx, p)
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
