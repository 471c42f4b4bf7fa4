package rocksdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// pickPrimary is the source whose database the new instance starts from:
// the largest one that contributes all it holds, so that nothing of it
// needs rewriting; nil when no source does (or there is no keyed state).
// Rewriting a clipped database costs about what copying its share does,
// and a copy runs in parallel with the others, a compaction does not.
func pickPrimary(op *snapshot.Operator, srcs []source) *source {
	var primary *source
	if len(op.KeyedStates) == 0 {
		return nil
	}
	for i := range srcs {
		s := &srcs[i]
		whole := s.part == s.h.KeyGroups.Intersect(s.sub.KeyGroups)
		if whole && len(s.h.Files) > 0 && (primary == nil || s.part.Len() > primary.part.Len()) {
			primary = s
		}
	}
	return primary
}

// share is one keyed state's key range [lower, upper) in one source
// (upper nil: to the end), copied into its own external SST file.
type share struct {
	src          *rocksdb.ReadOnlyDB
	c            *rocksdbformat.Codec
	lower, upper []byte
	path         string
	label        string
	ok           bool   // the file exists (the share has keys)
	crc          uint32 // its CRC32C
}

// link is an SST file of a source taken into the new instance as it is:
// it holds whole key groups of the new subtask and nothing else does.
type link struct {
	state string
	from  string // the source's file
	path  string // its name in the temporary directory, ingested
	crc   uint32 // as the old snapshot records it
}

// planShares lists, for every source but the primary and state by state,
// the SST files to link and the key ranges between them to copy, each
// into its own file in tmp. It downloads the sources.
func planShares(ctx context.Context, rr *reader, op *snapshot.Operator, srcs []source, primary *source, newKGs keygroup.Range, tmp string) ([]*share, []*link, error) {
	var shares []*share
	var links []*link
	cs := rocksdbformat.Codecs(op)
	for i := range srcs {
		s := &srcs[i]
		if s == primary || len(s.h.Files) == 0 || len(op.KeyedStates) == 0 {
			continue
		}
		d, err := rr.local(ctx, s.h)
		if err != nil {
			return nil, nil, err
		}
		crcs := map[string]uint32{}
		for _, f := range s.h.Files {
			crcs[f.Local] = f.CRC32C
		}
		for j := range op.KeyedStates {
			c := cs[op.KeyedStates[j].Name]
			if !d.Has(c.State) {
				continue
			}
			lower, upper := c.KeyGroupPrefix(s.part.Start), c.UpperBound(s.part.End)
			whole, err := linkableFiles(d, c.State, lower, upper, crcs)
			if err != nil {
				return nil, nil, err
			}
			sizes, err := keyGroupSizes(d, c, s.part.Start, s.part.End)
			if err != nil {
				return nil, nil, err
			}
			label := fmt.Sprintf("operator %s subtask %d state %q", op.Label(), s.sub.Index, c.State)
			addShare := func(lo, hi []byte) {
				for _, p := range pieces(c, lo, hi, s.part.Start, sizes) {
					shares = append(shares, &share{src: d, c: c, lower: p[0], upper: p[1], label: label,
						path: filepath.Join(tmp, "copy-"+strconv.Itoa(len(shares))+".sst")})
				}
			}
			for _, f := range whole {
				addShare(lower, f.Smallest)
				lower = append(slices.Clip(f.Largest), 0) // the key right after it
				links = append(links, &link{state: c.State, from: f.from, crc: f.crc,
					path: filepath.Join(tmp, "link-"+strconv.Itoa(len(links))+".sst")})
			}
			addShare(lower, upper)
		}
	}
	return shares, links, nil
}

// pieces splits the key range [lo, hi) of a source's share (hi nil: to
// the end of its last key group) at key-group boundaries where the
// subtask writer would end a file (sstTarget), so that the copies are
// files a later rescale can link in turn. sizes holds the state's bytes in
// each key group of the source from first on (keyGroupSizes).
func pieces(c *rocksdbformat.Codec, lo, hi []byte, first int, sizes []uint64) [][2][]byte {
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	var out [][2][]byte
	start, size := lo, uint64(0)
	for kg := c.KeyGroupOf(lo); kg < first+len(sizes)-1; kg++ {
		size += sizes[kg-first]
		cut := c.KeyGroupPrefix(kg + 1)
		if hi != nil && bytes.Compare(cut, hi) >= 0 {
			break
		}
		if size >= uint64(sstTarget) {
			out = append(out, [2][]byte{start, cut})
			start, size = cut, 0
		}
	}
	return append(out, [2][]byte{start, hi})
}

// keyGroupSizes estimates the bytes column family c.State holds in each
// key group from first to last, from its files' indexes (RocksDB's
// approximate sizes).
func keyGroupSizes(d *rocksdb.ReadOnlyDB, c *rocksdbformat.Codec, first, last int) ([]uint64, error) {
	ranges := make([]rocksdb.Range, last-first+1)
	for kg := first; kg <= last; kg++ {
		ranges[kg-first] = rocksdb.Range{Start: c.KeyGroupPrefix(kg), Limit: c.KeyGroupPrefix(kg + 1)}
	}
	return d.ApproximateSizes(c.State, ranges)
}

// wholeFile is a source's SST file that can be linked (linkableFiles).
type wholeFile struct {
	rocksdb.LiveFile
	from string
	crc  uint32
}

// linkableFiles lists, in key order, the SST files of d's column family
// state that lie inside [lower, upper) and can be taken as they are: no
// other file or memtable entry shares their keys, the file needs no
// rewriting to be ingested (rocksdb.SSTLinkable), and the snapshot records its
// checksum (crcs, by local name) to carry over.
func linkableFiles(d *rocksdb.ReadOnlyDB, state string, lower, upper []byte, crcs map[string]uint32) ([]wholeFile, error) {
	files, ok := d.LiveFiles(state)
	if !ok {
		return nil, nil
	}
	var out []wholeFile
	var prevLargest []byte
	for i, f := range files {
		alone := (i == 0 || bytes.Compare(prevLargest, f.Smallest) < 0) &&
			(i == len(files)-1 || bytes.Compare(f.Largest, files[i+1].Smallest) < 0)
		if i == 0 || bytes.Compare(f.Largest, prevLargest) > 0 {
			prevLargest = f.Largest
		}
		inside := bytes.Compare(f.Smallest, lower) >= 0 && (upper == nil || bytes.Compare(f.Largest, upper) < 0)
		crc, recorded := crcs[f.Name]
		if !alone || !inside || !recorded {
			continue
		}
		from, err := filepath.EvalSymlinks(filepath.Join(d.Path(), f.Name))
		if err != nil {
			return nil, err
		}
		if ok, err := rocksdb.SSTLinkable(from); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		out = append(out, wholeFile{LiveFile: f, from: from, crc: crc})
	}
	return out, nil
}

// ingestShares takes in the linked and the copied files, each state's
// together: they are disjoint key ranges, outside whatever the primary
// left. A linked file is another snapshot's too: it is ingested only as
// it is.
func (cs *copiedSubtask) ingestShares(op *snapshot.Operator, shares []*share, links []*link) error {
	for j := range op.KeyedStates {
		name := op.KeyedStates[j].Name
		var copied, linked []string
		for _, l := range links {
			if l.state != name {
				continue
			}
			if err := os.Link(l.from, l.path); err != nil {
				if err := copyLocalFile(l.from, l.path); err != nil {
					return err
				}
			}
			if err := cs.in.RecordCRC32C(l.path, l.crc); err != nil {
				return err
			}
			linked = append(linked, l.path)
		}
		for _, sh := range shares {
			if sh.ok && sh.c.State == name {
				if err := cs.in.RecordCRC32C(sh.path, sh.crc); err != nil {
					return err
				}
				copied = append(copied, sh.path)
			}
		}
		if len(copied)+len(linked) == 0 {
			continue
		}
		if len(linked) > 0 {
			if err := cs.in.DB().IngestUnchanged(name, linked); err != nil {
				return err
			}
		}
		if len(copied) > 0 {
			if err := cs.in.DB().Ingest(name, copied); err != nil {
				return err
			}
		}
	}
	return nil
}

// runShares copies the shares on up to GOMAXPROCS goroutines.
func runShares(ctx context.Context, shares []*share) error {
	errs := make([]error, len(shares))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(shares)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(shares) {
					return
				}
				if errs[i] = shares[i].copy(ctx); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copy writes the share's key range of its state, raw, into its file,
// compressed or not as the range's first pairs tell.
func (sh *share) copy(ctx context.Context) error {
	it := sh.src.NewIterator(sh.c.State, sh.lower, sh.upper)
	defer it.Close()
	var head []byte // the first pairs, key then value, each with its length
	for ; it.Valid() && len(head) < compressionSample; it.Next() {
		head = appendPair(head, it.Key(), it.Value())
	}
	if len(head) == 0 { // most gaps between linked files hold no keys
		return it.Err()
	}
	w, err := rocksdb.NewSSTWriter(sh.path, compressible(head))
	if err != nil {
		return err
	}
	defer w.Close()
	for rest := head; len(rest) > 0; {
		var k, v []byte
		k, v, rest = nextPair(rest)
		if err := w.Add(k, v); err != nil {
			return fmt.Errorf("%s: %w", sh.label, err)
		}
	}
	if err := w.Copy(ctx, it); err != nil {
		return fmt.Errorf("%s: %w", sh.label, err)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%s: %w: %w", sh.label, snapshot.ErrCorrupt, err)
	}
	sh.ok, err = w.Finish()
	sh.crc = w.CRC32C()
	return err
}

func appendPair(dst, k, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// nextPair splits the first pair appendPair wrote off b.
func nextPair(b []byte) (k, v, rest []byte) {
	n, w := binary.Uvarint(b)
	k, b = b[w:w+int(n)], b[w+int(n):]
	n, w = binary.Uvarint(b)
	return k, b[w : w+int(n)], b[w+int(n):]
}
