package filesystem

import (
	"bytes"
	"context"
	"hash/crc32"
	"path"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/storage"
)

// writeBufSize is the write buffer of one open blob; at most three are in
// use per blob (one being filled, one queued, one being written).
const writeBufSize = 1 << 20

// spill collects a blob in memory while it stays below the inline limit
// and streams it to a file beyond, so memory stays bounded. Callers append
// to buf directly and call maybeFlush after each record.
type spill struct {
	w      *Writer
	ctx    context.Context
	name   string // file name inside the snapshot directory
	inline int64  // inline when the total stays below this
	buf    []byte
	total  int64 // bytes handed to file
	file   *asyncFile
	// beforeFlush lets a caller hash its part of buf before buf is handed off.
	beforeFlush func()
}

func (w *Writer) newSpill(ctx context.Context, name string) *spill {
	s := &spill{w: w, ctx: ctx, name: name, inline: w.inline}
	w.track(s)
	return s
}

// written is the blob's length so far.
func (s *spill) written() int64 { return s.total + int64(len(s.buf)) }

// maybeFlush writes buf out once it is full and can no longer be inlined.
func (s *spill) maybeFlush() error {
	if len(s.buf) < writeBufSize || (s.file == nil && int64(len(s.buf)) < s.inline) {
		return nil
	}
	return s.flush()
}

func (s *spill) flush() error {
	if s.beforeFlush != nil {
		s.beforeFlush()
	}
	if s.file == nil {
		p, err := storage.CreateOnce(s.ctx, s.w.dir.Storage, path.Join(s.w.dir.Path, s.name))
		if err != nil {
			return err
		}
		s.file = newAsyncFile(p)
	}
	s.total += int64(len(s.buf))
	s.buf = s.file.write(s.buf)
	return nil
}

// finish commits the file, or returns the bytes to inline.
func (s *spill) finish() (blob, error) {
	defer s.w.untrack(s)
	if s.file == nil && s.written() < s.inline {
		b := blob{Size: s.written(), CRC32C: crc32.Checksum(s.buf, envelope.Castagnoli)}
		if len(s.buf) > 0 {
			b.Inline = bytes.Clone(s.buf) // do not pin the write buffer
		}
		return b, nil
	}
	if s.written() == 0 {
		return blob{}, nil
	}
	if len(s.buf) > 0 || s.file == nil {
		if err := s.flush(); err != nil {
			s.abort()
			return blob{}, err
		}
	}
	f := s.file
	s.file, s.buf = nil, nil
	crc, err := f.commit()
	if err != nil {
		return blob{}, err
	}
	s.w.written.Add(s.name)
	return blob{File: s.name, Size: s.total, CRC32C: crc}, nil
}

// abort drops whatever was written.
func (s *spill) abort() {
	if s.file != nil {
		s.file.abort()
		s.file = nil
	}
	s.buf = nil
}

// asyncFile writes buffers to a pending file on its own goroutine, so the
// encoding of one buffer overlaps the write (and checksum) of the last.
type asyncFile struct {
	p    storage.Pending
	todo chan []byte
	free chan []byte
	done chan struct{}
	err  error  // read after done
	crc  uint32 // of everything written; read after done
}

func newAsyncFile(p storage.Pending) *asyncFile {
	a := &asyncFile{p: p, todo: make(chan []byte, 1), free: make(chan []byte, 3), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *asyncFile) run() {
	defer close(a.done)
	for b := range a.todo {
		if a.err == nil {
			a.crc = crc32.Update(a.crc, envelope.Castagnoli, b)
			_, a.err = a.p.Write(b)
		}
		if cap(b) <= 4*writeBufSize { // one huge record should not pin its buffer
			a.free <- b[:0]
		}
	}
}

// write queues b and returns an empty buffer to fill next.
func (a *asyncFile) write(b []byte) []byte {
	a.todo <- b
	select {
	case nb := <-a.free:
		return nb
	default:
		return make([]byte, 0, writeBufSize)
	}
}

// wait stops the goroutine once everything queued is written.
func (a *asyncFile) wait() error {
	close(a.todo)
	<-a.done
	return a.err
}

func (a *asyncFile) commit() (uint32, error) {
	if err := a.wait(); err != nil {
		a.p.Abort()
		return 0, err
	}
	return a.crc, a.p.Commit()
}

func (a *asyncFile) abort() {
	a.wait()
	a.p.Abort()
}
