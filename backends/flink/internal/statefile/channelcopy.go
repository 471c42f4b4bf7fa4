package statefile

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// CopyChannels copies the channel state of one subtask's handles hs into
// out, the start of a stream of its own, and returns the handles as the
// copy records them, in hs's order:
//
//   - a handle whose stream is inside `_metadata` as it is (Flink copies a
//     small channel's buffers out of the shared stream into bytes of its
//     own, which travel with `_metadata`);
//   - a handle whose stream is in a file with its buffers copied into out
//     and its offsets there, on the stream to, whose Size is set to the
//     bytes written.
//
// out gets the version, then, source stream after source stream, every
// buffer of the handles on it in the order that stream holds them: Flink
// reads a stream's buffers in offset order, whichever channel they are
// of, so it hands them back to the channels in the order it did. Nothing
// is written when every stream is inside `_metadata`. Sizes stay as
// recorded: a channel in a file counts its buffers with their lengths
// wherever they lie. What CheckChannelHandle refuses, and buffers of two
// channels that overlap, fail it at the file and offset, before any byte
// of that stream is copied.
func CopyChannels(ctx context.Context, res *Resolver, hs []*metadata.ChannelHandle, out io.Writer, to *metadata.StreamHandle) ([]*metadata.ChannelHandle, error) {
	copied := make([]*metadata.ChannelHandle, len(hs))
	type source struct {
		s       *channelStream
		handles []int // indexes into hs
	}
	var sources []*source
	byStream := map[string]*source{}
	defer func() {
		for _, src := range sources {
			src.s.close()
		}
	}()
	for i, h := range hs {
		if !InFile(h) {
			if err := CheckChannelHandle(ctx, res, h); err != nil {
				return nil, err
			}
			c := *h
			copied[i] = &c
			continue
		}
		loc, err := res.Locate(ctx, h.Delegate)
		if err != nil {
			return nil, err
		}
		key := fmt.Sprintf("%s@%d", loc.URI(), loc.Offset)
		src := byStream[key]
		if src == nil {
			s, err := openChannelStream(ctx, res, h.Delegate)
			if err != nil {
				return nil, err
			}
			src = &source{s: s}
			sources = append(sources, src)
			byStream[key] = src
			if err := s.checkVersion(); err != nil {
				return nil, err
			}
		}
		src.handles = append(src.handles, i)
	}
	if len(sources) == 0 {
		return copied, nil
	}
	w := &channelWriter{w: out, buf: make([]byte, 64<<10)}
	w.header()
	for _, src := range sources {
		if err := w.copyStream(ctx, src.s, hs, src.handles, copied, to); err != nil {
			return nil, err
		}
	}
	to.Size = w.n
	return copied, w.err
}

// InFile reports whether a channel handle's stream is not inside
// `_metadata`: a file's, or a segment of one.
func InFile(h *metadata.ChannelHandle) bool {
	return h.Delegate == nil || h.Delegate.Type != metadata.HandleByteStream
}

// channelWriter writes a channel state stream, counting its bytes.
type channelWriter struct {
	w   io.Writer
	n   int64
	buf []byte
	err error
}

func (w *channelWriter) Write(b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.err = err
	return n, err
}

func (w *channelWriter) header() {
	var v [ChannelHeader]byte // version 0
	_, _ = w.Write(v[:])
}

// piece is one buffer of a channel of a handle: its place in the source
// stream, and which handle, channel and buffer of it it is.
type piece struct {
	buffer
	handle, channel, index int
}

// copyStream copies the buffers the handles hs[of] hold of stream s, in
// stream order, and sets copied[of] to those handles on the stream to,
// with their offsets in w's stream.
func (w *channelWriter) copyStream(ctx context.Context, s *channelStream, hs []*metadata.ChannelHandle, of []int, copied []*metadata.ChannelHandle, to *metadata.StreamHandle) error {
	var pieces []piece
	channels := map[int][]metadata.Channel{}
	for _, i := range of {
		bufs, err := s.handleBuffers(hs[i])
		if err != nil {
			return err
		}
		cs := slices.Clone(hs[i].Channels())
		for j := range cs {
			for k, b := range bufs[j] {
				pieces = append(pieces, piece{b, i, j, k})
			}
			cs[j].Offsets = make([]int64, len(bufs[j]))
		}
		channels[i] = cs
	}
	slices.SortStableFunc(pieces, func(a, b piece) int { return cmp.Compare(a.off, b.off) })
	for k := 1; k < len(pieces); k++ {
		if a, b := pieces[k-1], pieces[k]; b.off < a.end() {
			ca, cb := channels[a.handle][a.channel].Info, channels[b.handle][b.channel].Info
			return &wire.CorruptError{File: s.file, Offset: s.base + b.off,
				Reason: fmt.Sprintf("a buffer of channel (%d, %d) at offset %d overlaps one of channel (%d, %d) at offset %d", cb[0], cb[1], b.off, ca[0], ca[1], a.off)}
		}
	}
	for _, p := range pieces {
		if err := ctx.Err(); err != nil {
			return err
		}
		channels[p.handle][p.channel].Offsets[p.index] = w.n
		if err := w.copyBuffer(s, p.buffer); err != nil {
			return err
		}
	}
	for _, i := range of {
		c := *hs[i]
		c.Delegate = to
		if cs := channels[i]; c.Merged() {
			c.MergedChannels, c.SerializedChannelOffsets = cs, metadata.MergedChannelOffsets(cs)
		} else {
			c.Offsets = cs[0].Offsets
		}
		copied[i] = &c
	}
	return nil
}

// copyBuffer copies one buffer of a file's stream, its length and its
// bytes, as the walk found them.
func (w *channelWriter) copyBuffer(s *channelStream, b buffer) error {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(b.n))
	if _, err := w.Write(l[:]); err != nil {
		return err
	}
	n, err := io.CopyBuffer(w, io.NewSectionReader(s.f, s.base+b.off+4, b.n), w.buf)
	switch {
	case w.err != nil:
		return w.err
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("%q at offset %d: %w", s.file, s.base+b.off+4+n, err)
	case n != b.n:
		return &wire.CorruptError{File: s.file, Offset: s.base + b.off + 4 + n, Reason: fmt.Sprintf("a buffer of %d bytes ends after %d: the file is shorter than when it was checked", b.n, n)}
	}
	return nil
}
