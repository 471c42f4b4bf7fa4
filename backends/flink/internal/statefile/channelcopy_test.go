package statefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// channelFixture is one subtask's channel state as a checkpoint holds
// it: its handles, and what each channel's buffers hold, in order.
type channelFixture struct {
	dir     string
	handles []*metadata.ChannelHandle
	// buffers[h][c] are the payloads of channel c of handle h.
	buffers [][][][]byte
	// fileBytes is what the handles in files hold: the buffers with
	// their lengths.
	fileBytes int64
}

// randomChannels writes the channel state of one subtask the way Flink
// does: into shared streams (files starting with the version, buffers
// of every channel of the subtask, and of another subtask, interleaved
// as they were written), held by plain handles (one channel) and merged
// ones (several channels on one stream), and small channels copied out
// into bytes of their own inside `_metadata`.
func randomChannels(t *testing.T, rng *rand.Rand) *channelFixture {
	t.Helper()
	fx := &channelFixture{dir: t.TempDir()}
	streams := 1 + rng.IntN(2)
	type pending struct{ h, c int }
	for s := range streams {
		// The channels on this stream: some plain handles, some merged.
		var chans []pending
		for range 1 + rng.IntN(3) {
			h := len(fx.handles)
			n := 1
			merged := rng.IntN(2) == 0
			if merged {
				n = 1 + rng.IntN(3)
			}
			ch := &metadata.ChannelHandle{Type: 1, SubtaskIndex: 3}
			if merged {
				ch.Type = 3
			}
			fx.handles = append(fx.handles, ch)
			fx.buffers = append(fx.buffers, make([][][]byte, n))
			for c := range n {
				chans = append(chans, pending{h, c})
			}
		}
		// Write the stream: buffers of random channels (and of another
		// subtask, which the handles do not list) in random order.
		data := []byte{0, 0, 0, 0}
		offsets := map[pending][]int64{}
		for range 2 + rng.IntN(12) {
			payload := make([]byte, rng.IntN(3)*rng.IntN(200))
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			off := int64(len(data))
			data = binary.BigEndian.AppendUint32(data, uint32(len(payload)))
			data = append(data, payload...)
			if rng.IntN(4) == 0 {
				continue // another subtask's
			}
			p := chans[rng.IntN(len(chans))]
			offsets[p] = append(offsets[p], off)
			fx.buffers[p.h][p.c] = append(fx.buffers[p.h][p.c], payload)
			fx.fileBytes += 4 + int64(len(payload))
		}
		name := fmt.Sprintf("stream-%d", s)
		if err := os.WriteFile(filepath.Join(fx.dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		delegate := func() *metadata.StreamHandle {
			if s == 0 {
				return &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: name, Size: int64(len(data))}
			}
			return &metadata.StreamHandle{Type: metadata.HandleFile, Path: "file:" + filepath.Join(fx.dir, name), Size: int64(len(data))}
		}
		for _, p := range chans {
			ch := fx.handles[p.h]
			size := int64(0)
			for _, b := range fx.buffers[p.h][p.c] {
				size += 4 + int64(len(b))
			}
			c := metadata.Channel{Info: [2]int32{int32(p.h), int32(p.c)}, Size: size, Offsets: offsets[p]}
			ch.Delegate = delegate()
			if ch.Merged() {
				ch.MergedChannels = append(ch.MergedChannels, c)
				ch.Size += size
				ch.SerializedChannelOffsets = metadata.MergedChannelOffsets(ch.MergedChannels)
			} else {
				ch.Info, ch.Size, ch.Offsets = c.Info, c.Size, c.Offsets
			}
		}
	}
	// Channels whose buffers Flink copied out of a stream under its
	// inline threshold: the version, then one buffer of them all.
	for range rng.IntN(3) {
		payload := make([]byte, rng.IntN(50))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		data := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, uint32(len(payload)))
		data = append(data, payload...)
		h := &metadata.ChannelHandle{Type: 2, SubtaskIndex: 3, Info: [2]int32{9, int32(len(fx.handles))}, Offsets: []int64{ChannelHeader},
			Size: int64(len(data)), Delegate: &metadata.StreamHandle{Type: metadata.HandleByteStream, Name: "inline", Data: data, Size: int64(len(data))}}
		fx.handles = append(fx.handles, h)
		fx.buffers = append(fx.buffers, [][][]byte{{payload}})
	}
	return fx
}

func (fx *channelFixture) resolver() *Resolver {
	return NewResolver(storage.Local(), filepath.Join(fx.dir, "_metadata"), nil)
}

// copyChannels copies fx's handles into a stream of bytes.
func (fx *channelFixture) copyChannels() ([]*metadata.ChannelHandle, *metadata.StreamHandle, []byte, error) {
	var out bytes.Buffer
	to := &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "copy"}
	hs, err := CopyChannels(context.Background(), fx.resolver(), fx.handles, &out, to)
	return hs, to, out.Bytes(), err
}

// bufferAt reads the buffer whose length is at off of stream.
func bufferAt(t *testing.T, stream []byte, off int64) []byte {
	t.Helper()
	if off < 0 || off+4 > int64(len(stream)) {
		t.Fatalf("a buffer at offset %d of a stream of %d bytes", off, len(stream))
	}
	n := int64(binary.BigEndian.Uint32(stream[off:]))
	if off+4+n > int64(len(stream)) {
		t.Fatalf("a buffer of %d bytes at offset %d of a stream of %d bytes", n, off, len(stream))
	}
	return stream[off+4 : off+4+n]
}

// The copy of a subtask's channel state holds every buffer of every
// channel, each at the offset its handle records, with the bytes it had;
// the handles keep their kind, channels and sizes; the stream holds the
// version and these buffers alone (not another subtask's), in the order
// their source stream held them; and a channel kept inside `_metadata`
// stays as it was. Whatever the mix of plain, merged and inline handles
// on one or two streams.
func TestCopyChannelsProperty(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 42))
		fx := randomChannels(t, rng)
		hs, to, stream, err := fx.copyChannels()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(hs) != len(fx.handles) {
			t.Fatalf("seed %d: %d handles copied of %d", seed, len(hs), len(fx.handles))
		}
		inFile := slices.ContainsFunc(fx.handles, func(h *metadata.ChannelHandle) bool { return h.Delegate.Type != metadata.HandleByteStream })
		switch {
		case !inFile && len(stream) != 0:
			t.Fatalf("seed %d: %d bytes written for channels all inside _metadata", seed, len(stream))
		case inFile && (int64(len(stream)) != ChannelHeader+fx.fileBytes || !bytes.Equal(stream[:4], []byte{0, 0, 0, 0})):
			t.Fatalf("seed %d: a stream of %d bytes starting %x, want the version 0 and %d bytes of buffers", seed, len(stream), stream[:min(4, len(stream))], fx.fileBytes)
		case inFile && to.Size != int64(len(stream)):
			t.Fatalf("seed %d: the copy's handle records %d bytes, %d written", seed, to.Size, len(stream))
		}
		// by source stream: (source offset, copy offset) of each buffer
		order := map[string][][2]int64{}
		for i, h := range fx.handles {
			got := hs[i]
			if h.Delegate.Type == metadata.HandleByteStream {
				if !reflect.DeepEqual(got, h) {
					t.Fatalf("seed %d: handle %d inside _metadata copied as %+v, want it as it was", seed, i, got)
				}
				continue
			}
			if got.Delegate != to || got.Type != h.Type || got.Size != h.Size || got.SubtaskIndex != h.SubtaskIndex || got.Info != h.Info {
				t.Fatalf("seed %d: handle %d copied as %+v from %+v", seed, i, got, h)
			}
			if got.Merged() && !bytes.Equal(got.SerializedChannelOffsets, metadata.MergedChannelOffsets(got.MergedChannels)) {
				t.Fatalf("seed %d: handle %d: its offset table does not list its channels", seed, i)
			}
			src, dst := h.Channels(), got.Channels()
			if len(src) != len(dst) {
				t.Fatalf("seed %d: handle %d has %d channels, its copy %d", seed, i, len(src), len(dst))
			}
			for c := range src {
				if dst[c].Info != src[c].Info || dst[c].Size != src[c].Size || len(dst[c].Offsets) != len(fx.buffers[i][c]) {
					t.Fatalf("seed %d: handle %d channel %d copied as %+v from %+v", seed, i, c, dst[c], src[c])
				}
				for b, off := range dst[c].Offsets {
					if p := bufferAt(t, stream, off); !bytes.Equal(p, fx.buffers[i][c][b]) {
						t.Fatalf("seed %d: handle %d channel %d buffer %d: %x at offset %d, want %x", seed, i, c, b, p, off, fx.buffers[i][c][b])
					}
					order[h.Delegate.Path] = append(order[h.Delegate.Path], [2]int64{src[c].Offsets[b], off})
				}
			}
		}
		for path, pairs := range order {
			slices.SortFunc(pairs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
			if !slices.IsSortedFunc(pairs, func(a, b [2]int64) int { return int(a[1] - b[1]) }) {
				t.Fatalf("seed %d: the buffers of %s are copied in another order than it holds them: %v", seed, path, pairs)
			}
		}
		// The copy is what verify accepts, handle by handle.
		if inFile {
			if err := os.WriteFile(filepath.Join(fx.dir, "copy"), stream, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i, h := range hs {
			if err := CheckChannelHandle(context.Background(), fx.resolver(), h); err != nil {
				t.Fatalf("seed %d: handle %d of the copy: %v", seed, i, err)
			}
		}
	}
}

// Channel state that does not hold what `_metadata` records stops the
// copy with one message naming the file and the offset.
func TestCopyChannelsDamage(t *testing.T) {
	// fixture: one stream file "s" holding two channels of a merged
	// handle, a buffer of 5 bytes each.
	stream := []byte{0, 0, 0, 0, 0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e', 0, 0, 0, 5, 'f', 'g', 'h', 'i', 'j'}
	handle := func() *metadata.ChannelHandle {
		cs := []metadata.Channel{{Info: [2]int32{0, 0}, Size: 9, Offsets: []int64{4}}, {Info: [2]int32{0, 1}, Size: 9, Offsets: []int64{13}}}
		return &metadata.ChannelHandle{Type: 3, Size: 18, MergedChannels: cs, SerializedChannelOffsets: metadata.MergedChannelOffsets(cs),
			Delegate: &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "s", Size: int64(len(stream))}}
	}
	cases := []struct {
		name   string
		edit   func(data []byte, h *metadata.ChannelHandle) []byte
		offset int64
		says   string
	}{
		{"healthy", func(d []byte, _ *metadata.ChannelHandle) []byte { return d }, -1, ""},
		{"truncated file", func(d []byte, _ *metadata.ChannelHandle) []byte { return d[:len(d)-3] }, 19, "file is 19 bytes, _metadata says 22"},
		{"version", func(d []byte, _ *metadata.ChannelHandle) []byte { d[3] = 2; return d }, 0, "channel state version 2"},
		{"buffer past the end", func(d []byte, _ *metadata.ChannelHandle) []byte { d[16] = 99; return d }, 13, "channel (0, 1): a buffer of 99 bytes at offset 13 of a stream of 22"},
		{"offset past the end", func(d []byte, h *metadata.ChannelHandle) []byte {
			h.MergedChannels[1].Offsets[0] = 40
			return d
		}, 22, "an int at offset 40"},
		{"offset in the header", func(d []byte, h *metadata.ChannelHandle) []byte {
			h.MergedChannels[0].Offsets[0] = 2
			return d
		}, 2, "a buffer at offset 2, before the end of the header"},
		{"sizes", func(d []byte, h *metadata.ChannelHandle) []byte {
			h.MergedChannels[0].Size = 7
			return d
		}, 0, "channel (0, 0): its 1 buffers take 9 bytes, _metadata records 7"},
		{"overlapping channels", func(d []byte, h *metadata.ChannelHandle) []byte {
			h.MergedChannels[1].Offsets[0] = 4
			return d
		}, 4, "a buffer of channel (0, 1) at offset 4 overlaps one of channel (0, 0) at offset 4"},
		{"merged size", func(d []byte, h *metadata.ChannelHandle) []byte { h.Size = 20; return d }, 0, "the channels of a merged handle take 18 bytes, _metadata records 20"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := handle()
			data := c.edit(slices.Clone(stream), h)
			file := filepath.Join(dir, "s")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err := CopyChannels(context.Background(), NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil), []*metadata.ChannelHandle{h}, &out,
				&metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "copy"})
			if c.says == "" {
				if err != nil {
					t.Fatalf("healthy channel state: %v", err)
				}
				return
			}
			want := fmt.Sprintf("%q at offset %d: ", storage.Local().URI(file), c.offset)
			if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want damage saying %q and %q", err, want, c.says)
			}
		})
	}
}

// A missing stream file is not found, named.
func TestCopyChannelsMissingFile(t *testing.T) {
	dir := t.TempDir()
	h := &metadata.ChannelHandle{Type: 1, Info: [2]int32{0, 0}, Size: 9, Offsets: []int64{4},
		Delegate: &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "gone", Size: 13}}
	_, err := CopyChannels(context.Background(), NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil), []*metadata.ChannelHandle{h}, &bytes.Buffer{},
		&metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "copy"})
	if !errors.Is(err, snapshot.ErrNotFound) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("got %v, want not found naming the file", err)
	}
}

// FuzzCopyChannels copies arbitrary bytes as a file's channel stream,
// under a plain handle and a merged one whose offsets and sizes are
// arbitrary too: it fails cleanly as damage, or copies what verify then
// accepts, every buffer at its new offset with the bytes it had.
func FuzzCopyChannels(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i', 0, 0, 0, 1, '!'}, int64(4), int64(6), int64(10), int64(5))
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, int64(4), int64(8), int64(4), int64(0))
	f.Add([]byte{0, 0, 0, 1}, int64(0), int64(4), int64(-1), int64(1<<40))
	f.Fuzz(func(t *testing.T, data []byte, off1, size1, off2, size2 int64) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		d := &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "s", Size: int64(len(data))}
		cs := []metadata.Channel{{Info: [2]int32{0, 1}, Size: size2, Offsets: []int64{off2}}}
		hs := []*metadata.ChannelHandle{
			{Type: 1, Info: [2]int32{0, 0}, Offsets: []int64{off1}, Size: size1, Delegate: d},
			{Type: 3, Size: size2, MergedChannels: cs, SerializedChannelOffsets: metadata.MergedChannelOffsets(cs), Delegate: d},
		}
		var out bytes.Buffer
		to := &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "copy"}
		got, err := CopyChannels(context.Background(), NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil), hs, &out, to)
		if err != nil {
			if !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("not damage: %v", err)
			}
			return
		}
		for i, h := range got {
			for c, ch := range h.Channels() {
				want := bufferAt(t, data, hs[i].Channels()[c].Offsets[0])
				if p := bufferAt(t, out.Bytes(), ch.Offsets[0]); !bytes.Equal(p, want) {
					t.Fatalf("handle %d: %x copied as %x", i, want, p)
				}
			}
		}
	})
}
