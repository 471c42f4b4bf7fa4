package migrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// A write's journal says what a writer of DST makes, recorded before it
// makes it, so that what a killed writer left can be told from what
// others put there, and what it left removed without touching the rest.
// It is a directory beside DST, storage.TempPrefix + "writing-" + DST's
// name, of segments named by their number (000001, 000002, ...), each
// written whole, atomically, and never changed: JSON lines, the first
// {"stateutil_journal":1,"writer":"pid N on HOST"}, then one per thing
// made, its path relative to DST's directory:
//
//	{"made":"file","path":"dst/_metadata"}
//
// Writers that make things at once share a segment. A Commit removes the
// journal last; Abort, and the next writer after a killed one, remove
// what it lists (settle) and then the journal.
const journalVersion = 1

// What else a journal lists, beside storage's kinds: a file of the
// snapshot a forced write replaces, which it may remove; the old snapshot
// moved aside while the new one is moved in; and where the new one is
// moved in from, whose files at DST, if the move is cut short, are the
// write's.
const (
	madeOld    storage.MadeKind = "old"
	madeAside  storage.MadeKind = "aside"
	madeMoving storage.MadeKind = "moving"
)

// segmentEntries bounds the entries of one segment (a forced write of a
// snapshot of many files records them all at once), so that it stays well
// below maxSegment, which bounds a segment read.
const (
	segmentEntries = 10_000
	maxSegment     = 64 << 20
)

// journalDir is the journal of the writes to p.
func journalDir(p string) string {
	dir, base := path.Split(path.Clean(p))
	return dir + storage.TempPrefix + "writing-" + base
}

// isSegment reports whether name is a journal segment's.
func isSegment(name string) bool {
	return len(name) >= 6 && strings.Trim(name, "0123456789") == ""
}

// isPendingSegment reports whether name is a segment's pending file.
func isPendingSegment(name string) bool {
	seg := name[strings.LastIndex(name, "-")+1:]
	return isSegment(seg) && isSibling(name, "tmp", seg)
}

// journal is the journal of one writer, safe for concurrent use: those
// who record at once wait for one segment that holds all they made.
type journal struct {
	st   storage.Storage
	dst  string
	dir  string
	mu   sync.Mutex
	cond *sync.Cond
	// listed is what has been recorded or is queued; queue is what the
	// next segment holds; queued and flushed count records and those
	// written; next numbers the next segment; err is the first failure,
	// after which nothing is recorded.
	listed          map[storage.Made]bool
	made            []storage.Made
	queue           []storage.Made
	queued, flushed int
	flushing        bool
	next            int
	err             error
}

// startJournal starts the journal of a write to p; no journal may be
// there (settle a killed writer's first).
func startJournal(ctx context.Context, st storage.Storage, p string) (*journal, error) {
	j := &journal{st: st, dst: path.Clean(p), dir: journalDir(p), listed: map[storage.Made]bool{}, next: 1}
	j.cond = sync.NewCond(&j.mu)
	if err := st.MkdirAll(ctx, j.dir); err != nil {
		return nil, err
	}
	return j, nil
}

// record writes down what is about to be made, in one segment with
// what others record meanwhile, and returns once it is written.
func (j *journal) record(ctx context.Context, made ...storage.Made) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range made {
		m.Path = path.Clean(m.Path)
		if j.err == nil && !j.listed[m] {
			if _, err := j.rel(m.Path); err != nil {
				return err
			}
			j.listed[m] = true
			j.queue = append(j.queue, m)
			j.queued++
		}
	}
	mine := j.queued
	for j.flushed < mine && j.err == nil {
		if j.flushing {
			j.cond.Wait()
			continue
		}
		batch, upto, seq := j.queue, j.queued, j.next
		j.queue, j.flushing = nil, true
		j.next += (len(batch) + segmentEntries - 1) / segmentEntries
		j.mu.Unlock()
		var err error
		for start := 0; start < len(batch) && err == nil; start += segmentEntries {
			err = j.write(ctx, seq, batch[start:min(start+segmentEntries, len(batch))])
			seq++
		}
		j.mu.Lock()
		j.flushing = false
		if err != nil {
			j.err = fmt.Errorf("recording what the write makes in %s: %w", j.st.URI(j.dir), err)
		} else {
			j.flushed = upto
			j.made = append(j.made, batch...)
		}
		j.cond.Broadcast()
	}
	return j.err
}

// rel is p relative to the destination's directory.
func (j *journal) rel(p string) (string, error) {
	dir := path.Dir(j.dst)
	rel, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
	if !ok || rel == "" {
		return "", fmt.Errorf("a writer of %s makes %s, outside its directory", j.st.URI(j.dst), j.st.URI(p))
	}
	return rel, nil
}

func (j *journal) write(ctx context.Context, seq int, batch []storage.Made) error {
	host, _ := os.Hostname()
	var b bytes.Buffer
	head, _ := json.Marshal(struct {
		Version int    `json:"stateutil_journal"`
		Writer  string `json:"writer"`
	}{journalVersion, fmt.Sprintf("pid %d on %s", os.Getpid(), host)})
	b.Write(head)
	b.WriteByte('\n')
	for _, m := range batch {
		rel, _ := j.rel(m.Path)
		line, _ := json.Marshal(storage.Made{Kind: m.Kind, Path: rel})
		b.Write(line)
		b.WriteByte('\n')
	}
	return storage.WriteFileVolatile(context.WithoutCancel(ctx), j.st, path.Join(j.dir, fmt.Sprintf("%06d", seq)), b.Bytes())
}

// leftovers is what the journal lists, as a killed writer would have left
// it.
func (j *journal) leftovers() *leftovers {
	j.mu.Lock()
	defer j.mu.Unlock()
	return &leftovers{st: j.st, dst: j.dst, dir: j.dir, made: slices.Clone(j.made)}
}

// leftovers is what a journal lists: what its writer made, or may have,
// and may be left where it was killed.
type leftovers struct {
	st   storage.Storage
	dst  string
	dir  string
	made []storage.Made
}

// readJournal reads the journal a writer of p left, nil if there is none.
func readJournal(ctx context.Context, st storage.Storage, p string) (*leftovers, error) {
	l := &leftovers{st: st, dst: path.Clean(p), dir: journalDir(p)}
	entries, err := st.List(ctx, l.dir)
	switch {
	case errors.Is(err, storage.ErrNotFound), err == nil && len(entries) == 0:
		return nil, nil
	case err != nil:
		return nil, err
	}
	for _, e := range entries {
		switch {
		case isSegment(e.Name) && !e.IsDir && !e.Special:
			if err := l.readSegment(ctx, e.Path); err != nil {
				return nil, err
			}
		case isPendingSegment(e.Name):
			// A segment its writer was killed writing: nothing it lists
			// was made.
		default:
			return nil, fmt.Errorf("%w: %s, the journal of a write to %s, holds %q, which no writer of stateutil puts there; remove the journal after checking what it holds",
				ErrBadDestination, st.URI(l.dir), st.URI(p), e.Name)
		}
	}
	return l, nil
}

func (l *leftovers) readSegment(ctx context.Context, p string) error {
	data, err := storage.ReadAll(ctx, l.st, p, maxSegment)
	if err != nil {
		return err
	}
	file := l.st.URI(p)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxSegment)
	var offset int64
	for n := 0; sc.Scan(); n++ {
		line := sc.Bytes()
		at := offset
		offset += int64(len(line)) + 1
		if n == 0 {
			var head struct {
				Version *int `json:"stateutil_journal"`
			}
			switch err := json.Unmarshal(line, &head); {
			case err != nil || head.Version == nil:
				return snapshot.Corrupt(file, at, "not a journal of stateutil's writes")
			case *head.Version != journalVersion:
				return fmt.Errorf("%w: %s is a journal of version %d; this stateutil reads version %d", snapshot.ErrUnsupportedVersion, file, *head.Version, journalVersion)
			}
			continue
		}
		var m storage.Made
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return snapshot.Corrupt(file, at, "journal entry: %v", err)
		}
		if err := checkMade(m); err != nil {
			return snapshot.Corrupt(file, at, "journal entry %q: %v", line, err)
		}
		m.Path = path.Join(path.Dir(l.dst), m.Path)
		l.made = append(l.made, m)
	}
	return nil
}

// checkMade refuses a journal entry no writer makes: a path that is not
// plain and relative, an unknown kind, and under a name without
// storage.TempPrefix a directory that goes whole.
func checkMade(m storage.Made) error {
	if m.Path == "" || path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || m.Path == ".." || strings.HasPrefix(m.Path, "../") {
		return errors.New("not a plain relative path")
	}
	switch m.Kind {
	case storage.MadeFile, storage.MadeDir, madeOld:
	case storage.MadeTemp, madeAside:
		if !strings.HasPrefix(path.Base(m.Path), storage.TempPrefix) {
			return fmt.Errorf("a %s without the prefix %s", m.Kind, storage.TempPrefix)
		}
	case madeMoving:
		if !strings.HasPrefix(m.Path, storage.TempPrefix) && !strings.Contains(m.Path, "/"+storage.TempPrefix) {
			return fmt.Errorf("a %s outside a directory with the prefix %s", m.Kind, storage.TempPrefix)
		}
	default:
		return fmt.Errorf("unknown kind %q", m.Kind)
	}
	return nil
}

// of lists the paths of kind.
func (l *leftovers) of(kind storage.MadeKind) []string {
	var out []string
	for _, m := range l.made {
		if m.Kind == kind {
			out = append(out, m.Path)
		}
	}
	return out
}

// aside is where the killed writer moved the old snapshot at DST while
// it moved the new one in, if it is there and DST holds no snapshot: the
// move was cut short, and the old snapshot is still the one.
func (l *leftovers) aside(ctx context.Context, reg *snapshot.Registry) (string, error) {
	if l == nil {
		return "", nil
	}
	for _, p := range l.of(madeAside) {
		switch _, err := l.st.Stat(ctx, p); {
		case errors.Is(err, storage.ErrNotFound):
			continue
		case err != nil:
			return "", err
		}
		in, err := l.movedIn(ctx, reg)
		if err != nil || in {
			return "", err
		}
		return p, nil
	}
	return "", nil
}

// movedIn reports whether DST holds a snapshot (the new one, moved in
// whole: a move puts the metadata last).
func (l *leftovers) movedIn(ctx context.Context, reg *snapshot.Registry) (bool, error) {
	_, _, _, err := reg.Detect(ctx, l.st.URI(l.dst))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, snapshot.ErrNotFound), errors.Is(err, snapshot.ErrCorrupt):
		return false, nil
	}
	return false, err
}

// owns reports whether the entry at p (a directory if dir) is one the
// journal's writer made: listed, below a directory that goes whole, or a
// pending file of a listed file. A listed directory is its writer's, not
// what is in it.
func (l *leftovers) owns(p string, dir bool) bool {
	if l == nil {
		return false
	}
	for _, m := range l.made {
		switch m.Kind {
		case storage.MadeFile, madeOld:
			if !dir && (p == m.Path || (path.Dir(p) == path.Dir(m.Path) && isSibling(path.Base(p), "tmp", path.Base(m.Path)))) {
				return true
			}
		case storage.MadeDir:
			if dir && p == m.Path {
				return true
			}
		}
	}
	return l.ownsWhole(p)
}

// ownsWhole reports whether p is, or lies below, a directory the
// journal's writer made to go whole (temporary, or the old snapshot
// moved aside).
func (l *leftovers) ownsWhole(p string) bool {
	if l == nil {
		return false
	}
	for _, m := range l.made {
		if (m.Kind == storage.MadeTemp || m.Kind == madeAside) && (p == m.Path || strings.HasPrefix(p, m.Path+"/")) {
			return true
		}
	}
	return false
}

// settle removes what the journal's writer left: a move it cut short is
// undone (the old snapshot back at DST) or finished (the old one
// removed); its temporary directories go; every file it made or could
// have removed goes unless the snapshot at DST uses it; its directories
// go if they are empty; then the journal. Nothing it does not list is
// touched. A snapshot at DST that cannot be read stops it: what is the
// snapshot's cannot be told.
func (l *leftovers) settle(ctx context.Context, reg *snapshot.Registry) error {
	if err := l.undoMove(ctx, reg); err != nil {
		return err
	}
	for _, p := range l.of(storage.MadeTemp) {
		if err := l.st.RemoveAll(ctx, p); err != nil {
			return fmt.Errorf("removing %s, left by a killed write: %w", l.st.URI(p), err)
		}
	}
	keep, err := snapshotFiles(ctx, reg, l.st, l.dst)
	if err != nil {
		return fmt.Errorf("%w; a killed write left files at %s that only it can tell from the snapshot's", err, l.st.URI(l.dst))
	}
	if err := l.removeFiles(ctx, func(p string) bool { return !keep[p] }); err != nil {
		return err
	}
	return l.drop(ctx)
}

// undoMove finishes or undoes the replacement of DST that the journal's
// writer was killed in: with the new snapshot at DST (moved in whole) the
// old one moved aside goes; else what a cut-short move left at DST (files
// of the new snapshot, or of the old one: on an object store a move is a
// copy, file by file) goes, and the old snapshot is moved back.
func (l *leftovers) undoMove(ctx context.Context, reg *snapshot.Registry) error {
	for _, p := range l.of(madeAside) {
		if _, err := l.st.Stat(ctx, p); errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		in, err := l.movedIn(ctx, reg)
		if err != nil {
			return err
		}
		if in {
			if err := l.st.RemoveAll(ctx, p); err != nil {
				return fmt.Errorf("removing the old snapshot at %s, which a killed write replaced: %w", l.st.URI(p), err)
			}
			continue
		}
		switch _, err := l.st.Stat(ctx, l.dst); {
		case err == nil:
			if err := removePartial(ctx, l.st, l.dst, append(l.of(madeMoving), p)...); err != nil {
				return err
			}
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		if err := l.st.Rename(ctx, p, l.dst); err != nil {
			return fmt.Errorf("moving the snapshot a killed write moved aside to %s back: %w", l.st.URI(p), err)
		}
	}
	return nil
}

// removeFiles removes the listed files (made or old) that gone allows,
// with the pending files of each, and then the listed directories and
// the old snapshot's that are left empty.
func (l *leftovers) removeFiles(ctx context.Context, gone func(string) bool) error {
	byDir := map[string]bool{}
	dirs := l.of(storage.MadeDir)
	for _, m := range l.made {
		if m.Kind == storage.MadeFile || m.Kind == madeOld {
			byDir[path.Dir(m.Path)] = true
			if m.Kind == madeOld && path.Dir(m.Path) != l.dst && strings.HasPrefix(m.Path, l.dst+"/") {
				dirs = append(dirs, path.Dir(m.Path))
			}
		}
	}
	for dir := range byDir {
		entries, err := l.st.List(ctx, dir)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir || !l.owns(e.Path, false) || (l.listedFile(e.Path) && !gone(e.Path)) {
				continue
			}
			if err := l.st.Remove(ctx, e.Path); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("removing %s, left by a write: %w", l.st.URI(e.Path), err)
			}
		}
	}
	// Deepest first, so that a directory's emptied subdirectories go
	// before it is looked at.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, dir := range slices.Compact(dirs) {
		if entries, err := l.st.List(ctx, dir); err == nil && len(entries) == 0 {
			_ = l.st.Remove(ctx, dir)
		}
	}
	return nil
}

// listedFile reports whether p itself is listed as a file (not one of
// its pending files).
func (l *leftovers) listedFile(p string) bool {
	for _, m := range l.made {
		if (m.Kind == storage.MadeFile || m.Kind == madeOld) && m.Path == p {
			return true
		}
	}
	return false
}

// drop removes the journal: its segments, the pending ones too, then its
// directory.
func (l *leftovers) drop(ctx context.Context) error {
	entries, err := l.st.List(ctx, l.dir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := l.st.Remove(ctx, e.Path); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	if err := l.st.Remove(ctx, l.dir); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return nil
}

// snapshotFiles is the set of files the snapshot at p uses: its
// metadata, its companion files and every subtask's files; empty when p
// holds no snapshot. A snapshot that is there but cannot be read is an
// error.
func snapshotFiles(ctx context.Context, reg *snapshot.Registry, st storage.Storage, p string) (map[string]bool, error) {
	keep := map[string]bool{}
	info, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return keep, nil
	case err != nil:
		return nil, err
	}
	if _, _, _, err := reg.Detect(ctx, st.URI(p)); errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrCorrupt) {
		// No snapshot: a directory without one, or a file or _metadata
		// no format knows.
		return keep, nil
	} else if err != nil {
		return nil, err
	}
	if !info.IsDir {
		keep[p] = true
		return keep, nil
	}
	r, err := reg.Open(ctx, st.URI(p), snapshot.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	keep[path.Join(p, "_metadata")] = true
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
	return keep, nil
}
