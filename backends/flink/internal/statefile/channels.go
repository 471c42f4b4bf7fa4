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
	"github.com/stateutil/stateutil/snapshot"
)

// The channel state of unaligned checkpoints (FLINK-FORMATS.md §5): per
// subtask, input-channel and result-subpartition handles, each a stream
// of buffers at the offsets it lists. A stream starts with an int version
// (0); a buffer is an int length, then that many bytes. The size Flink
// records for a channel counts its buffers with their lengths, and the
// version too where the stream is the channel's own bytes inside
// `_metadata` (Flink copies a small channel's buffers out of the shared
// stream into a byte-stream handle of its own).

// ChannelHeader is a channel state stream's version int.
const ChannelHeader = 4

// InFlight lists what a subtask's channel handles hold, one row a channel.
func InFlight(st *metadata.SubtaskState) []snapshot.InFlight {
	var out []snapshot.InFlight
	add := func(dir string, hs []*metadata.ChannelHandle) {
		for _, h := range hs {
			file, framing := "", int64(0)
			if d := h.Delegate; d != nil && d.Type != metadata.HandleByteStream {
				file = d.Path
			} else {
				framing = ChannelHeader
			}
			for _, c := range h.Channels() {
				data := c.Size - framing - 4*int64(len(c.Offsets))
				out = append(out, snapshot.InFlight{Direction: dir, Gate: int(c.Info[0]), Channel: int(c.Info[1]),
					Buffers: len(c.Offsets), Bytes: max(0, data), File: file})
			}
		}
	}
	add(snapshot.InputChannel, st.InputChannels)
	add(snapshot.ResultSubpartition, st.ResultSubpartitions)
	slices.SortStableFunc(out, func(a, b snapshot.InFlight) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Gate, b.Gate), cmp.Compare(a.Channel, b.Channel))
	})
	return out
}

// CheckChannels checks every channel handle of the operators' subtasks
// (CheckChannelHandle), one error a handle found wrong.
func CheckChannels(ctx context.Context, res *Resolver, ops []*metadata.OperatorState) []error {
	var errs []error
	for _, op := range ops {
		for _, st := range op.Subtasks {
			if st == nil {
				continue
			}
			for _, h := range append(slices.Clip(st.InputChannels), st.ResultSubpartitions...) {
				if err := ctx.Err(); err != nil {
					return append(errs, err)
				}
				if err := CheckChannelHandle(ctx, res, h); err != nil {
					errs = append(errs, fmt.Errorf("operator %s subtask %d, in-flight data: %w", op.ID, st.Index, err))
				}
			}
		}
	}
	return errs
}

// CheckChannelHandle reads the buffer lengths of a channel handle's
// stream and checks them against what `_metadata` records: the stream
// exists and is as long as recorded, starts with version 0, every buffer
// lies inside it after the one before, and the buffers add up to each
// channel's size (a merged handle's: to the sizes of its channels).
func CheckChannelHandle(ctx context.Context, res *Resolver, h *metadata.ChannelHandle) error {
	s, err := openChannelStream(ctx, res, h.Delegate)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.checkVersion(); err != nil {
		return err
	}
	_, err = s.handleBuffers(h)
	return err
}

// channelStream is a channel handle's stream, read a few bytes at a time.
type channelStream struct {
	data   []byte // inline bytes, or nil
	f      io.ReaderAt
	closer io.Closer
	size   int64
	file   string
	base   int64 // offset of the stream's first byte in file
	inline bool
}

func openChannelStream(ctx context.Context, res *Resolver, h *metadata.StreamHandle) (*channelStream, error) {
	if h == nil {
		return nil, fmt.Errorf("channel handle without a stream: %w", wire.ErrCorrupt)
	}
	loc, err := res.Locate(ctx, h)
	if err != nil {
		return nil, err
	}
	if loc.Inline {
		return &channelStream{data: h.Data, size: int64(len(h.Data)), file: res.MetadataFile, base: h.DataOffset, inline: true}, nil
	}
	if h.Type == metadata.HandleEmptySegmentFile {
		return &channelStream{file: loc.URI()}, nil
	}
	s, err := res.Open(ctx, h, loc)
	if err != nil {
		return nil, err
	}
	return &channelStream{f: s.F, closer: s.F, size: s.Size, file: s.File, base: s.Off}, nil
}

func (s *channelStream) close() {
	if s.closer != nil {
		s.closer.Close()
	}
}

// int32At reads the int at offset off of the stream.
func (s *channelStream) int32At(off int64) (int32, error) {
	if off < 0 || off+4 > s.size {
		return 0, &wire.CorruptError{File: s.file, Offset: s.base + max(0, min(off, s.size)), Reason: fmt.Sprintf("an int at offset %d of a channel state stream of %d bytes", off, s.size)}
	}
	if s.data != nil {
		return int32(binary.BigEndian.Uint32(s.data[off:])), nil
	}
	var b [4]byte
	if _, err := s.f.ReadAt(b[:], s.base+off); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%q at offset %d: %w", s.file, s.base+off, err)
	}
	return int32(binary.BigEndian.Uint32(b[:])), nil
}

// checkVersion checks the version int a stream starts with.
func (s *channelStream) checkVersion() error {
	if v, err := s.int32At(0); err != nil {
		return err
	} else if v != 0 {
		return &wire.CorruptError{File: s.file, Offset: s.base, Reason: fmt.Sprintf("channel state version %d, Flink writes 0", v)}
	}
	return nil
}

// handleBuffers walks the buffers of each channel of h (buffers), and
// checks that a merged handle's channels take what it records.
func (s *channelStream) handleBuffers(h *metadata.ChannelHandle) ([][]buffer, error) {
	var out [][]buffer
	var sum int64
	for _, c := range h.Channels() {
		bufs, err := s.buffers(c)
		if err != nil {
			return nil, err
		}
		out = append(out, bufs)
		sum += c.Size
	}
	if h.Merged() && sum != h.Size {
		return nil, &wire.CorruptError{File: s.file, Offset: s.base, Reason: fmt.Sprintf("the channels of a merged handle take %d bytes, _metadata records %d", sum, h.Size)}
	}
	return out, nil
}

// buffer is one buffer of a channel in its stream: the offset of its
// length, and the length.
type buffer struct {
	off int64
	n   int64
}

// end is the offset after the buffer's bytes.
func (b buffer) end() int64 { return b.off + 4 + b.n }

// buffers walks one channel's buffers: each lies inside the stream,
// after the header and the buffer before it, and together, with their
// lengths, they take the channel's size (the version too where the
// stream is the channel's own bytes inside `_metadata`).
func (s *channelStream) buffers(c metadata.Channel) ([]buffer, error) {
	out := make([]buffer, 0, len(c.Offsets))
	var n int64
	next := int64(ChannelHeader)
	for _, off := range c.Offsets {
		if off < next {
			return nil, &wire.CorruptError{File: s.file, Offset: s.base + max(0, min(off, s.size)),
				Reason: fmt.Sprintf("channel (%d, %d): a buffer at offset %d, before the end of the header or of the buffer before it (%d)", c.Info[0], c.Info[1], off, next)}
		}
		l, err := s.int32At(off)
		if err != nil {
			return nil, err
		}
		b := buffer{off: off, n: int64(l)}
		if l < 0 || b.end() > s.size {
			return nil, &wire.CorruptError{File: s.file, Offset: s.base + off,
				Reason: fmt.Sprintf("channel (%d, %d): a buffer of %d bytes at offset %d of a stream of %d", c.Info[0], c.Info[1], l, off, s.size)}
		}
		out = append(out, b)
		next = b.end()
		n += 4 + b.n
	}
	want := c.Size
	if s.inline {
		want -= ChannelHeader
	}
	if n != want {
		return nil, &wire.CorruptError{File: s.file, Offset: s.base, Reason: fmt.Sprintf("channel (%d, %d): its %d buffers take %d bytes, _metadata records %d",
			c.Info[0], c.Info[1], len(c.Offsets), n, c.Size)}
	}
	return out, nil
}
