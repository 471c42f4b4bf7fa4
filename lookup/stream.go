package lookup

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/stateutil/stateutil/internal/recovered"
	"github.com/stateutil/stateutil/snapshot"
)

// Encoder appends one record, encoded, to b.
type Encoder func(b []byte, rec *Record) []byte

// chunkBytes is about how much a chunk of encoded records holds.
const chunkBytes = 256 << 10

// chunksAhead is how many chunks a job may encode before the writer
// takes them: about a job's worth (see pieceBytes), so that the jobs
// after the one being written are read meanwhile.
const chunksAhead = 32

// chunk is encoded records: ends[i] is where record i ends in b.
type chunk struct {
	b    []byte
	ends []int
}

// Stream encodes what Dump yields with enc and calls write with the
// encoded records in Dump's order, a chunk of about 256 KiB at a time
// holding n whole records. Pieces of subtasks are read and encoded on up
// to GOMAXPROCS goroutines at once, each at most chunksAhead chunks ahead
// of write, so memory stays bounded by a key group and a few MiB per
// goroutine. limit, when positive, stops Stream after that many records.
// A write returning ErrStop ends Stream without error.
func Stream(ctx context.Context, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, limit int64, enc Encoder, write func(b []byte, n int) error) error {
	jobs, err := plan(r.Snapshot(), &f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &streamer{ctx: ctx, free: make(chan *chunk, 2*chunksAhead*runtime.GOMAXPROCS(0))}
	outs, errs := make([]chan *chunk, len(jobs)), make([]error, len(jobs))
	for i := range outs {
		outs[i] = make(chan *chunk, chunksAhead)
	}
	// A job is started only when fewer than window jobs are started and
	// not yet written: a worker never runs far ahead of the writer.
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	window := make(chan struct{}, workers+1)
	var next atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before Wait: a worker blocked on a full channel returns
	for range workers {
		wg.Go(func() {
			var g keyGroup
			for ctx.Err() == nil {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				errs[i] = s.encode(jobs[i], r, codecs, f, &g, enc, outs[i])
				close(outs[i]) // after errs[i] is set: the writer reads it then
			}
		})
	}
	written := int64(0)
	for i := range jobs {
		for {
			var c *chunk
			select {
			case c = <-outs[i]:
			case <-ctx.Done():
				return ctx.Err()
			}
			if c == nil {
				break
			}
			n := len(c.ends)
			if limit > 0 && written+int64(n) >= limit {
				n = int(limit - written)
				return ignoreStop(write(c.b[:c.ends[n-1]], n))
			}
			if err := write(c.b, n); err != nil {
				return ignoreStop(err)
			}
			written += int64(n)
			s.release(c)
		}
		if errs[i] != nil {
			return errs[i]
		}
		<-window
	}
	return nil
}

func ignoreStop(err error) error {
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

// streamer hands chunks between Stream's goroutines.
type streamer struct {
	ctx  context.Context
	free chan *chunk
}

func (s *streamer) get() *chunk {
	select {
	case c := <-s.free:
		return c
	default:
		return &chunk{b: make([]byte, 0, chunkBytes+chunkBytes/4)}
	}
}

func (s *streamer) release(c *chunk) {
	c.b, c.ends = c.b[:0], c.ends[:0]
	select {
	case s.free <- c:
	default:
	}
}

// send passes c on unless Stream has ended.
func (s *streamer) send(out chan<- *chunk, c *chunk) bool {
	select {
	case out <- c:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// encode runs one job, sending its records to out in chunks.
func (s *streamer) encode(j job, r snapshot.Reader, codecs *snapshot.Codecs, f Filter, g *keyGroup, enc Encoder, out chan<- *chunk) (err error) {
	defer recovered.Capture(&err)
	c := s.get()
	err = j.run(s.ctx, r, codecs, f, scalars, g, func(rec *Record) error {
		c.b = enc(c.b, rec)
		c.ends = append(c.ends, len(c.b))
		if len(c.b) < chunkBytes {
			return nil
		}
		if !s.send(out, c) {
			return s.ctx.Err()
		}
		c = s.get()
		return nil
	})
	if len(c.ends) > 0 && !s.send(out, c) && err == nil {
		err = s.ctx.Err()
	}
	return err
}
