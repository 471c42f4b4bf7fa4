package filesystem

import (
	"context"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
	"github.com/stateutil/stateutil/storage"
)

// verify compares what _metadata says besides the layouts reads follow:
// the format it names, and each subtask's file list.
func TestVerifyComparesFormatAndFiles(t *testing.T) {
	first := func(m *metadata) *snapshot.Subtask { return m.Snapshot.Operators[0].Subtasks[0] }
	for _, tc := range []struct {
		name  string
		edit  func(m *metadata)
		check string
		want  string
	}{
		{"untouched", func(*metadata) {}, "", ""},
		{"other format", func(m *metadata) { m.Snapshot.Format = "rocksdb" }, verify.CheckFormat,
			`the metadata names format "rocksdb", but the snapshot was read as "filesystem"`},
		{"file missing from the list", func(m *metadata) { first(m).Files = nil }, verify.CheckFiles, "which the subtask's file list lacks"},
		{"file not read", func(m *metadata) {
			first(m).Files = append(first(m).Files, snapshot.FileRef{Path: "op9-0.stray.keyed", Size: 3})
		}, verify.CheckFiles, `file "op9-0.stray.keyed" is listed, but no state is read from it`},
		{"other size", func(m *metadata) { first(m).Files[0].Size++ }, verify.CheckFiles, "is listed as"},
		{"listed twice", func(m *metadata) { first(m).Files = append(first(m).Files, first(m).Files[0]) }, verify.CheckFiles, "is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
			rewriteMeta(t, dir, tc.edit)
			r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Snapshot().Format != Name {
				t.Fatalf("read as format %q", r.Snapshot().Format)
			}
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
