package flink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// TestParseEveryFixture decodes every _metadata of the fixtures. ParseMetadata
// fails on any byte left over, so success means all bytes were accounted for.
func TestParseEveryFixture(t *testing.T) {
	root, files := metadataFiles(t)
	versions := map[int]int{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ReadMetadata(context.Background(), storage.Local(), f)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		versions[m.Version]++
		if m.Size != int64(len(data)) {
			t.Errorf("%s: decoded %d of %d bytes", rel, m.Size, len(data))
		}
		if want := int(binary.BigEndian.Uint32(data[4:8])); m.Version != want {
			t.Errorf("%s: version %d, header says %d", rel, m.Version, want)
		}
		if len(m.Operators) == 0 {
			t.Errorf("%s: no operators", rel)
		}
		for _, op := range m.Operators {
			if op.Parallelism <= 0 || op.MaxParallelism < op.Parallelism || op.MaxParallelism > 32768 {
				t.Errorf("%s: operator %s: parallelism %d, max %d", rel, op.ID, op.Parallelism, op.MaxParallelism)
			}
			for _, st := range op.Subtasks {
				if st.Index < 0 || st.Index >= op.Parallelism {
					t.Errorf("%s: operator %s: subtask index %d out of [0,%d)", rel, op.ID, st.Index, op.Parallelism)
				}
			}
		}
		dir := filepath.Base(filepath.Dir(f))
		switch {
		case m.Version < 4:
			if m.Properties != nil {
				t.Errorf("%s: version %d has properties", rel, m.Version)
			}
		case m.Properties == nil:
			t.Errorf("%s: version %d without properties", rel, m.Version)
		case strings.HasSuffix(dir, "-checkpoint"):
			if m.Properties.Savepoint || m.Properties.Format != "" {
				t.Errorf("%s: want a checkpoint, got %s", rel, m.Properties)
			}
		case strings.HasSuffix(dir, "-savepoint-native"):
			if !m.Properties.Savepoint || m.Properties.Format != "NATIVE" {
				t.Errorf("%s: want a native savepoint, got %s", rel, m.Properties)
			}
		case strings.HasSuffix(dir, "-savepoint"), strings.HasPrefix(rel, "operatorstate"):
			if !m.Properties.Savepoint || m.Properties.Format != "CANONICAL" {
				t.Errorf("%s: want a canonical savepoint, got %s", rel, m.Properties)
			}
		}
	}
	t.Logf("decoded %d _metadata files; versions %v", len(files), versions)
	for _, v := range []int{2, 3, 4} {
		if versions[v] == 0 {
			t.Errorf("no fixture of version %d decoded", v)
		}
	}
}

// TestMetadataFigures checks values read by hand with xxd.
func TestMetadataFigures(t *testing.T) {
	root := fixtureRoot(t)
	// xxd type-serializer-snapshot-migration-itcase-flink1.3-savepoint/_metadata:
	// 0x08: checkpoint id 0x0a; 0x10: 0 master states; 0x14: 3 operators;
	// 0x18: operator id 20ba6b65f97481d55700 70de90e4e791; 0x28: parallelism 1,
	// 0x2c: max parallelism 1; 0x50: managed keyed type 3, range [0,1), offset
	// 0x937, then an inline byte stream named 0481cbb8-... of 0x985 bytes.
	m, err := ReadMetadata(context.Background(), storage.Local(), filepath.Join(root, "type-serializer-snapshot-migration-itcase-flink1.3-savepoint", "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 2 || m.CheckpointID != 10 || len(m.MasterStates) != 0 || len(m.Operators) != 3 {
		t.Fatalf("got version %d id %d masters %d ops %d", m.Version, m.CheckpointID, len(m.MasterStates), len(m.Operators))
	}
	op := m.Operators[0]
	if op.ID.String() != "20ba6b65f97481d5570070de90e4e791" || op.Parallelism != 1 || op.MaxParallelism != 1 || len(op.Subtasks) != 1 {
		t.Fatalf("operator 0: %+v", op)
	}
	kh := op.Subtasks[0].ManagedKeyedState
	if kh == nil || kh.Type != metadata.HandleKeyGroups || kh.KeyGroups.Range != (metadata.KeyGroupRange{Start: 0, Count: 1}) || kh.KeyGroups.Offsets[0] != 0x937 {
		t.Fatalf("keyed handle: %+v", kh)
	}
	d := kh.KeyGroups.Delegate
	if d.Type != metadata.HandleByteStream || d.Name != "0481cbb8-bce8-4a8c-9896-2d7f4acd6289" || len(d.Data) != 0x985 || d.DataOffset != 0x8c {
		t.Fatalf("delegate: type %v name %q len %d at %d", d.Type, d.Name, len(d.Data), d.DataOffset)
	}
}

func TestBadMagicAndVersion(t *testing.T) {
	head := func(magic uint32, version int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, magic)
		b = binary.BigEndian.AppendUint32(b, uint32(version))
		return binary.BigEndian.AppendUint64(b, 1)
	}
	_, err := metadata.ParseMetadata(head(0xCAFEBABE, 3), "x/_metadata")
	if !errors.Is(err, wire.ErrCorrupt) || !strings.Contains(err.Error(), "magic") || !strings.Contains(err.Error(), `"x/_metadata"`) {
		t.Errorf("bad magic: %v", err)
	}
	// A version a Flink before or after these could write is unsupported;
	// one no Flink could (not positive, or far past the last) is damage.
	for _, v := range []int32{1, 8, 64} {
		_, err := metadata.ParseMetadata(head(metadata.MetadataMagic, v), "m")
		if !errors.Is(err, wire.ErrUnsupportedVersion) || errors.Is(err, wire.ErrCorrupt) ||
			!strings.Contains(err.Error(), "unsupported _metadata version "+strconv.Itoa(int(v))) {
			t.Errorf("version %d: %v", v, err)
		}
	}
	for _, v := range []int32{0, -3, 65, 0x04000000} {
		_, err := metadata.ParseMetadata(head(metadata.MetadataMagic, v), "m")
		var ce *wire.CorruptError
		if !errors.As(err, &ce) || ce.Offset != 4 || !strings.Contains(err.Error(), "version "+strconv.Itoa(int(v))) {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

// TestTruncatedFixtures cuts fixtures at every offset: each prefix must fail
// with ErrCorrupt naming the file and an offset within the prefix.
func TestTruncatedFixtures(t *testing.T) {
	root := fixtureRoot(t)
	for _, rel := range []string{
		"type-serializer-snapshot-migration-itcase-flink1.3-savepoint/_metadata",            // v2, inline keyed state
		"new-stateful-udf-migration-itcase-flink1.17-rocksdb-checkpoint/_metadata",          // v4, incremental handles
		"new-stateful-broadcast-udf-migration-itcase-flink1.16-hashmap-savepoint/_metadata", // v4, canonical savepoint
		"type-serializer-snapshot-migration-itcase-flink1.12-rocksdb-savepoint/_metadata",   // v3
		"unified-sink-migration-test/savepoint-7bd90b-3a2cda6957cb/_metadata",               // v3, channel state
		"new-stateful-udf-migration-itcase-flink1.15-hashmap-checkpoint/_metadata",          // v3 checkpoint
	} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			_, err := metadata.ParseMetadata(data[:n], rel)
			var ce *wire.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("%s cut at %d: want a CorruptError, got %v", rel, n, err)
			}
			if ce.File != rel || ce.Offset < 0 || ce.Offset > int64(n) || !strings.Contains(err.Error(), "offset") {
				t.Fatalf("%s cut at %d: error %v", rel, n, err)
			}
		}
		if _, err := metadata.ParseMetadata(append(append([]byte{}, data...), 0), rel); !errors.Is(err, wire.ErrCorrupt) {
			t.Errorf("%s with a trailing byte: %v", rel, err)
		}
	}
}

func FuzzMetadata(f *testing.F) {
	_, files := metadataFiles(f)
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := metadata.ParseMetadata(data, "fuzz")
		if err != nil {
			if !errors.Is(err, wire.ErrCorrupt) && !errors.Is(err, wire.ErrUnsupportedVersion) {
				t.Fatalf("error matches no sentinel: %v", err)
			}
			return
		}
		if m.Size != int64(len(data)) {
			t.Fatalf("accepted with %d of %d bytes", m.Size, len(data))
		}
	})
}

// TestNullCheckpointProperties: the State Processor API writes a Java null
// where CheckpointProperties go (ac ed 00 05 70); Flink accepts that, and
// so must the reader. The file is a real 1.20.5 savepoint's _metadata with
// its properties replaced by that null.
func TestNullCheckpointProperties(t *testing.T) {
	src := filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot")
	dirs, _ := filepath.Glob(filepath.Join(src, "savepoint-*"))
	if len(dirs) != 1 {
		t.Fatalf("savepoint under %s: %v", src, dirs)
	}
	data, err := os.ReadFile(filepath.Join(dirs[0], "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(data, []byte{0xac, 0xed, 0x00, 0x05})
	if i < 0 {
		t.Fatal("no CheckpointProperties in the fixture")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(dirs[0])); err != nil {
		t.Fatal(err)
	}
	null := append(append([]byte(nil), data[:i]...), 0xac, 0xed, 0x00, 0x05, 0x70)
	if err := os.WriteFile(filepath.Join(dir, "_metadata"), null, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := metadata.ParseMetadata(null, "_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if !m.NullProperties || m.Properties != nil {
		t.Errorf("properties %+v, null %v", m.Properties, m.NullProperties)
	}
	r := openFixture(t, dir)
	if k := r.Snapshot().Kind; k != snapshot.Savepoint {
		t.Errorf("kind %s, want savepoint", k)
	}
	if _, err := metadata.ParseMetadata(append(null[:len(null)-1:len(null)-1], 0x71), "_metadata"); err == nil {
		t.Error("a dangling back reference where the properties go was accepted")
	}
}
