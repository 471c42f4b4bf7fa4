package migrate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"slices"
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
// local paths canonical (storage.Canonical), so that two spellings of one
// place compare equal.
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
	if canon, err := storage.Canonical(storage.Local(), loc); err == nil {
		loc = canon
	}
	return "file://" + filepath.ToSlash(loc)
}

// destination is a claimed DST with its format's writer, which writes
// through the journal of the write (journal.go).
type destination struct {
	snapshot.Writer
	claim storage.Claim
	st    storage.Storage
	reg   *snapshot.Registry
	path  string // canonical
	loc   string // as the user gave it
	j     *journal
	// staged, when set, is where the new snapshot is written, to be
	// moved in on Commit in place of the old one.
	staged string
}

// Commit commits, puts a staged snapshot in place, and gives the claim
// up; the journal goes last.
func (d *destination) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	ctx2 := context.WithoutCancel(ctx)
	if err := d.Writer.Commit(ctx, s); err != nil {
		return errors.Join(err, d.Writer.Abort(ctx2), d.settle(ctx2), d.claim.Release())
	}
	if d.staged != "" {
		if err := swap(ctx2, d.st, d.j, d.path, d.staged); err != nil {
			// The journal stays: the next writer of DST finishes or undoes
			// what swap left.
			return errors.Join(err, d.claim.Release())
		}
	}
	return errors.Join(d.finish(ctx2), d.claim.Release())
}

// Abort aborts, removes what the write made, and gives the claim up.
func (d *destination) Abort(ctx context.Context) error {
	return errors.Join(d.Writer.Abort(ctx), d.settle(ctx), d.claim.Release())
}

// settle removes what the write made and the snapshot at DST does not
// use, then the journal.
func (d *destination) settle(ctx context.Context) error {
	if d.j == nil {
		return nil
	}
	return d.j.leftovers().settle(ctx, d.reg)
}

// finish ends a committed write: the files of the snapshot it replaced
// that the new one does not use go (a format that replaces its own
// snapshot in place removes them itself; this is for what it leaves),
// its temporary directories too, then the journal.
func (d *destination) finish(ctx context.Context) error {
	l := d.j.leftovers()
	for _, p := range l.of(storage.MadeTemp) {
		if err := d.st.RemoveAll(ctx, p); err != nil {
			return err
		}
	}
	made := map[string]bool{}
	for _, p := range l.of(storage.MadeFile) {
		made[p] = true
	}
	old := &leftovers{st: l.st, dst: l.dst, dir: l.dir}
	for _, m := range l.made {
		if m.Kind == madeOld && !made[m.Path] {
			old.made = append(old.made, m)
		}
	}
	if err := old.removeFiles(ctx, func(string) bool { return true }); err != nil {
		return err
	}
	return l.drop(ctx)
}

// swap replaces the old snapshot at p by the one at staged: the old one
// is moved aside, the new one moved in, and only then the old one
// removed; j records the move first, so that the next writer after a
// killed one finishes or undoes it.
func swap(ctx context.Context, st storage.Storage, j *journal, p, staged string) error {
	old := sibling(p, "old")
	if err := j.record(ctx, storage.Made{Kind: madeMoving, Path: staged}, storage.Made{Kind: madeAside, Path: old}); err != nil {
		return err
	}
	if err := st.Rename(ctx, p, old); err != nil {
		return fmt.Errorf("moving the old snapshot at %s aside: %w (the new one is complete at %s)", st.URI(p), err, st.URI(staged))
	}
	if err := st.Rename(ctx, staged, p); err != nil {
		if back := st.Rename(ctx, old, p); back != nil {
			return fmt.Errorf("putting the new snapshot at %s: %w; the old one is at %s, the new one at %s", st.URI(p), err, st.URI(old), st.URI(staged))
		}
		return fmt.Errorf("putting the new snapshot at %s: %w (the old one is back; the new one is at %s)", st.URI(p), err, st.URI(staged))
	}
	return st.RemoveAll(ctx, old)
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

// Create claims dst for this writer alone and starts a snapshot of format
// f there. It looks before it changes anything, and refuses (changing
// nothing) an existing snapshot unless opts.Force, and, with opts.Force or
// without, anything else: a file that is not a snapshot, a directory that
// holds files no snapshot there uses, a snapshot it cannot read. A forced
// write replaces the snapshot whole and leaves it untouched until the new
// one is committed: the format replaces a snapshot of its own in place,
// and one of another format is replaced by a new one written beside it
// and moved in on Commit. Everything the write makes is first recorded in
// its journal; what a killed writer's journal lists (and only that) is
// removed before the write starts. On Abort nothing of the write is left.
func Create(ctx context.Context, reg *snapshot.Registry, f *snapshot.Format, dst string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	if f.Create == nil {
		return nil, fmt.Errorf("%w: stateutil reads %q but does not write it", snapshot.ErrReadOnly, f.Name)
	}
	st, p, err := reg.Storage.Resolve(ctx, dst)
	if err != nil {
		return nil, err
	}
	if p, err = storage.Canonical(st, p); err != nil {
		return nil, err
	}
	claim, err := st.Claim(ctx, p)
	if err != nil {
		return nil, err
	}
	d := &destination{claim: claim, st: st, reg: reg, path: p, loc: dst}
	if err := d.prepare(ctx, f, opts); err != nil {
		return nil, errors.Join(err, d.settle(context.WithoutCancel(ctx)), claim.Release())
	}
	return d, nil
}

// prepare looks at what DST holds, then, if the write may go on, clears
// what a killed writer left, starts the journal and creates the writer;
// the claim is held.
func (d *destination) prepare(ctx context.Context, f *snapshot.Format, opts snapshot.WriteOptions) error {
	t, dead, err := lookAt(ctx, d.reg, d.st, d.path, d.loc, opts.Force)
	if err != nil {
		return err
	}
	if dead != nil {
		if err := dead.settle(ctx, d.reg); err != nil {
			return err
		}
	}
	if d.j, err = startJournal(ctx, d.st, d.path); err != nil {
		return err
	}
	target := d.path
	switch {
	case t.old == nil:
	case t.old == f:
		// Replaced in place: the old snapshot's files are the write's to
		// remove once the new one is committed, or its successor's.
		if err := d.j.record(ctx, t.files...); err != nil {
			return err
		}
	default:
		d.staged = sibling(d.path, "replace")
		if err := d.j.record(ctx, storage.Made{Kind: storage.MadeTemp, Path: d.staged}); err != nil {
			return err
		}
		target, opts.Force = d.staged, false
	}
	d.Writer, err = f.Create(ctx, storage.Recording(d.st, d.j.record), target, opts)
	return err
}

// found is what a write finds at its destination.
type found struct {
	// old is the format of the snapshot there, nil when there is none;
	// files are its files, as the journal lists them (madeOld).
	old   *snapshot.Format
	files []storage.Made
}

// lookAt reads what p holds, and the journal of a writer of p that was
// killed (nil if none), and refuses, changing nothing, what a write must
// not replace: a snapshot unless force, and, force or not, anything that
// is not a snapshot, or files beside one that it does not use (what the
// killed writer's journal lists aside), or a snapshot that cannot be
// read, whose files cannot be told from others'. A snapshot a killed
// forced write moved aside counts as at p.
func lookAt(ctx context.Context, reg *snapshot.Registry, st storage.Storage, p, loc string, force bool) (*found, *leftovers, error) {
	dead, err := readJournal(ctx, st, p)
	if err != nil {
		return nil, nil, err
	}
	at, err := dead.aside(ctx, reg)
	if err != nil {
		return nil, nil, err
	}
	movedAside := ""
	if at != "" {
		movedAside = fmt.Sprintf(" (moved aside to %s by a forced write that was killed; it is moved back before anything is written)", st.URI(at))
	} else {
		at = p
	}
	info, err := st.Stat(ctx, at)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return &found{}, dead, nil
	case err != nil:
		return nil, nil, err
	case info.Special:
		return nil, nil, fmt.Errorf("%w: %q is %w", ErrBadDestination, loc, storage.ErrNotRegular)
	}
	old, _, _, detectErr := reg.Detect(ctx, st.URI(at))
	switch {
	case errors.Is(detectErr, storage.ErrNotRegular):
		return nil, nil, fmt.Errorf("%w: %w", ErrBadDestination, detectErr)
	case detectErr != nil && !errors.Is(detectErr, snapshot.ErrNotFound) && !errors.Is(detectErr, snapshot.ErrCorrupt):
		return nil, nil, detectErr
	}
	if !info.IsDir {
		if detectErr != nil {
			return nil, nil, fmt.Errorf("%w: %q already exists and is not a snapshot (%v); write somewhere else (--force replaces only a snapshot)", ErrBadDestination, loc, detectErr)
		}
		if !force {
			return nil, nil, fmt.Errorf("%w: %q already holds a %s snapshot%s (--force replaces it)", storage.ErrExist, loc, old.Name, movedAside)
		}
		return &found{old: old, files: []storage.Made{{Kind: madeOld, Path: p}}}, dead, nil
	}
	if detectErr != nil {
		others, err := strangers(ctx, st, at, dead, nil)
		if err != nil {
			return nil, nil, err
		}
		if len(others) == 0 {
			return &found{}, dead, nil
		}
		why := ""
		if errors.Is(detectErr, snapshot.ErrCorrupt) {
			why = fmt.Sprintf(" (%v)", detectErr)
		}
		return nil, nil, fmt.Errorf("%w: %q is a directory that holds no snapshot%s but %s; write to a new or empty directory (--force replaces only a snapshot)",
			ErrBadDestination, loc, why, namesOf(others))
	}
	if meta, err := st.Stat(ctx, path.Join(at, "_metadata")); err != nil || meta.IsDir {
		// A job directory detects as its latest checkpoint; it is not one
		// snapshot to replace.
		return nil, nil, fmt.Errorf("%w: %q is a job directory of checkpoints; write to a new chk-<N> or savepoint directory", ErrBadDestination, loc)
	}
	files, err := snapshotFiles(ctx, reg, st, at)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q already holds a %s snapshot%s that stateutil cannot read (%w), so its files cannot be told from others'; write somewhere else (--force replaces only a snapshot it can read)",
			ErrBadDestination, loc, old.Name, movedAside, err)
	}
	others, err := strangers(ctx, st, at, dead, files)
	if err != nil {
		return nil, nil, err
	}
	if len(others) > 0 {
		return nil, nil, fmt.Errorf("%w: %q holds a %s snapshot%s and files that are not its: %s; move them elsewhere first (--force replaces only a snapshot)",
			ErrBadDestination, loc, old.Name, movedAside, namesOf(others))
	}
	if !force {
		return nil, nil, fmt.Errorf("%w: %q already holds a %s snapshot%s (--force replaces it)", storage.ErrExist, loc, old.Name, movedAside)
	}
	f := &found{old: old}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f.files = append(f.files, storage.Made{Kind: madeOld, Path: path.Join(p, strings.TrimPrefix(name, at+"/"))})
	}
	return f, dead, nil
}

// strangers lists, relative to dir, what is below dir that neither the
// snapshot there uses (keep) nor the journal's writer made: files, and
// directories that hold nothing.
func strangers(ctx context.Context, st storage.Storage, dir string, dead *leftovers, keep map[string]bool) ([]string, error) {
	var out []string
	// walk lists d and returns how many entries it holds.
	var walk func(d string) (int, error)
	walk = func(d string) (int, error) {
		entries, err := st.List(ctx, d)
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			rel := strings.TrimPrefix(e.Path, dir+"/")
			switch {
			case keep[e.Path], dead.ownsWhole(e.Path), !e.IsDir && dead.owns(e.Path, false):
			case e.IsDir:
				n, err := walk(e.Path)
				if err != nil {
					return 0, err
				}
				if n == 0 && !dead.owns(e.Path, true) {
					out = append(out, rel+"/")
				}
			default:
				out = append(out, rel)
			}
		}
		return len(entries), nil
	}
	_, err := walk(dir)
	return out, err
}

// namesOf names a few of many paths for a message.
func namesOf(paths []string) string {
	var names []string
	for _, p := range paths[:min(3, len(paths))] {
		names = append(names, strconv.Quote(p))
	}
	if len(paths) > 3 {
		return fmt.Sprintf("%d entries (%s, ...)", len(paths), strings.Join(names, ", "))
	}
	return strings.Join(names, ", ")
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
