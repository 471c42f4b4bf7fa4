package storage

import (
	"errors"
	"os"
	"sync"
	"unsafe"
)

// A large local file made by CreateOnce is written with direct I/O: from
// the process's own buffers to the disk, not through the page cache. A
// snapshot's state is written once and read later, if ever, by another
// process: caching it costs a kernel copy of every byte, fresh page-cache
// memory for all of them, and the eviction of pages a running job uses. A
// goroutine writes one chunk while the caller fills the next, so the disk
// works while the caller computes. Files smaller than a chunk are written
// the ordinary way. (A plain copy is no such caller: one stream of direct
// writes is slower than the kernel's write-back, so Create stays cached.)

// directChunk is the size of a direct write, and how much a file holds
// before it turns to direct I/O.
const directChunk = 2 << 20

// directAlign is the alignment direct I/O asks of buffers, offsets and
// lengths (the logical block size of any common disk).
const directAlign = 4096

// directWriter writes f from offset 0 with direct I/O, chunk by chunk.
type directWriter struct {
	f    *os.File
	cur  []byte      // being filled, up to directChunk
	free chan []byte // chunks the writer goroutine is done with
	full chan []byte // chunks to write, in order
	done chan struct{}
	size int64 // bytes accepted

	mu  sync.Mutex
	err error // the first write error
}

// newDirectWriter turns f to direct I/O, or reports false when its file
// system does not support it.
func newDirectWriter(f *os.File) (*directWriter, bool) {
	if !setDirect(f, true) {
		return nil, false
	}
	d := &directWriter{f: f, free: make(chan []byte, 2), full: make(chan []byte, 2), done: make(chan struct{})}
	for range 2 {
		d.free <- *chunkPool.Get().(*[]byte)
	}
	d.cur = (<-d.free)[:0]
	go d.run()
	return d, true
}

// chunkPool keeps chunks for the next file: fresh memory costs a page
// fault and a zeroed page per 4 KiB, as much as the copy it serves.
var chunkPool = sync.Pool{New: func() any { b := alignedBuffer(directChunk); return &b }}

// alignedBuffer is n bytes starting at a multiple of directAlign. (Go's
// heap does not move objects.)
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign)) % directAlign
	return b[skip : skip+n : skip+n]
}

// release returns the chunks once the writer goroutine has ended.
func (d *directWriter) release() {
	for range 2 {
		b := (<-d.free)[:directChunk]
		chunkPool.Put(&b)
	}
}

func (d *directWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if err := d.failed(); err != nil {
			return n - len(b), err
		}
		k := copy(d.cur[len(d.cur):cap(d.cur)], b)
		d.cur, b = d.cur[:len(d.cur)+k], b[k:]
		d.size += int64(k)
		if len(d.cur) == cap(d.cur) {
			d.full <- d.cur
			d.cur = (<-d.free)[:0]
		}
	}
	return n, nil
}

// finish writes what is left, zero-padded to the alignment, waits for
// the writes and cuts the file to the bytes accepted.
func (d *directWriter) finish() error {
	if n := len(d.cur); n > 0 {
		padded := (n + directAlign - 1) / directAlign * directAlign
		clear(d.cur[n:padded])
		d.full <- d.cur[:padded]
	} else {
		d.free <- d.cur
	}
	d.cur = nil
	close(d.full)
	<-d.done
	d.release()
	if err := d.failed(); err != nil {
		return err
	}
	return d.f.Truncate(d.size)
}

// stop ends the writer goroutine, writing nothing more.
func (d *directWriter) stop() {
	d.fail(errAborted)
	if d.cur != nil {
		d.free <- d.cur
		d.cur = nil
		close(d.full)
		<-d.done
		d.release()
	}
}

var errAborted = errors.New("aborted")

func (d *directWriter) run() {
	defer close(d.done)
	var off int64
	for chunk := range d.full {
		if d.failed() == nil {
			d.fail(d.writeAt(chunk, off))
		}
		off += int64(len(chunk))
		d.free <- chunk
	}
}

// writeAt writes chunk at off; where the file system refuses the direct
// write after all, the file goes back to ordinary writes.
func (d *directWriter) writeAt(chunk []byte, off int64) error {
	_, err := d.f.WriteAt(chunk, off)
	if err != nil && errors.Is(err, errDirectRefused) && setDirect(d.f, false) {
		_, err = d.f.WriteAt(chunk, off)
	}
	return err
}

func (d *directWriter) fail(err error) {
	if err == nil {
		return
	}
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
}

func (d *directWriter) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}
