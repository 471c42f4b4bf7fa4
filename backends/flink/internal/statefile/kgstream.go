package statefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/golang/snappy"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// KeyGroupStream reads a key-groups stream (handle types 3, 7, 12) a key group at
// a time: the header once, then only the key groups asked for, by the
// offsets `_metadata` lists.
type KeyGroupStream struct {
	H      *metadata.KeyGroupsHandle
	typ    metadata.HandleType
	ra     io.ReaderAt
	closer io.Closer
	File   string
	Base   int64 // offset of the stream in file (for errors)
	at     int64 // offset of the stream in ra
	Size   int64
	Offs   []int64 // sorted non-zero offsets
	Header *KeyedHeader
	// Layouts by state id, and by name.
	Layouts []*Layout
	byName  map[string]*Layout
	// Format is decided by the first key group read ("" until then).
	Format KeyGroupFormat
	// Prefix is the key-group prefix width of canonical keys.
	Prefix         int
	maxParallelism int
	// Lost is told of the heap states that could not be read in a key
	// group (see readHeap); nil ignores them.
	Lost func(state string, err error)
	// buf comes from bufPool and goes back on Close.
	buf *streamBuffers
	// Walks, where set, holds heap key groups' walks between reads: a
	// read takes the walk kept of its key group, and with KeepWalks keeps
	// its own for the next.
	Walks     *Walks
	KeepWalks bool
}

// streamBuffers are what a stream reads into: bytes holds a key group's
// bytes, or a window of them, until the next one; recs a heap key group's
// entry records between their walk and their emission (readHeap).
type streamBuffers struct {
	bytes []byte
	recs  []heapRec
}

// bufPool keeps the buffers of closed streams: a dump opens a stream per
// piece of a subtask, and each would otherwise grow its buffers anew.
var bufPool = sync.Pool{New: func() any { return new(streamBuffers) }}

// OpenKGStream opens the stream of a key-groups handle and reads its header.
func OpenKGStream(ctx context.Context, res *Resolver, kh *metadata.KeyedHandle, maxParallelism int) (*KeyGroupStream, error) {
	if kh == nil || kh.KeyGroups == nil || kh.KeyGroups.Delegate == nil {
		return nil, fmt.Errorf("not a key-groups handle with a stream")
	}
	h := kh.KeyGroups
	s := &KeyGroupStream{H: h, typ: kh.Type, Prefix: 1, maxParallelism: maxParallelism, buf: bufPool.Get().(*streamBuffers)}
	if maxParallelism > 128 {
		s.Prefix = 2
	}
	d := h.Delegate
	loc, err := res.Locate(ctx, d)
	if err != nil {
		return nil, err
	}
	switch {
	case loc.Inline:
		s.ra, s.File, s.Base, s.Size = bytes.NewReader(d.Data), res.MetadataFile, d.DataOffset, int64(len(d.Data))
	case d.Type == metadata.HandleEmptySegmentFile:
		s.ra, s.File = bytes.NewReader(nil), "(empty segment)"
	default:
		f, err := res.Open(ctx, d, loc)
		if err != nil {
			return nil, err
		}
		s.ra, s.closer, s.File, s.Base, s.at, s.Size = f.F, f.F, f.File, f.Off, f.Off, f.Size
	}
	for _, o := range h.Offsets {
		if o < 0 || o > s.Size {
			s.Close()
			return nil, &wire.CorruptError{File: s.File, Offset: s.Base, Reason: fmt.Sprintf("key-group offset %d outside a stream of %d bytes", o, s.Size)}
		}
		if o > 0 {
			s.Offs = append(s.Offs, o)
		}
	}
	sort.Slice(s.Offs, func(i, j int) bool { return s.Offs[i] < s.Offs[j] })
	end := s.Size
	if len(s.Offs) > 0 {
		end = s.Offs[0]
	}
	data, err := s.read(0, end)
	if err == nil {
		s.Header, err = ParseKeyedHeader(res.Serializers, data, s.File, s.Base, int(end))
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	MarkStatesKryo5(res.Kryo5, s.Header.KeySerializer, s.Header.States...)
	s.Layouts, s.byName = LayoutsOf(s.Header)
	return s, nil
}

func LayoutsOf(h *KeyedHeader) ([]*Layout, map[string]*Layout) {
	var ls []*Layout
	by := map[string]*Layout{}
	for _, m := range h.States {
		l := NewLayout(m, h.KeySerializer)
		ls = append(ls, l)
		by[l.Name] = l
	}
	return ls, by
}

// Close closes the stream's file.
func (s *KeyGroupStream) Close() error {
	if s.buf != nil {
		bufPool.Put(s.buf)
		s.buf = nil
	}
	if s.closer != nil {
		err := s.closer.Close()
		s.closer = nil
		return err
	}
	return nil
}

func (s *KeyGroupStream) read(off, n int64) ([]byte, error) {
	return s.readInto(nil, off, n)
}

// readInto is read into buf's memory where it is large enough.
func (s *KeyGroupStream) readInto(buf []byte, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > s.Size {
		return nil, &wire.CorruptError{File: s.File, Offset: s.Base + off, Reason: fmt.Sprintf("%d bytes do not fit in a stream of %d", n, s.Size)}
	}
	b := slices.Grow(buf[:0], int(n))[:n]
	if _, err := s.ra.ReadAt(b, s.at+off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		if errors.Is(err, io.EOF) {
			return nil, &wire.CorruptError{File: s.File, Offset: s.Base + off, Reason: fmt.Sprintf("file ends inside a key group of %d bytes", n)}
		}
		return nil, err
	}
	return b, nil
}

// GroupBytesInto returns the stored bytes of key group kg (nil when
// empty) and their offset, read into buf's memory where it is large
// enough.
func (s *KeyGroupStream) GroupBytesInto(buf []byte, kg int) ([]byte, int64, error) {
	o, n := s.groupSpan(kg)
	if n == 0 {
		return nil, 0, nil
	}
	b, err := s.readInto(buf, o, n)
	return b, o, err
}

// groupSpan is where key group kg's stored bytes are in the stream, and
// how many there are (0 when it is empty).
func (s *KeyGroupStream) groupSpan(kg int) (off, n int64) {
	i := kg - int(s.H.Range.Start)
	if i < 0 || i >= len(s.H.Offsets) || s.H.Offsets[i] == 0 {
		return 0, 0
	}
	o := s.H.Offsets[i]
	return o, NextOffset(s.Offs, o, int(s.Size)) - o
}

// StoredBytes is the size of the key groups of the stream (header excluded).
func (s *KeyGroupStream) StoredBytes() int64 {
	if len(s.Offs) == 0 {
		return 0
	}
	return s.Size - s.Offs[0]
}

// Entries emits the entries of key group kg. unsplit is called with the
// name of a state whose entries could not be taken fully apart.
func (s *KeyGroupStream) Entries(kg int, emit func(snapshot.Entry) bool, unsplit func(string)) (bool, error) {
	if err := s.decide(kg); err != nil {
		return false, err
	}
	if s.Format == CanonicalFormat {
		return s.canonicalStreamed(kg, emit, unsplit)
	}
	// Heap data, read whole: its values are delimited only by parsing them.
	b, off, err := s.GroupBytesInto(s.buf.bytes, kg)
	if err != nil || b == nil {
		return err == nil, err
	}
	s.buf.bytes = b
	at := s.Base + off
	if len(b) < 4 || int(int32(binary.BigEndian.Uint32(b))) != kg {
		return false, &wire.CorruptError{File: s.File, Offset: at, Reason: fmt.Sprintf("heap key group %d does not start with its index", kg)}
	}
	pieces, err := s.heapPieces(b[4:], at+4)
	if err != nil {
		return false, err
	}
	var how walkPlan
	if s.Walks != nil {
		key := walkKey{s.File, at, kg}
		how.walked = s.Walks.take(key)
		if how.walked == nil && s.KeepWalks {
			how.keep = func(w []pieceWalk) { s.Walks.keep(key, w) }
		}
	}
	cont := true
	err = readHeap(kg, s.maxParallelism, pieces, s.Layouts, &s.buf.recs, func(e snapshot.Entry) bool {
		cont = emit(e)
		return cont
	}, s.Lost, how)
	return cont && err == nil, err
}

// canonicalStreamed emits the entries of canonical key group kg as it
// reads them, a window at a time (see canonicalEach).
func (s *KeyGroupStream) canonicalStreamed(kg int, emit func(snapshot.Entry) bool, unsplit func(string)) (bool, error) {
	off, n := s.groupSpan(kg)
	if n == 0 {
		return true, nil
	}
	at := s.Base + off
	cont := true
	win, err := canonicalEach(s.groupReader(off, n), s.File, at, s.Header, s.Header.Compression, s.buf.bytes, func(kv KeyedEntry) (bool, error) {
		var err error
		cont, err = s.canonicalEntry(kg, at, kv, emit, unsplit)
		return cont, err
	})
	s.buf.bytes = win
	return cont && err == nil, err
}

// groupReader reads the n stored bytes at off, decompressed where the
// snapshot is compressed.
func (s *KeyGroupStream) groupReader(off, n int64) io.Reader {
	var src io.Reader = io.NewSectionReader(s.ra, s.at+off, n)
	if s.Header.Compression {
		src = snappy.NewReader(src)
	}
	return src
}

// canonicalEntry emits the entries of one canonical key/value pair of key
// group kg, whose stored bytes start at offset at.
func (s *KeyGroupStream) canonicalEntry(kg int, at int64, kv KeyedEntry, emit func(snapshot.Entry) bool, unsplit func(string)) (bool, error) {
	l := s.byName[kv.State]
	if len(kv.Key) < s.Prefix {
		return false, &wire.CorruptError{File: s.File, Offset: at, Reason: fmt.Sprintf("state %q: key of %d bytes has no key-group prefix", kv.State, len(kv.Key))}
	}
	if got := prefixGroup(kv.Key, s.Prefix); got != kg {
		return false, &wire.CorruptError{File: s.File, Offset: at, Reason: fmt.Sprintf("state %q: key in key group %d says key group %d", kv.State, kg, got)}
	}
	cont, split, err := l.CanonicalEntries(kg, kv.Key[s.Prefix:], kv.Value, emit)
	if err != nil {
		return false, fmt.Errorf("%q key group %d at offset %d: %w", s.File, kg, at, err)
	}
	if split {
		unsplit(l.Name)
	}
	return cont, nil
}

// heapPieces is the bytes of a heap key group after its index, at offset
// at: as they are, or, compressed, each Snappy stream decompressed (Flink
// compresses each state's section as a stream of its own).
func (s *KeyGroupStream) heapPieces(b []byte, at int64) ([]heapPiece, error) {
	if !s.Header.Compression {
		return []heapPiece{{body: b, file: s.File, base: at}}, nil
	}
	var pieces []heapPiece
	total := 0
	for _, sp := range snappyStreams(b) {
		body, err := Unsnappy(b[sp[0]:sp[1]], s.File, at+int64(sp[0]))
		if err != nil {
			return nil, err
		}
		if total += len(body); total > maxDecompressed {
			return nil, &wire.CorruptError{File: s.File, Offset: at, Reason: "snappy key group decompresses to more than 1 GiB"}
		}
		file := fmt.Sprintf("%s (decompressed stream at offset %d)", s.File, at+int64(sp[0]))
		pieces = append(pieces, heapPiece{body: body, file: file, one: true})
	}
	return pieces, nil
}

// snappyStreams splits Snappy framed data where a stream identifier chunk
// starts a stream, walking the chunk headers (a type byte, a 3-byte
// little-endian length); bytes that are not whole chunks go with the last
// stream, whose decoding then reports them.
func snappyStreams(b []byte) [][2]int {
	var starts []int
	for off := 0; off+4 <= len(b); {
		if b[off] == snappyStreamID[0] {
			starts = append(starts, off)
		}
		off += 4 + (int(b[off+1]) | int(b[off+2])<<8 | int(b[off+3])<<16)
	}
	if len(starts) == 0 || starts[0] != 0 {
		starts = append([]int{0}, starts...)
	}
	out := make([][2]int, len(starts))
	for i, st := range starts {
		end := len(b)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		out[i] = [2]int{st, end}
	}
	return out
}

// decide sets the stream's format from its first non-empty key group:
// savepoint handles are canonical; otherwise data that starts with its
// key-group index and does not parse as canonical is heap data.
func (s *KeyGroupStream) decide(kg int) error {
	off, n := s.groupSpan(kg)
	if s.Format != "" || n == 0 {
		return nil
	}
	if s.typ == metadata.HandleSavepointKeyGroups || n < 4 {
		s.Format = CanonicalFormat
		return nil
	}
	idx, err := s.read(off, 4)
	if err != nil {
		return err
	}
	s.Format = CanonicalFormat
	if int(int32(binary.BigEndian.Uint32(idx))) != kg {
		return nil
	}
	win, err := canonicalEach(s.groupReader(off, n), s.File, s.Base+off, s.Header, s.Header.Compression, s.buf.bytes, func(KeyedEntry) (bool, error) { return true, nil })
	s.buf.bytes = win
	if err != nil {
		s.Format = HeapFormat
	}
	return nil
}

// Detect decides the format from the first non-empty key group ("" when
// every key group is empty).
func (s *KeyGroupStream) Detect() (KeyGroupFormat, error) {
	for i := range s.H.Offsets {
		kg := int(s.H.Range.Start) + i
		if _, n := s.groupSpan(kg); n > 0 {
			err := s.decide(kg)
			return s.Format, err
		}
	}
	return "", nil
}

func prefixGroup(key []byte, n int) int {
	if n == 1 {
		return int(key[0])
	}
	return int(key[0])<<8 | int(key[1])
}
