package flink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
)

// flinkOp is an operator of a _metadata metadataV3 writes: its id is 16
// bytes of idByte, and each subtask index records no state.
type flinkOp struct {
	idByte         byte
	p, maxP        int32
	subtaskIndexes []int32
}

// metadataV3 is a _metadata of version 3 holding ops. The first
// operator's parallelism is at offset 40, its max parallelism at 44.
func metadataV3(ops ...flinkOp) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, metadata.MetadataMagic)
	b = binary.BigEndian.AppendUint32(b, 3)
	b = binary.BigEndian.AppendUint64(b, 7) // checkpoint id
	b = binary.BigEndian.AppendUint32(b, 0) // master states
	b = binary.BigEndian.AppendUint32(b, uint32(len(ops)))
	for _, op := range ops {
		b = append(b, bytes.Repeat([]byte{op.idByte}, 16)...)
		b = binary.BigEndian.AppendUint32(b, uint32(op.p))
		b = binary.BigEndian.AppendUint32(b, uint32(op.maxP))
		b = append(b, byte(metadata.HandleNull)) // coordinator state
		b = binary.BigEndian.AppendUint32(b, uint32(len(op.subtaskIndexes)))
		for _, i := range op.subtaskIndexes {
			b = binary.BigEndian.AppendUint32(b, uint32(i))
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)                               // no managed, no raw operator state
			b = append(b, byte(metadata.HandleNull), byte(metadata.HandleNull)) // no managed, no raw keyed state
			b = binary.BigEndian.AppendUint64(b, 0)                             // no input channels, no result subpartitions
		}
	}
	return b
}

// openDir writes files into a fresh directory and opens it through the
// registry, reading everything.
func openDir(t *testing.T, files map[string][]byte) (string, error) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, readEverything(dir)
}

// A parallelism or max parallelism no key-group arithmetic can work with
// is damage at the offset that records it, found before anything divides
// by it (a parallelism of 0 used to panic with a division by zero).
func TestMetadataParallelismOutOfRange(t *testing.T) {
	if _, err := openDir(t, map[string][]byte{"_metadata": metadataV3(flinkOp{0xab, 2, 128, []int32{0}})}); err != nil {
		t.Fatalf("a valid _metadata: %v", err)
	}
	for _, c := range []struct {
		p, maxP int32
		offset  string
	}{
		{0, 128, "offset 40"}, {-3, 128, "offset 40"}, {1, 0, "offset 44"}, {0, 0, "offset 44"},
		{1, -1, "offset 44"}, {1, 32769, "offset 44"}, {129, 128, "offset 40"},
	} {
		dir, err := openDir(t, map[string][]byte{"_metadata": metadataV3(flinkOp{0xab, c.p, c.maxP, []int32{0}})})
		var ce *snapshot.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(dir, "_metadata")) || !strings.Contains(err.Error(), c.offset) {
			t.Errorf("parallelism %d, max parallelism %d: want a corruption error naming _metadata at %s, got %v", c.p, c.maxP, c.offset, err)
		}
	}
}

// What no reader can make sense of is refused as damage of _metadata: by
// the decoder, at the offset, where it knows enough (subtask indexes), else
// by snapshot.Validate, as for every format.
func TestMetadataRefusedBySnapshotValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []flinkOp
		want string
	}{
		{"subtask index past parallelism", []flinkOp{{0xab, 2, 128, []int32{0, 2}}}, "at offset 75: operator abababababababababababababababab: subtask index 2: not one of 0..1"},
		{"subtask twice", []flinkOp{{0xab, 2, 128, []int32{1, 1}}}, "at offset 75: operator abababababababababababababababab: subtask index 1: not one of 0..1, or listed twice"},
		{"duplicate operator id", []flinkOp{{0xab, 1, 128, nil}, {0xab, 2, 128, nil}}, "is also operator 0's"},
	} {
		dir, err := openDir(t, map[string][]byte{"_metadata": metadataV3(c.ops...)})
		var ce *snapshot.CorruptError
		if !errors.As(err, &ce) || ce.File != filepath.Join(dir, "_metadata") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a CorruptError of _metadata saying %q", c.name, err, c.want)
		}
	}
}

// An operator-state element offset past the end of the state file is
// damage named by file and offset (it used to panic slicing the data).
func TestOperatorStateOffsetPastData(t *testing.T) {
	src := filepath.Join(fixtureRoot(t), "new-stateful-broadcast-udf-migration-itcase-flink1.17-hashmap-checkpoint")
	files := map[string][]byte{}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(src, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// The second of four element offsets (0xc6, 0xd7, 0xed, 0x107) of a
	// 292-byte operator-state file (see TestOperatorStateFigures), moved
	// past its end: the element before it would then end before it starts.
	second := binary.BigEndian.AppendUint64(nil, 0xd7)
	meta := bytes.Clone(files["_metadata"])
	i := bytes.Index(meta, second)
	if i < 0 {
		t.Fatal("element offset 0xd7 not found in _metadata")
	}
	binary.BigEndian.PutUint64(meta[i:], 5000)
	files["_metadata"] = meta
	_, err = openDir(t, files)
	var ce *snapshot.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "element offset 5000") || ce.Offset != 5000 {
		t.Fatalf("want a corruption error at offset 5000 of the state file, got %v", err)
	}
}
