package filesystem

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// Cases hostile_test.go does not cover: other spellings of references
// that leave the snapshot, and figures in _metadata that disagree with
// each other.
func TestHostileMetadataGaps(t *testing.T) {
	keyed := func(m *metadata) *keyedLayout { return m.Layouts[0][0].Keyed }
	for _, tc := range []struct {
		name string
		edit func(m *metadata)
		want string
	}{
		{"backslash", func(m *metadata) { keyed(m).Data.File = `..\x` }, `"..\\x"`},
		{"dot", func(m *metadata) { keyed(m).Data.File = "." }, `"."`},
		{"trailing slash", func(m *metadata) { keyed(m).Data.File = "a/" }, `"a/"`},
		{"taskowned dotdot", func(m *metadata) { keyed(m).Data.File = "taskowned/../../x" }, `"taskowned/../../x"`},
		{"inline size", func(m *metadata) {
			b := m.Layouts[1][0].Operator
			b.Data.File, b.Data.Inline = "", []byte("x")
		}, "inline bytes"},
		{"file and inline", func(m *metadata) { keyed(m).Data.Inline = []byte("x") }, "both a file"},
		{"negative blob size", func(m *metadata) { keyed(m).Data.Size = -1 }, "negative size"},
		{"element count", func(m *metadata) {
			m.Snapshot.Operators[1].Subtasks[0].OperatorElements["offsets"] = 1 << 40
		}, "counted"},
		{"key-group stats short", func(m *metadata) {
			s := m.Snapshot.Operators[0].Subtasks[0]
			s.KeyGroupStats = s.KeyGroupStats[:1]
		}, "key-group stats"},
		{"subtask index repeated", func(m *metadata) {
			m.Snapshot.Operators[1].Subtasks[1].Index = 0
		}, "subtask 0 is stored at position 1"},
		{"subtask index negative", func(m *metadata) {
			m.Snapshot.Operators[1].Subtasks[0].Index = -3
		}, "subtask -3 is stored at position 0"},
		{"no max parallelism", func(m *metadata) { m.Snapshot.Operators[0].MaxParallelism = 0 }, "max parallelism 0 is outside 1..32768"},
		{"key groups beyond upper bound", func(m *metadata) {
			m.Snapshot.Operators[0].Subtasks[0].KeyGroups.End = 1 << 20
		}, "key groups [0,1048576], but Flink assigns it [0,42]"},
		{"state index table", func(m *metadata) { keyed(m).States = keyed(m).States[:1] }, "state index"},
		{"parallelism zero", func(m *metadata) { m.Snapshot.Operators[1].Parallelism = 0 }, "parallelism 0 must be at least 1"},
		{"subtask missing", func(m *metadata) {
			op := m.Snapshot.Operators[1]
			op.Subtasks, m.Layouts[1] = op.Subtasks[:1], m.Layouts[1][:1]
		}, "parallelism 2 but 1 subtasks"},
		{"duplicate operator", func(m *metadata) { m.Snapshot.Operators[2].ID = m.Snapshot.Operators[0].ID }, "is also operator 0's"},
		{"duplicate state", func(m *metadata) { m.Snapshot.Operators[0].KeyedStates[1].Name = "count" }, `keyed state "count" declared twice`},
		{"unknown kind", func(m *metadata) { m.Snapshot.Operators[0].KeyedStates[0].Kind = "valve" }, `unknown kind "valve"`},
		{"unknown mode", func(m *metadata) { m.Snapshot.Operators[1].OperatorStates[0].Mode = "" }, `unknown mode ""`},
		{"long name", func(m *metadata) { m.Snapshot.Operators[0].Name = strings.Repeat("n", 1<<20) }, "msgpack string of 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
			rewriteMeta(t, dir, func(m *metadata) { tc.edit(m) })
			err := readEverythingAt(dir)
			// The directory's name holds the test's: look past it.
			if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(strings.ReplaceAll(err.Error(), dir, ""), tc.want) {
				t.Fatalf("err = %v, want ErrCorrupt mentioning %s", err, tc.want)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not say where", err)
			}
		})
	}
}

// writeEnvelope writes a _metadata around body with a correct checksum.
func writeEnvelope(t *testing.T, dir string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, chkdir.MetadataFile), metaKind.Encode(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Lengths inside a checksummed _metadata that claim far more than the
// file holds are refused without allocating them.
func TestHostileLengthsInMetadataBody(t *testing.T) {
	var ms runtime.MemStats
	for _, tc := range []struct {
		name string
		body []byte
	}{
		// {"layouts": array32 of 2^32-1 elements}
		{"huge array", append([]byte{0x81, 0xa7, 'l', 'a', 'y', 'o', 'u', 't', 's', 0xdd}, 0xff, 0xff, 0xff, 0xff)},
		// {"snapshot": {"job_id": str32 of 2^32-1 bytes}}
		{"huge string", append([]byte{0x81, 0xa8, 's', 'n', 'a', 'p', 's', 'h', 'o', 't', 0x81, 0xa6, 'j', 'o', 'b', '_', 'i', 'd', 0xdb}, 0xff, 0xff, 0xff, 0xff)},
		// {"layouts": [[{"keyed": {"data": {"inline": bin32 of 2^32-1 bytes}}}]]}
		{"huge bytes", func() []byte {
			b := []byte{0x81, 0xa7, 'l', 'a', 'y', 'o', 'u', 't', 's', 0x91, 0x91, 0x81, 0xa5, 'k', 'e', 'y', 'e', 'd', 0x81, 0xa4, 'd', 'a', 't', 'a', 0x81, 0xa6, 'i', 'n', 'l', 'i', 'n', 'e', 0xc6}
			return binary.BigEndian.AppendUint32(b, 0xffffffff)
		}()},
		{"huge map", append([]byte{0xdf}, 0xff, 0xff, 0xff, 0xff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeEnvelope(t, dir, tc.body)
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			_, err := Open(context.Background(), storage.Local(), dir, snapshot.OpenOptions{})
			runtime.ReadMemStats(&ms)
			if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), chkdir.MetadataFile) {
				t.Fatalf("err = %v, want ErrCorrupt naming _metadata", err)
			}
			if alloc := ms.TotalAlloc - before; alloc > 64<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte _metadata", alloc, len(tc.body))
			}
		})
	}
	// And the envelope's own length field.
	dir := t.TempDir()
	data := metaKind.Encode([]byte{0x80})
	binary.BigEndian.PutUint64(data[12:], 1<<62)
	os.WriteFile(filepath.Join(dir, chkdir.MetadataFile), data, 0o644)
	if _, err := Open(context.Background(), storage.Local(), dir, snapshot.OpenOptions{}); !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "body length") {
		t.Fatalf("huge envelope length: %v", err)
	}
}

// References that leave the snapshot are refused on HDFS too, where no
// symlink check applies.
func TestHostileReferenceOnHDFS(t *testing.T) {
	addr := formattest.HDFSAddr(t)
	ctx := context.Background()
	st, _, err := testReg.Storage.Resolve(ctx, "hdfs://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	root := "/stateutil-test/hostile-" + filepath.Base(t.TempDir())
	t.Cleanup(func() { st.RemoveAll(context.Background(), root) })
	dir := root + "/job/chk-1"
	newFixture(128, 40).write(t, st, dir, snapshot.WriteOptions{InlineThreshold: -1})
	if err := storage.WriteFile(ctx, st, root+"/secret", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	d := chkdir.At(st, dir)
	for _, ref := range []string{"../../secret", "shared/../../../secret", "/stateutil-test/secret", `..\..\secret`} {
		m, err := readMetadata(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		m.Layouts[0][0].Keyed.Data.File = ref
		data, err := encodeMetadata(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CommitMetadata(ctx, data); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, st, dir, snapshot.OpenOptions{})
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), strconv.Quote(ref)) || !strings.Contains(err.Error(), "hdfs://") {
			t.Errorf("reference %q on HDFS: %v, want ErrCorrupt naming it and the hdfs:// _metadata", ref, err)
		}
	}
}
