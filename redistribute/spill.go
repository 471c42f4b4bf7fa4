package redistribute

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/stateutil/stateutil/snapshot"
)

// DefaultMemoryLimit bounds the entries a rehash holds in memory before it
// spills a sorted run to disk.
const DefaultMemoryLimit = 64 << 20

// sorter orders entries by key group, stably (a list's elements keep their
// order), in bounded memory: it buffers up to limit bytes, spills sorted
// runs to files in dir, and merges them.
type sorter struct {
	dir   string
	limit int64
	buf   []snapshot.Entry
	size  int64
	runs  []string
}

// entryOverhead approximates the memory an entry costs beyond its bytes.
const entryOverhead = 128

func (s *sorter) add(e *snapshot.Entry) error {
	s.buf = append(s.buf, e.Clone())
	s.size += e.Size() + entryOverhead
	if s.size >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *sorter) sortBuf() {
	slices.SortStableFunc(s.buf, func(a, b snapshot.Entry) int { return cmp.Compare(a.KeyGroup, b.KeyGroup) })
}

func (s *sorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	s.sortBuf()
	f, err := os.CreateTemp(s.dir, "run-*")
	if err != nil {
		return err
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<16)
	for i := range s.buf {
		if err := writeEntry(w, &s.buf[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	s.buf, s.size = s.buf[:0], 0
	return f.Close()
}

// inMemory reports whether nothing was spilled; the sorted entries are
// then in s.buf after finish.
func (s *sorter) inMemory() bool { return len(s.runs) == 0 }

// finish sorts what is buffered, spilling it when runs exist already.
func (s *sorter) finish() error {
	if s.inMemory() {
		s.sortBuf()
		return nil
	}
	return s.spill()
}

// merge streams the spilled runs in key-group order; equal key groups come
// in run order, which keeps the sort stable.
func (s *sorter) merge(fn func(*snapshot.Entry) error) error {
	h := &runHeap{}
	for i, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r := &run{index: i, r: bufio.NewReaderSize(f, 1<<16)}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Push(h, r)
		}
	}
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(&r.head); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type run struct {
	index int
	r     *bufio.Reader
	head  snapshot.Entry
}

func (r *run) next() (bool, error) { return r.nextInto(&r.head) }

// nextInto reads the run's next entry into e; false at the end.
func (r *run) nextInto(e *snapshot.Entry) (bool, error) {
	err := readEntry(r.r, e)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return err == nil, err
}

type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if h[i].head.KeyGroup != h[j].head.KeyGroup {
		return h[i].head.KeyGroup < h[j].head.KeyGroup
	}
	return h[i].index < h[j].index
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// writeEntry encodes an entry for a temporary file: the key group, then
// each byte field with a length prefix, then the expiry.
func writeEntry(w *bufio.Writer, e *snapshot.Entry) error {
	var scratch [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		w.Write(scratch[:binary.PutUvarint(scratch[:], uint64(len(b)))])
		w.Write(b)
	}
	w.Write(scratch[:binary.PutUvarint(scratch[:], uint64(e.KeyGroup))])
	put([]byte(e.State))
	put(e.Key)
	put(e.Namespace)
	put(e.UserKey)
	put(e.Value)
	_, err := w.Write(scratch[:binary.PutVarint(scratch[:], e.ExpiresAt)])
	return err
}

// readEntry decodes what writeEntry wrote; io.EOF at an entry boundary
// ends the file. The entry owns fresh byte slices.
func readEntry(r *bufio.Reader, e *snapshot.Entry) error {
	kg, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	get := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	var fields [5][]byte
	for i := range fields {
		if fields[i], err = get(); err != nil {
			return fmt.Errorf("temporary entry file: %w", noEOF(err))
		}
	}
	exp, err := binary.ReadVarint(r)
	if err != nil {
		return fmt.Errorf("temporary entry file: %w", noEOF(err))
	}
	*e = snapshot.Entry{KeyGroup: int(kg), State: string(fields[0]), Key: fields[1], Namespace: fields[2], UserKey: fields[3], Value: fields[4], ExpiresAt: exp}
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
