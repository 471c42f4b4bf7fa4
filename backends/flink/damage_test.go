package flink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// metadataV3 is a _metadata of version 3 with one operator that records
// no subtask state, at the given parallelism and max parallelism. The
// parallelism is at offset 40, the max parallelism at 44.
func metadataV3(parallelism, maxParallelism int32) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, MetadataMagic)
	b = binary.BigEndian.AppendUint32(b, 3)
	b = binary.BigEndian.AppendUint64(b, 7)          // checkpoint id
	b = binary.BigEndian.AppendUint32(b, 0)          // master states
	b = binary.BigEndian.AppendUint32(b, 1)          // operators
	b = append(b, bytes.Repeat([]byte{0xab}, 16)...) // operator id
	b = binary.BigEndian.AppendUint32(b, uint32(parallelism))
	b = binary.BigEndian.AppendUint32(b, uint32(maxParallelism))
	b = append(b, byte(HandleNull))                   // coordinator state
	b = binary.BigEndian.AppendUint32(b, 1)           // subtask count
	b = binary.BigEndian.AppendUint32(b, 0)           // subtask index 0
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)             // no managed, no raw operator state
	b = append(b, byte(HandleNull), byte(HandleNull)) // no managed, no raw keyed state
	b = binary.BigEndian.AppendUint32(b, 0)           // input channels
	return binary.BigEndian.AppendUint32(b, 0)        // result subpartitions
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
	if _, err := openDir(t, map[string][]byte{"_metadata": metadataV3(2, 128)}); err != nil {
		t.Fatalf("a valid _metadata: %v", err)
	}
	for _, c := range []struct {
		p, maxP int32
		offset  string
	}{
		{0, 128, "offset 40"}, {-3, 128, "offset 40"}, {1, 0, "offset 44"}, {0, 0, "offset 44"},
		{1, -1, "offset 44"}, {1, 32769, "offset 44"}, {129, 128, "offset 40"},
	} {
		dir, err := openDir(t, map[string][]byte{"_metadata": metadataV3(c.p, c.maxP)})
		var ce *snapshot.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(dir, "_metadata")) || !strings.Contains(err.Error(), c.offset) {
			t.Errorf("parallelism %d, max parallelism %d: want a corruption error naming _metadata at %s, got %v", c.p, c.maxP, c.offset, err)
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
