package rocksdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

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

// share is one keyed state's part of one source, copied into its own
// external SST file.
type share struct {
	src   *db
	c     *codec
	part  keygroup.Range
	path  string
	label string
	ok    bool   // the file exists (the share has keys)
	crc   uint32 // its CRC32C
}

// planShares lists the shares to copy: every source but the primary,
// state by state, each into its own file in tmp. It downloads the sources.
func planShares(ctx context.Context, rr *reader, op *snapshot.Operator, srcs []source, primary *source, tmp string) ([]*share, error) {
	var shares []*share
	cs := codecs(op)
	for i := range srcs {
		s := &srcs[i]
		if s == primary || len(s.h.Files) == 0 || len(op.KeyedStates) == 0 {
			continue
		}
		d, err := rr.local(ctx, s.h)
		if err != nil {
			return nil, err
		}
		for j := range op.KeyedStates {
			c := cs[op.KeyedStates[j].Name]
			if _, ok := d.cfs[c.state]; ok {
				shares = append(shares, &share{src: d, c: c, part: s.part,
					path:  filepath.Join(tmp, "copy-"+strconv.Itoa(len(shares))+".sst"),
					label: fmt.Sprintf("operator %s subtask %d state %q", op.Label(), s.sub.Index, c.state)})
			}
		}
	}
	return shares, nil
}

// ingestShares ingests the copied files, each state's together: they are
// disjoint key ranges, outside whatever the primary left.
func (cs *copiedSubtask) ingestShares(op *snapshot.Operator, shares []*share) error {
	for j := range op.KeyedStates {
		name := op.KeyedStates[j].Name
		var files []string
		for _, sh := range shares {
			if sh.ok && sh.c.state == name {
				if err := cs.in.sums.record(sh.path, sh.crc); err != nil {
					return err
				}
				files = append(files, sh.path)
			}
		}
		if len(files) == 0 {
			continue
		}
		h, err := cs.in.db.cf(name)
		if err != nil {
			return err
		}
		if err := cs.in.db.ingest(h, files); err != nil {
			return err
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
	it := sh.src.newIter(sh.src.cfs[sh.c.state], sh.c.kgPrefix(sh.part.Start), sh.c.upperBound(sh.part.End))
	defer it.Close()
	var head []byte // the first pairs, key then value, each with its length
	for ; it.valid() && len(head) < compressionSample; it.next() {
		head = appendPair(head, it.key(), it.value())
	}
	w, err := newSSTWriter(sh.path, compressible(head))
	if err != nil {
		return err
	}
	defer w.Close()
	for rest := head; len(rest) > 0; {
		var k, v []byte
		k, v, rest = nextPair(rest)
		if err := w.add(k, v); err != nil {
			return fmt.Errorf("%s: %w", sh.label, err)
		}
	}
	if err := copyIter(ctx, it, w); err != nil {
		return fmt.Errorf("%s: %w", sh.label, err)
	}
	sh.ok, err = w.finish()
	sh.crc = w.crc
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

// copyIter writes every pair it yields to dst.
func copyIter(ctx context.Context, it *iter, dst *sstWriter) error {
	if nativeIterator {
		if err := dst.copyPairs(ctx, it); err != nil {
			return err
		}
	}
	for n := 0; it.valid(); n++ {
		if n&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := dst.add(it.key(), it.value()); err != nil {
			return err
		}
		it.next()
	}
	if err := it.err(); err != nil {
		return fmt.Errorf("%w: %w", snapshot.ErrCorrupt, err)
	}
	return nil
}
