package flink

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// unalignedWitness copies the checked-in Flink 2.3.0 unaligned checkpoint
// of a witness job (the CEP job's: records in flight on both sides of the
// keyed exchange) to a folder of its own and returns its _metadata path
// and the path map.
func unalignedWitness(t *testing.T, job string) (string, map[string]string) {
	return unalignedCheckpoint(t, "flink-witness", "2.3.0", job)
}

// unalignedCheckpoint is unalignedWitness of the checked-in corpus
// testdata/CORPUS and a Flink version.
func unalignedCheckpoint(t *testing.T, corpus, version, job string) (string, map[string]string) {
	t.Helper()
	root := filepath.Join(flinkharness.RepoRoot(), "testdata", corpus)
	e := flinkharness.Entry{Dir: filepath.Join(root, version, job+"-hashmap-checkpoint-unaligned")}
	entries, err := flinkharness.ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range entries {
		if x.Dir == e.Dir {
			e = x
		}
	}
	if e.Manifest.SnapshotSubpath == "" {
		t.Fatalf("no witness entry %s", e.Dir)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(e.Dir, "snapshot"))); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.FromSlash(e.Manifest.SnapshotSubpath), "_metadata"), map[string]string{e.Manifest.OriginalDir: dir}
}

func checkWhole(t *testing.T, md string, pm map[string]string) error {
	t.Helper()
	r, err := testReg.Open(context.Background(), filepath.Dir(md), snapshot.OpenOptions{PathMap: pm})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.(snapshot.WholeChecker).CheckWhole(context.Background())
}

// TestInFlightOfUnalignedCheckpoints reads the channel state Flink 2.3
// wrote into the witness jobs' unaligned checkpoints: as many channels as
// the harness counted handles (each a merged handle of one channel, its
// buffer copied into `_metadata`), each with the bytes of its buffer, and
// verify finds nothing wrong with them.
func TestInFlightOfUnalignedCheckpoints(t *testing.T) {
	for job, handles := range map[string]int{"cep": 6, "zoo": 6, "sqlevents": 40} {
		md, pm := unalignedWitness(t, job)
		m, err := ReadMetadata(context.Background(), storage.Local(), md)
		if err != nil {
			t.Fatal(err)
		}
		streams := map[[2]int]int64{} // (operator, subtask) -> bytes of its channel streams
		n := 0
		for i, op := range m.Operators {
			for _, st := range op.Subtasks {
				for _, h := range append(st.InputChannels, st.ResultSubpartitions...) {
					n++
					// One buffer after the version: its length, then its bytes.
					d := h.Delegate.Data
					if l := int64(binary.BigEndian.Uint32(d[4:])); l+8 == int64(len(d)) {
						streams[[2]int{i, st.Index}] += l
					} else {
						t.Errorf("%s: a channel stream of %d bytes holding a buffer of %d", job, len(d), l)
					}
				}
			}
		}
		if n != handles {
			t.Errorf("%s: %d channel handles, the harness counted %d", job, n, handles)
		}
		r, err := testReg.Open(context.Background(), filepath.Dir(md), snapshot.OpenOptions{PathMap: pm})
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]int]int64{}
		for i, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				for _, f := range sub.InFlight {
					if f.Buffers != 1 || f.File != "" || (f.Direction != snapshot.InputChannel && f.Direction != snapshot.ResultSubpartition) {
						t.Errorf("%s: operator %s subtask %d: %+v, want one buffer inside _metadata", job, op.Label(), sub.Index, f)
					}
					got[[2]int{i, sub.Index}] += f.Bytes
				}
			}
		}
		r.Close()
		if len(got) != len(streams) {
			t.Errorf("%s: in flight in %d subtasks, _metadata has channel streams in %d", job, len(got), len(streams))
		}
		for k, want := range streams {
			if got[k] != want {
				t.Errorf("%s: operator %d subtask %d: %d bytes in flight, its buffers hold %d", job, k[0], k[1], got[k], want)
			}
		}
		if err := checkWhole(t, md, pm); err != nil {
			t.Errorf("%s: verify's whole check: %v", job, err)
		}
	}
}

// firstChannel finds the first channel handle of m with buffers in it.
func firstChannel(t *testing.T, m *metadata.Metadata) *metadata.ChannelHandle {
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			for _, h := range append(st.InputChannels, st.ResultSubpartitions...) {
				if len(h.Delegate.Data) > 8 {
					return h
				}
			}
		}
	}
	t.Fatal("no channel handle with data")
	return nil
}

// rewrite re-encodes the _metadata at md after edit changed it.
func rewrite(t *testing.T, md string, edit func(m *metadata.Metadata)) {
	t.Helper()
	m, err := ReadMetadata(context.Background(), storage.Local(), md)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	props, err := metadata.SavepointProperties("Savepoint", "NONE", true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := metadata.EncodeMetadata(m, props)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(md, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInFlightDamage has verify find channel state that does not match
// what `_metadata` records, in `_metadata` and in a file of its own, each
// named with its file and offset; a healthy copy passes.
func TestInFlightDamage(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, dir string, h *metadata.ChannelHandle)
		want string
	}{
		{"version", func(t *testing.T, _ string, h *metadata.ChannelHandle) { h.Delegate.Data[3] = 1 }, "channel state version 1, Flink writes 0"},
		{"buffer past the end", func(t *testing.T, _ string, h *metadata.ChannelHandle) {
			binary.BigEndian.PutUint32(h.Delegate.Data[4:], 1<<20)
		}, "a buffer of 1048576 bytes at offset 4"},
		{"offset past the end", func(t *testing.T, _ string, h *metadata.ChannelHandle) {
			cs := h.Channels()
			cs[0].Offsets = []int64{int64(len(h.Delegate.Data))}
			h.SerializedChannelOffsets = metadata.MergedChannelOffsets(cs)
		}, "an int at offset"},
		{"size", func(t *testing.T, _ string, h *metadata.ChannelHandle) {
			cs := h.Channels()
			cs[0].Size++
			h.Size++
			h.SerializedChannelOffsets = metadata.MergedChannelOffsets(cs)
		}, "its 1 buffers take"},
		{"merged size", func(t *testing.T, _ string, h *metadata.ChannelHandle) { h.Size++ }, "the channels of a merged handle take"},
		{"healthy file", func(t *testing.T, dir string, h *metadata.ChannelHandle) { toFile(t, dir, h, 0) }, ""},
		{"truncated file", func(t *testing.T, dir string, h *metadata.ChannelHandle) { toFile(t, dir, h, 3) }, "_metadata says"},
		{"missing file", func(t *testing.T, dir string, h *metadata.ChannelHandle) {
			toFile(t, dir, h, 0)
			os.Remove(filepath.Join(dir, "channel-state"))
		}, "channel-state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, pm := unalignedWitness(t, "cep")
			rewrite(t, md, func(m *metadata.Metadata) { c.edit(t, filepath.Dir(md), firstChannel(t, m)) })
			err := checkWhole(t, md, pm)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("healthy channel state: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("damage not found (want %q)", c.want)
			case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "in-flight data"):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// toFile moves a channel handle's stream out of `_metadata` into a file
// next to it, as Flink writes channel state above the inline threshold,
// less cut bytes at its end. A stream of its own keeps the version, which
// a file's channel size does not count.
func toFile(t *testing.T, dir string, h *metadata.ChannelHandle, cut int) {
	data := h.Delegate.Data
	if err := os.WriteFile(filepath.Join(dir, "channel-state"), data[:len(data)-cut], 0o644); err != nil {
		t.Fatal(err)
	}
	h.Delegate = &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "channel-state", Size: int64(len(data))}
	cs := h.Channels()
	cs[0].Size -= statefile.ChannelHeader
	h.Size -= statefile.ChannelHeader
	h.SerializedChannelOffsets = metadata.MergedChannelOffsets(cs)
}

// A merged channel handle whose offset table does not hold what its count
// says is damage in `_metadata`, named with its offset when it is opened.
func TestInFlightMergedTableDamage(t *testing.T) {
	md, pm := unalignedWitness(t, "cep")
	rewrite(t, md, func(m *metadata.Metadata) {
		h := firstChannel(t, m)
		h.SerializedChannelOffsets = binary.BigEndian.AppendUint32(metadata.MergedChannelOffsets(h.Channels()), 7)
	})
	_, err := testReg.Open(context.Background(), filepath.Dir(md), snapshot.OpenOptions{PathMap: pm})
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "4 bytes after the merged channel offsets") || !strings.Contains(err.Error(), "_metadata\" at offset") {
		t.Fatalf("open: %v", err)
	}
}
