package lookup

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"unsafe"

	"github.com/stateutil/stateutil/internal/arena"
	"github.com/stateutil/stateutil/snapshot"
)

// spillBytes is about how much memory a key group's entries may take
// before they are ordered and written to a temporary file as a sorted
// run; a key group larger than that is ordered by merging its runs, so
// that memory stays bounded by this, not by the largest key group.
var spillBytes = 8 << 20

// entryFootprint is what an entry takes besides its bytes: the Entry and
// its copy in the order inOrder makes, and its sort key twice over.
const entryFootprint = 2 * (int(unsafe.Sizeof(snapshot.Entry{})) + int(unsafe.Sizeof(sortKey{})))

// runBuffer is the read buffer of each run while runs are merged.
const runBuffer = 64 << 10

// spill is the sorted runs of one key group in a temporary file, removed
// from its directory as soon as it is made so that nothing is left behind.
type spill struct {
	f      *os.File
	w      *bufio.Writer
	end    int64
	runs   [][2]int64 // offset and length of each run, in the order written
	states []string   // entries name their state by its index here
	index  map[string]int
	group  arena.Arena // the bytes of the entries of the key being emitted
	hdr    []byte
}

func newSpill() (*spill, error) {
	f, err := os.CreateTemp("", "stateutil-order-*")
	if err != nil {
		return nil, fmt.Errorf("a key group larger than %d MiB is ordered through a temporary file: %w", spillBytes>>20, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 256<<10), index: map[string]int{}}, nil
}

func (s *spill) close() { s.f.Close() }

func (s *spill) fail(err error) error {
	return fmt.Errorf("ordering a key group through the temporary file %s: %w", s.f.Name(), err)
}

// write appends es, which are in order, as a run.
func (s *spill) write(es []snapshot.Entry) error {
	start := s.end
	for i := range es {
		e := &es[i]
		id, ok := s.index[e.State]
		if !ok {
			id = len(s.states)
			s.states = append(s.states, e.State)
			s.index[e.State] = id
		}
		h := binary.AppendUvarint(s.hdr[:0], uint64(id))
		h = binary.AppendVarint(h, int64(e.KeyGroup))
		h = binary.AppendVarint(h, e.ExpiresAt)
		for _, b := range [...][]byte{e.Key, e.Namespace, e.UserKey, e.Value} {
			h = binary.AppendUvarint(h, uint64(len(b)))
		}
		s.hdr = h
		n, err := s.w.Write(h)
		s.end += int64(n)
		if err != nil {
			return s.fail(err)
		}
		for _, b := range [...][]byte{e.Key, e.Namespace, e.UserKey, e.Value} {
			n, err := s.w.Write(b)
			s.end += int64(n)
			if err != nil {
				return s.fail(err)
			}
		}
	}
	s.runs = append(s.runs, [2]int64{start, s.end - start})
	return nil
}

// merge calls emit with the entries of the runs in order (stable: among
// equal entries the earlier run's first), a group of entries that belong
// together at a time; emit's entries are valid until it returns.
func (s *spill) merge(together func(a, b *snapshot.Entry) bool, emit func([]snapshot.Entry) error) error {
	if err := s.w.Flush(); err != nil {
		return s.fail(err)
	}
	rs := make([]*runReader, 0, len(s.runs))
	for _, r := range s.runs {
		rr := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(s.f, r[0], r[1]), runBuffer), states: s.states}
		if err := rr.next(); err != nil {
			return s.fail(err)
		}
		rs = append(rs, rr)
	}
	var grp []snapshot.Entry
	for {
		// Runs are few: a linear scan finds the least.
		var least *runReader
		for _, r := range rs {
			if r.ok && (least == nil || compareEntries(&r.e, &least.e) < 0) {
				least = r
			}
		}
		if least == nil {
			break
		}
		if len(grp) > 0 && !together(&grp[0], &least.e) {
			if err := emit(grp); err != nil {
				return err
			}
			grp = grp[:0]
			s.group.Reset()
		}
		e := least.e
		e.Key, e.Namespace, e.UserKey, e.Value = s.group.Keep(e.Key), s.group.Keep(e.Namespace), s.group.Keep(e.UserKey), s.group.Keep(e.Value)
		grp = append(grp, e)
		if err := least.next(); err != nil {
			return s.fail(err)
		}
	}
	if len(grp) > 0 {
		return emit(grp)
	}
	return nil
}

// compareEntries orders entries by state, key and namespace, as inOrder.
func compareEntries(a, b *snapshot.Entry) int {
	if c := strings.Compare(a.State, b.State); c != 0 {
		return c
	}
	return compareStored(a, b)
}

// runReader reads one run back, an entry at a time into e, whose bytes
// are valid until the next call.
type runReader struct {
	r      *bufio.Reader
	states []string
	buf    []byte
	e      snapshot.Entry
	ok     bool
}

func (rr *runReader) next() error {
	id, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		rr.ok = false
		return nil
	}
	if err != nil {
		return err
	}
	if id >= uint64(len(rr.states)) {
		return fmt.Errorf("state %d of %d", id, len(rr.states))
	}
	kg, err := binary.ReadVarint(rr.r)
	if err != nil {
		return err
	}
	exp, err := binary.ReadVarint(rr.r)
	if err != nil {
		return err
	}
	var lens [4]uint64
	total := 0
	for i := range lens {
		if lens[i], err = binary.ReadUvarint(rr.r); err != nil {
			return err
		}
		total += int(lens[i])
	}
	if cap(rr.buf) < total {
		rr.buf = make([]byte, total)
	}
	b := rr.buf[:total]
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return err
	}
	var fields [4][]byte
	for i, n := range lens {
		fields[i], b = b[:n:n], b[n:]
	}
	rr.e = snapshot.Entry{KeyGroup: int(kg), State: rr.states[id], ExpiresAt: exp,
		Key: fields[0], Namespace: fields[1], UserKey: fields[2], Value: fields[3]}
	rr.ok = true
	return nil
}
