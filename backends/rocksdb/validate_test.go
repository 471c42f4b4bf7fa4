package rocksdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
	"github.com/stateutil/stateutil/storage"
)

// editedSnapshot writes a snapshot of testOperator at parallelism 2 and
// rewrites its _metadata with edit, as damage or another writer would.
func editedSnapshot(t *testing.T, edit func(m *rocksdbformat.Metadata)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "snap")
	op := rockstest.Operator("a1", 2, 128)
	writeSnapshot(t, dir, op, rockstest.Entries(t, op, 30, 1))
	m, err := rocksdbformat.ReadMetadata(context.Background(), chkdir.At(storage.Local(), dir))
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := rocksdbformat.EncodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, chkdir.MetadataFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenRefusesInvalidMetadata(t *testing.T) {
	op := func(m *rocksdbformat.Metadata) *snapshot.Operator { return m.Snapshot.Operators[0] }
	for _, tc := range []struct {
		name string
		edit func(m *rocksdbformat.Metadata)
		want string
	}{
		{"parallelism zero", func(m *rocksdbformat.Metadata) { op(m).Parallelism = 0 }, "parallelism 0 must be at least 1"},
		{"range not Flink's", func(m *rocksdbformat.Metadata) { op(m).Subtasks[1].KeyGroups.Start-- }, "but Flink assigns it [64,127]"},
		{"duplicate state", func(m *rocksdbformat.Metadata) { op(m).KeyedStates[2].Name = "counts" }, `keyed state "counts" declared twice`},
		{"unknown mode", func(m *rocksdbformat.Metadata) { op(m).OperatorStates[0].Mode = "fanout" }, `unknown mode "fanout"`},
		{"long uid", func(m *rocksdbformat.Metadata) { op(m).UID = strings.Repeat("u", 70000) }, "msgpack string of 70000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedSnapshot(t, tc.edit)
			_, err := testReg.Open(context.Background(), dir, snapshot.OpenOptions{TempDir: t.TempDir()})
			var ce *snapshot.CorruptError
			if !errors.As(err, &ce) || ce.File != filepath.Join(dir, chkdir.MetadataFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a CorruptError of _metadata saying %q", err, tc.want)
			}
		})
	}
}

// verify compares the format _metadata names and each subtask's file list
// with the files its handle rebuilds the instance from.
func TestVerifyComparesFormatAndFiles(t *testing.T) {
	sub := func(m *rocksdbformat.Metadata) *snapshot.Subtask { return m.Snapshot.Operators[0].Subtasks[1] }
	for _, tc := range []struct {
		name  string
		edit  func(m *rocksdbformat.Metadata)
		check string
		want  string
	}{
		{"untouched", func(*rocksdbformat.Metadata) {}, "", ""},
		{"other format", func(m *rocksdbformat.Metadata) { m.Snapshot.Format = "memory" }, verify.CheckFormat, `names format "memory", but the snapshot was read as "rocksdb"`},
		{"SST file not listed", func(m *rocksdbformat.Metadata) {
			for i, f := range sub(m).Files {
				if strings.HasSuffix(f.Path, ".sst") {
					sub(m).Files = append(sub(m).Files[:i], sub(m).Files[i+1:]...)
					return
				}
			}
			t.Fatal("no SST file")
		}, verify.CheckFiles, "which the subtask's file list lacks"},
		{"shared flag", func(m *rocksdbformat.Metadata) { sub(m).Files[0].Shared = !sub(m).Files[0].Shared }, verify.CheckFiles, "is listed as"},
		{"stray file", func(m *rocksdbformat.Metadata) {
			sub(m).Files = append(sub(m).Files, snapshot.FileRef{Path: "a1-1/000099.sst"})
		}, verify.CheckFiles, `file "a1-1/000099.sst" is listed, but no state is read from it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := editedSnapshot(t, tc.edit)
			r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res, err := verify.Check(ctx, dir, r, testReg.Codecs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.check == "" {
				if !res.OK {
					t.Fatalf("findings for an untouched snapshot: %v", res.Findings)
				}
				return
			}
			if len(res.Findings) != 1 || res.Findings[0].Check != tc.check || !strings.Contains(res.Findings[0].Message, tc.want) {
				t.Fatalf("findings %v, want one %s finding saying %q", res.Findings, tc.check, tc.want)
			}
		})
	}
}
