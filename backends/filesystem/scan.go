package filesystem

import (
	"fmt"
	"hash/crc32"
	"io"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
)

// Variables so tests can drive the streaming paths with small snapshots.
var (
	// readChunk is how much a scanner reads at once.
	readChunk int64 = 4 << 20
	// verifyLimit is the largest section (or operator-state blob) checked
	// before anything in it is returned; larger ones are checked as they
	// stream and fail at their end.
	verifyLimit int64 = 16 << 20
)

// scanner reads a byte range of a file in large chunks. buf holds the
// file's bytes from bufOff; pos is the next unread byte of buf.
type scanner struct {
	r      io.ReaderAt
	name   string
	buf    []byte
	bufOff int64
	pos    int
	end    int64 // end of the range

	// streaming checksum of a section too large to verify up front
	hashing bool
	hashed  int // buf[:hashed] is in crc
	crc     uint32
}

// off is the file offset of the next unread byte.
func (s *scanner) off() int64 { return s.bufOff + int64(s.pos) }

// unread is the buffered bytes from pos, at most up to limit.
func (s *scanner) unread(limit int64) []byte {
	b := s.buf[s.pos:]
	if int64(len(b)) > limit {
		b = b[:limit]
	}
	return b
}

// fill makes at least n bytes from pos available; n never reaches past end.
func (s *scanner) fill(n int64) error {
	have := int64(len(s.buf) - s.pos)
	if have >= n {
		return nil
	}
	if s.hashing {
		s.crc = crc32.Update(s.crc, envelope.Castagnoli, s.buf[s.hashed:s.pos])
		s.hashed = 0
	}
	want := min(max(n, readChunk), s.end-s.off())
	if int64(cap(s.buf)) < want {
		nb := make([]byte, have, want)
		copy(nb, s.buf[s.pos:])
		s.buf = nb
	} else {
		s.buf = s.buf[:copy(s.buf, s.buf[s.pos:])]
	}
	s.bufOff += int64(s.pos)
	s.pos = 0
	k, err := s.r.ReadAt(s.buf[have:want], s.bufOff+have)
	s.buf = s.buf[:have+int64(k)]
	if int64(k) < want-have {
		if err == nil || err == io.EOF {
			return snapshot.Corrupt(s.name, s.bufOff+int64(len(s.buf)), "truncated: file ends before the recorded end %d", s.end)
		}
		return fmt.Errorf("%q at offset %d: %w", s.name, s.bufOff+int64(len(s.buf)), err)
	}
	return nil
}

// begin starts a section of n bytes at the current offset: a small one is
// read whole and checked now, a large one is hashed as it is consumed.
func (s *scanner) begin(n int64, crc uint32, kg int) error {
	if n > verifyLimit {
		s.hashing, s.hashed, s.crc = true, s.pos, 0
		return nil
	}
	if err := s.fill(n); err != nil {
		return err
	}
	if got := crc32.Checksum(s.buf[s.pos:int64(s.pos)+n], envelope.Castagnoli); got != crc {
		return snapshot.Corrupt(s.name, s.off(), "key group %d: section checksum mismatch: recorded crc32c %08x, computed %08x", kg, crc, got)
	}
	return nil
}

// finish ends a section that started at start, checking a streamed checksum.
func (s *scanner) finish(crc uint32, kg int, start int64) error {
	if !s.hashing {
		return nil
	}
	s.hashing = false
	s.crc = crc32.Update(s.crc, envelope.Castagnoli, s.buf[s.hashed:s.pos])
	if s.crc != crc {
		return snapshot.Corrupt(s.name, start, "key group %d: section checksum mismatch: recorded crc32c %08x, computed %08x", kg, crc, s.crc)
	}
	return nil
}
