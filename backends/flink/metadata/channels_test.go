package metadata

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// randomChannelsOf is a merged handle's channels: any infos, sizes and
// offsets, an empty offset list among them.
func randomChannelsOf(rng *rand.Rand) []Channel {
	cs := make([]Channel, 1+rng.IntN(5))
	for i := range cs {
		cs[i] = Channel{Info: [2]int32{rng.Int32N(9), rng.Int32N(1 << 20)}, Size: rng.Int64N(1 << 40), Offsets: []int64{}}
		for range rng.IntN(4) {
			cs[i].Offsets = append(cs[i].Offsets, rng.Int64N(1<<40))
		}
	}
	return cs
}

// A merged handle's offset table written by MergedChannelOffsets reads
// back as the channels it was written from.
func TestMergedChannelOffsetsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		cs := randomChannelsOf(rng)
		b := MergedChannelOffsets(cs)
		outer := wire.NewReader(nil, "t", 0)
		got := mergedChannels(b, "t", 0, "test", outer)
		if outer.Err != nil || !reflect.DeepEqual(got, cs) {
			t.Fatalf("%+v read back as %+v (%v)", cs, got, outer.Err)
		}
	}
}

// The offset tables of the merged handles Flink 2.3 wrote into the
// witness jobs' unaligned checkpoints are what MergedChannelOffsets
// writes for their channels.
func TestMergedChannelOffsetsAreFlinks(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-witness", "2.3.0", "*-unaligned", "snapshot", "*", "chk-*", "_metadata"))
	merged := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMetadata(data, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				for _, h := range append(st.InputChannels, st.ResultSubpartitions...) {
					if !h.Merged() {
						continue
					}
					merged++
					if !bytes.Equal(MergedChannelOffsets(h.MergedChannels), h.SerializedChannelOffsets) {
						t.Errorf("%s: a merged handle's table written anew differs from Flink's", f)
					}
				}
			}
		}
	}
	if merged == 0 {
		t.Fatalf("no merged channel handles in %d witness checkpoints", len(files))
	}
}

// A merged handle unmerges into one plain handle per channel, of the
// same direction, subtask and stream; a plain handle is its own.
func TestUnmerged(t *testing.T) {
	d := &StreamHandle{Type: HandleRelativeFile, Path: "s", Size: 99}
	for typ, plain := range map[byte]byte{3: 1, 4: 2} {
		cs := randomChannelsOf(rand.New(rand.NewPCG(uint64(typ), 1)))
		h := &ChannelHandle{Type: typ, SubtaskIndex: 7, Delegate: d, MergedChannels: cs, SerializedChannelOffsets: MergedChannelOffsets(cs)}
		got := h.Unmerged()
		if len(got) != len(cs) {
			t.Fatalf("type %d: %d handles for %d channels", typ, len(got), len(cs))
		}
		for i, u := range got {
			want := &ChannelHandle{Type: plain, SubtaskIndex: 7, Info: cs[i].Info, Offsets: cs[i].Offsets, Size: cs[i].Size, Delegate: d}
			if !reflect.DeepEqual(u, want) || u.Merged() {
				t.Errorf("type %d channel %d: %+v, want %+v", typ, i, u, want)
			}
		}
	}
	p := &ChannelHandle{Type: 1, Info: [2]int32{1, 2}, Offsets: []int64{4}, Size: 9, Delegate: d}
	if got := p.Unmerged(); len(got) != 1 || got[0] != p {
		t.Errorf("a plain handle unmerged: %+v", got)
	}
}

// `_metadata` before version 6 has no merged channel handles: a merged
// one is written as the plain handles it stands for, which read back so;
// from version 6 on it is written as it is.
func TestEncodeMergedChannelsByVersion(t *testing.T) {
	cs := randomChannelsOf(rand.New(rand.NewPCG(5, 6)))
	d := &StreamHandle{Type: HandleRelativeFile, Path: "op1-0-channels", Size: 1 << 20}
	in := &ChannelHandle{Type: 3, SubtaskIndex: 0, Delegate: d, MergedChannels: cs, SerializedChannelOffsets: MergedChannelOffsets(cs)}
	out := &ChannelHandle{Type: 2, SubtaskIndex: 0, Info: [2]int32{1, 0}, Offsets: []int64{4}, Size: 9, Delegate: d}
	for _, v := range []int{4, 5, 6} {
		m := &Metadata{Version: v, CheckpointID: 1, Operators: []*OperatorState{{ID: OperatorID{1}, Parallelism: 1, MaxParallelism: 128,
			Subtasks: []*SubtaskState{{Index: 0, InputChannels: []*ChannelHandle{in}, ResultSubpartitions: []*ChannelHandle{out}}}}}}
		data, err := EncodeMetadata(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseMetadata(data, "t")
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		st := got.Operators[0].Subtasks[0]
		wantIn := []*ChannelHandle{in}
		if v < 6 {
			wantIn = in.Unmerged()
		}
		if len(st.InputChannels) != len(wantIn) || len(st.ResultSubpartitions) != 1 {
			t.Fatalf("v%d: %d input and %d output handles read back", v, len(st.InputChannels), len(st.ResultSubpartitions))
		}
		for i, h := range st.InputChannels {
			if h.Merged() != (v >= 6) || !reflect.DeepEqual(h.Channels(), wantIn[i].Channels()) || h.Delegate.Path != d.Path {
				t.Errorf("v%d: input handle %d read back as %+v, want %+v", v, i, h, wantIn[i])
			}
		}
		if h := st.ResultSubpartitions[0]; !reflect.DeepEqual(h.Channels(), out.Channels()) {
			t.Errorf("v%d: the output handle read back as %+v", v, h)
		}
	}
}
