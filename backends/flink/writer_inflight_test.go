package flink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// toSharedFiles moves the channel state of every subtask of the
// `_metadata` at md out of it into one file per subtask, as Flink writes
// channel state above its inline threshold: the version, then every
// buffer of the subtask's channels, on a stream that absolute file
// handles point into; a file's channel does not count the version.
func toSharedFiles(t *testing.T, md string) {
	t.Helper()
	dir := filepath.Dir(md)
	rewrite(t, md, func(m *metadata.Metadata) {
		for i, op := range m.Operators {
			for _, st := range op.Subtasks {
				hs := append(slices.Clip(st.InputChannels), st.ResultSubpartitions...)
				if len(hs) == 0 {
					continue
				}
				file := filepath.Join(dir, fmt.Sprintf("channels-%d-%d", i, st.Index))
				stream := []byte{0, 0, 0, 0}
				d := &metadata.StreamHandle{Type: metadata.HandleFile, Path: "file:" + file}
				for _, h := range hs {
					cs := h.Channels()
					h.Size = 0
					for j := range cs {
						offs := make([]int64, len(cs[j].Offsets))
						for k, off := range cs[j].Offsets {
							n := binary.BigEndian.Uint32(h.Delegate.Data[off:])
							offs[k] = int64(len(stream))
							stream = append(stream, h.Delegate.Data[off:off+4+int64(n)]...)
						}
						cs[j].Offsets, cs[j].Size = offs, cs[j].Size-statefile.ChannelHeader
						h.Size += cs[j].Size
					}
					h.Delegate = d
					if h.Merged() {
						h.MergedChannels, h.SerializedChannelOffsets = cs, metadata.MergedChannelOffsets(cs)
					} else {
						h.Offsets, h.Size = cs[0].Offsets, cs[0].Size
					}
				}
				d.Size = int64(len(stream))
				if err := os.WriteFile(file, stream, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// channelPayloads reads, for every channel of the `_metadata` at md, the
// bytes its buffers hold, one after another, by operator id, subtask,
// direction, and gate and channel: from `_metadata` or from the file its
// handle names, relative to md or absolute.
func channelPayloads(t *testing.T, md string) map[string][]byte {
	t.Helper()
	m, err := ReadMetadata(context.Background(), storage.Local(), md)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			for dir, hs := range map[string][]*metadata.ChannelHandle{"input": st.InputChannels, "output": st.ResultSubpartitions} {
				for _, h := range hs {
					stream := h.Delegate.Data
					if h.Delegate.Type != metadata.HandleByteStream {
						p := strings.TrimPrefix(h.Delegate.Path, "file:")
						if !filepath.IsAbs(p) {
							p = filepath.Join(filepath.Dir(md), p)
						}
						if stream, err = os.ReadFile(p); err != nil {
							t.Fatal(err)
						}
					}
					for _, c := range h.Channels() {
						key := fmt.Sprintf("%s/%d/%s/%v", op.ID, st.Index, dir, c.Info)
						out[key] = []byte{}
						for _, off := range c.Offsets {
							n := int64(binary.BigEndian.Uint32(stream[off:]))
							out[key] = append(out[key], stream[off+4:off+4+n]...)
						}
					}
				}
			}
		}
	}
	return out
}

// inFlightOf is what the snapshot at dir holds in flight, per operator
// and subtask: the channels and their buffers and bytes, wherever they
// are.
func inFlightOf(t *testing.T, dir string, pm map[string]string) map[string][]snapshot.InFlight {
	t.Helper()
	r, err := testReg.Open(context.Background(), dir, snapshot.OpenOptions{PathMap: pm})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string][]snapshot.InFlight{}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for _, f := range sub.InFlight {
				f.File = ""
				k := fmt.Sprintf("%s/%d", op.ID, sub.Index)
				out[k] = append(out[k], f)
			}
		}
	}
	if err := r.(snapshot.WholeChecker).CheckWhole(context.Background()); err != nil {
		t.Errorf("%s: verify's whole check: %v", dir, err)
	}
	return out
}

// convert --to flink of an unaligned checkpoint carries its data in
// flight: every channel of every subtask holds in the savepoint the bytes
// it held in the checkpoint (records, or none), read from the files the
// copy wrote or from its `_metadata`, where Flink had kept them; the copy
// stands alone (the checkpoint is gone when it is read), inspect and
// verify find the same channels in it, and convert --verify compares
// them. Flink 2.3's merged handles become plain ones for Flink 2.0, whose
// `_metadata` has none. A copy in shards carries them as one process does.
// The checkpoints are the witness jobs' (Flink 2.3.0, streams inside
// `_metadata`), those streams moved into files, and Flink's own in files
// (testdata/flink-inflight: Flink 2.3.0 and 1.20.5 under an inline
// threshold of 0, one file for every subtask's channels).
func TestConvertCarriesInFlight(t *testing.T) {
	cases := []struct {
		name, job string
		files     bool // moved into files (toSharedFiles)
		flink     string
		shards    int
		flinks    string // Flink's own in files, of this version
	}{
		{"cep", "cep", false, "", 0, ""},
		{"zoo", "zoo", false, "", 0, ""},
		{"sqlevents, empty channels", "sqlevents", false, "", 0, ""},
		{"sqlbatch", "sqlbatch", false, "", 0, ""},
		{"sqlbatch in files, in 2 shards", "sqlbatch", true, "", 2, ""},
		{"cep in files", "cep", true, "", 0, ""},
		{"zoo in files", "zoo", true, "", 0, ""},
		{"cep for Flink 2.0", "cep", false, "2.0", 0, ""},
		{"cep in files for Flink 2.0", "cep", true, "2.0", 0, ""},
		{"cep in 3 shards", "cep", false, "", 3, ""},
		{"zoo in files, in 2 shards", "zoo", true, "", 2, ""},
		{"cep in Flink 2.3's files", "cep", true, "", 0, "2.3.0"},
		{"cep in Flink 2.3's files for Flink 2.0", "cep", true, "2.0", 0, "2.3.0"},
		{"cep in Flink 2.3's files, in 2 shards", "cep", true, "", 2, "2.3.0"},
		{"cep in Flink 1.20's files", "cep", true, "", 0, "1.20.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var md string
			var pm map[string]string
			switch {
			case c.flinks != "":
				md, pm = unalignedCheckpoint(t, "flink-inflight", c.flinks, c.job)
			case c.files:
				md, pm = unalignedWitness(t, c.job)
				toSharedFiles(t, md)
			default:
				md, pm = unalignedWitness(t, c.job)
			}
			want, wantRows := channelPayloads(t, md), inFlightOf(t, filepath.Dir(md), pm)
			if len(want) == 0 {
				t.Fatal("the checkpoint has no channels")
			}
			dst := filepath.Join(t.TempDir(), "savepoint")
			req := migrate.Request{Source: filepath.Dir(md), Destination: dst, Format: "flink", PathMap: pm, ReaderVersion: c.flink, Verify: c.shards == 0}
			if plan := copyOf(t, req, c.shards); plan.InFlight == nil || plan.InFlight.Channels != len(want) {
				t.Fatalf("the plan carries data in flight: %+v (of %d channels)", plan.InFlight, len(want))
			}
			for _, d := range pm {
				if err := os.RemoveAll(d); err != nil {
					t.Fatal(err)
				}
			}
			got := channelPayloads(t, filepath.Join(dst, "_metadata"))
			for k, w := range want {
				if g, ok := got[k]; !ok || string(g) != string(w) {
					t.Errorf("channel %s: %d bytes in the copy (present: %v), %d in the checkpoint", k, len(g), ok, len(w))
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d channels in the copy, %d in the checkpoint", len(got), len(want))
			}
			m, err := ReadMetadata(context.Background(), storage.Local(), filepath.Join(dst, "_metadata"))
			if err != nil {
				t.Fatal(err)
			}
			files := 0
			for _, op := range m.Operators {
				for _, st := range op.Subtasks {
					for _, h := range append(slices.Clip(st.InputChannels), st.ResultSubpartitions...) {
						switch d := h.Delegate; {
						case h.Merged() && m.Version < 6:
							t.Errorf("a merged channel handle in _metadata version %d", m.Version)
						case d.Type == metadata.HandleByteStream && c.files, d.Type != metadata.HandleByteStream && !c.files:
							t.Errorf("operator %s subtask %d: a channel handle on a %s stream, the checkpoint's were %s", op.ID, st.Index, d.Type, map[bool]string{true: "files", false: "inline"}[c.files])
						case d.Type == metadata.HandleRelativeFile && writtenName.MatchString(d.Path) && strings.HasSuffix(d.Path, "-channels"):
							files++
						case d.Type != metadata.HandleByteStream:
							t.Errorf("operator %s subtask %d: a channel handle on %s %q", op.ID, st.Index, d.Type, d.Path)
						}
					}
				}
			}
			if c.files && files == 0 {
				t.Error("no channel handle on a file of the copy")
			}
			gotRows := inFlightOf(t, dst, nil)
			for k, w := range wantRows {
				if g := gotRows[k]; !slices.Equal(g, w) {
					t.Errorf("subtask %s: in flight %+v in the copy, %+v in the checkpoint", k, g, w)
				}
			}
			if len(gotRows) != len(wantRows) {
				t.Errorf("in flight in %d subtasks of the copy, %d of the checkpoint", len(gotRows), len(wantRows))
			}
		})
	}
}

// A savepoint for the other Flink major cannot carry the records in
// flight of a checkpoint, serialized as its own major's serializers
// write them: refused before anything is written.
func TestConvertForAnotherMajorRefusesInFlight(t *testing.T) {
	md, pm := unalignedWitness(t, "cep")
	dst := filepath.Join(t.TempDir(), "savepoint")
	_, err := migrate.Run(context.Background(), testReg, migrate.Request{Source: filepath.Dir(md), Destination: dst, Format: "flink", PathMap: pm, ReaderVersion: "1.20"})
	if !errors.Is(err, snapshot.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "an unaligned checkpoint with data in flight") ||
		!strings.Contains(err.Error(), "a savepoint for Flink 1.20 cannot carry") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused copy left %s: %v", dst, err)
	}
}
