package rocksdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Rescaling without re-encoding
//
// At unchanged max parallelism a new subtask's keyed state is whole key
// groups of the old subtasks, and a key group is one contiguous key range
// (its prefix) in each column family, stored in bytes that do not depend
// on the parallelism. SubtaskFrom therefore builds the new instance from
// the old files and decodes no entry:
//
//   - the primary source, the largest old subtask that contributes all its
//     key groups (scaling in, or an unchanged range), is taken whole: its
//     SST files are hard-linked (copied across file systems) next to
//     copies of its MANIFEST, CURRENT and OPTIONS, and the database is
//     opened as the new instance. Should it hold keys outside its key
//     groups, DeleteRange drops them and a compaction rewrites the column
//     family without them;
//   - from every other source, state by state, each SST file that lies
//     inside the source's share and shares its keys with no other file is
//     taken as it is: hard-linked and ingested, never rewritten (stateutil
//     finishes its SST files at key-group boundaries, sstTarget, so most
//     files qualify). The key ranges between those files stream raw into
//     an external SST file each, one per CPU at a time and in a C loop
//     (internal/rocksdb), while the new instance is made; the files are then
//     ingested. All are disjoint, so each file receives its keys in order
//     and none overlaps another.
//
// Only the files that straddle an end of a new subtask's range are
// rewritten, RocksDB reading and writing the bytes without a decode or
// encode. Linked files keep the checksums the old snapshot records. The
// rest of a new subtask (operator state, upload, figures) takes the
// subtaskWriter's code.

// SubtaskFrom starts new subtask index of newOp with its keyed state
// copied from the rocksdb snapshot r (see redistribute.KeyedCopier). It
// declines (ok false) when r is not a rocksdb reader or when newOp stores
// keyed state differently from op (max parallelism or descriptors).
func (w *writer) SubtaskFrom(ctx context.Context, r snapshot.Reader, op, newOp *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, bool, error) {
	rr, ok := r.(*reader)
	if !ok || op.MaxParallelism != newOp.MaxParallelism || !reflect.DeepEqual(op.KeyedStates, newOp.KeyedStates) {
		return nil, false, nil
	}
	srcs, err := sources(rr, op, kgs)
	if err != nil {
		return nil, true, err
	}
	primary := pickPrimary(op, srcs)
	// Every source is checked and opened before use; opening them all at
	// once spreads the checks over the CPUs even when every new subtask
	// reads the same old subtask first.
	hs := make([]*rocksdbformat.Handle, len(srcs))
	for i := range srcs {
		hs[i] = srcs[i].h
	}
	if err := rr.openAll(ctx, hs); err != nil {
		return nil, true, err
	}
	var base *rocksdb.ReadOnlyDB
	if primary != nil {
		if base, err = rr.local(ctx, primary.h); err != nil {
			return nil, true, err
		}
	}
	tmp, err := w.tempDir(ctx)
	if err != nil {
		return nil, true, err
	}
	shares, links, err := planShares(ctx, rr, op, srcs, primary, kgs, tmp.Path)
	if err != nil {
		tmp.Remove()
		return nil, true, err
	}
	// Copy while the new instance is made; only the ingestion needs both.
	copied := make(chan error, 1)
	go func() { copied <- runShares(ctx, shares) }()
	sw, err := w.subtaskIn(ctx, newOp, index, kgs, tmp, func(dir string) error {
		if base == nil {
			return nil
		}
		return linkDB(base.Path(), primary.h.Files, dir)
	})
	if err != nil {
		<-copied
		tmp.Remove()
		return nil, true, err
	}
	cs := &copiedSubtask{subtaskWriter: sw}
	if primary != nil {
		err = cs.recordSums(primary.h.Files)
		if err == nil {
			err = cs.clip(op, primary.part)
		}
		if err != nil {
			err = fmt.Errorf("operator %s subtask %d: %w", op.Label(), primary.sub.Index, err)
		}
	}
	if cerr := <-copied; err == nil {
		err = cerr
	}
	if err == nil {
		err = cs.ingestShares(op, shares, links)
	}
	if err != nil {
		sw.discard()
		w.finished(sw, nil, nil)
		return nil, true, err
	}
	cs.carryStats(op, srcs)
	return cs, true, nil
}

// linkDB makes dir a database of its own with the files of the one in
// src: SST files, which RocksDB never changes, hard-linked (to the file a
// symbolic link in src names); the rest (MANIFEST, CURRENT, OPTIONS,
// logs), which it does, copied.
func linkDB(src string, files []rocksdbformat.File, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		from, to := filepath.Join(src, f.Local), filepath.Join(dir, f.Local)
		if strings.HasSuffix(f.Local, ".sst") {
			if real, err := filepath.EvalSymlinks(from); err == nil && os.Link(real, to) == nil {
				continue
			}
		}
		if err := copyLocalFile(from, to); err != nil {
			return err
		}
	}
	return nil
}

func copyLocalFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// recordSums notes the checksums the old snapshot records for the SST
// files linked from it: the new snapshot records them unread, so damage
// in an old file stays visible as a checksum mismatch.
func (cs *copiedSubtask) recordSums(files []rocksdbformat.File) error {
	for _, f := range files {
		if strings.HasSuffix(f.Local, ".sst") {
			if err := cs.in.RecordCRC32C(filepath.Join(cs.in.Dir(), f.Local), f.CRC32C); err != nil {
				return err
			}
		}
	}
	return nil
}

// copiedSubtask is a subtask writer whose keyed state was copied whole.
type copiedSubtask struct {
	*subtaskWriter
	// statsKnown is whether the old subtasks recorded per-key-group
	// figures to carry over; without them the new subtask's keyed figures
	// are unknown (a scan tells), as in an incremental checkpoint.
	statsKnown bool
}

var errCopied = errors.New("rocksdb: the keyed state of a rescaled subtask is copied whole; it takes no entries")

// Entry refuses entries: the keyed state is complete.
func (cs *copiedSubtask) Entry(*snapshot.Entry) error { return errCopied }

// Close uploads the instance as subtaskWriter.Close does, dropping the
// keyed figures when they are unknown.
func (cs *copiedSubtask) Close() error {
	sw := cs.subtaskWriter
	if sw.closed {
		return nil
	}
	h, sub, err := sw.finish()
	sw.discard()
	if err != nil {
		sw.w.finished(sw, nil, nil)
		return err
	}
	if !cs.statsKnown {
		sub.Keyed, sub.KeyGroupStats = snapshot.Stats{}, nil
	}
	sw.w.finished(sw, h, sub)
	return nil
}

// source is an old subtask's share of the new range.
type source struct {
	sub  *snapshot.Subtask
	h    *rocksdbformat.Handle
	part keygroup.Range
}

// sources lists the old subtasks of op holding key groups of kgs, in key
// order.
func sources(rr *reader, op *snapshot.Operator, kgs keygroup.Range) ([]source, error) {
	var out []source
	for _, sub := range op.Subtasks {
		part := sub.KeyGroups.Intersect(kgs)
		if part.Len() == 0 {
			continue
		}
		h, err := rr.handle(op, sub.Index)
		if err != nil {
			return nil, err
		}
		if w := rocksdbformat.PrefixWidth(op.MaxParallelism); w != h.PrefixBytes {
			return nil, snapshot.Corrupt(rr.d.Storage.URI(rr.d.Metadata()), -1, "operator %s subtask %d: %d-byte key-group prefix recorded, max parallelism %d implies %d", op.Label(), sub.Index, h.PrefixBytes, op.MaxParallelism, w)
		}
		if part = part.Intersect(h.KeyGroups); part.Len() > 0 {
			out = append(out, source{sub: sub, h: h, part: part})
		}
	}
	slices.SortFunc(out, func(a, b source) int { return a.part.Start - b.part.Start })
	for i := 1; i < len(out); i++ {
		if out[i].part.Start <= out[i-1].part.End {
			return nil, snapshot.Corrupt(op.Label(), -1, "subtasks %d and %d both hold key group %d", out[i-1].sub.Index, out[i].sub.Index, out[i].part.Start)
		}
	}
	return out, nil
}

// clip leaves only the key groups part in the instance: it drops column
// families of undeclared states, deletes each state's keys outside the
// part's prefixes, and compacts the column families it deleted from so
// that their files no longer hold those keys.
func (cs *copiedSubtask) clip(op *snapshot.Operator, part keygroup.Range) error {
	d := cs.in.DB()
	for _, name := range d.ColumnFamilies() {
		if _, ok := op.KeyedStateByName(name); !ok {
			if err := d.DropColumnFamily(name); err != nil {
				return err
			}
		}
	}
	codecs := rocksdbformat.Codecs(op)
	var dirty []string
	for i := range op.KeyedStates {
		c := codecs[op.KeyedStates[i].Name]
		deleted, err := d.DeleteOutside(c.State, c.KeyGroupPrefix(part.Start), c.UpperBound(part.End))
		if err != nil {
			return fmt.Errorf("state %q: %w", c.State, err)
		}
		if deleted {
			dirty = append(dirty, c.State)
		}
	}
	d.Rewrite(dirty...)
	return nil
}

// carryStats sums the old subtasks' per-key-group figures over the new
// range, when every source recorded them.
func (cs *copiedSubtask) carryStats(op *snapshot.Operator, srcs []source) {
	cs.stats, cs.kgStats = snapshot.Stats{Known: true}, nil
	if len(op.KeyedStates) == 0 {
		cs.statsKnown = true
		return
	}
	for _, s := range srcs {
		if s.sub.KeyGroupStats == nil {
			if s.sub.Keyed.Known && s.sub.Keyed.Entries == 0 {
				continue
			}
			return
		}
		for _, g := range s.sub.KeyGroupStats {
			if s.part.Contains(g.KeyGroup) && g.Entries > 0 {
				cs.kgStats = append(cs.kgStats, g)
				cs.stats.Entries += g.Entries
				cs.stats.Bytes += g.Bytes
			}
		}
	}
	slices.SortFunc(cs.kgStats, func(a, b snapshot.KeyGroupStat) int { return a.KeyGroup - b.KeyGroup })
	cs.statsKnown = true
}
