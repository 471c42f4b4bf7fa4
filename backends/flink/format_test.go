package flink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
	"github.com/stateutil/stateutil/storage"
)

// fixtureDirs lists every fixture directory holding a `_metadata`.
func fixtureDirs(t testing.TB) (string, []string) {
	t.Helper()
	root, files := metadataFiles(t)
	var dirs []string
	for _, f := range files {
		dirs = append(dirs, filepath.Dir(f))
	}
	return root, dirs
}

func openFixture(t testing.TB, dir string) snapshot.Reader {
	t.Helper()
	r, err := testReg.Open(context.Background(), dir, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close %s: %v", dir, err)
		}
	})
	return r
}

// TestInspectEveryFixture runs what `inspect` runs (summary with subtasks,
// key-group distribution, operator states with values) on every fixture.
func TestInspectEveryFixture(t *testing.T) {
	root, dirs := fixtureDirs(t)
	ctx := context.Background()
	var readable, degraded int
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			r := openFixture(t, dir)
			s := r.Snapshot()
			if s.Format != "flink" || len(s.Operators) == 0 {
				t.Fatalf("format %q, %d operators", s.Format, len(s.Operators))
			}
			for _, op := range s.Operators {
				if op.Parallelism <= 0 || op.MaxParallelism < op.Parallelism {
					t.Errorf("operator %s: parallelism %d, max %d", op.ID, op.Parallelism, op.MaxParallelism)
				}
				for _, sub := range op.Subtasks {
					if len(op.KeyedStates) > 0 && sub.KeyGroups.Len() == 0 {
						t.Errorf("operator %s subtask %d: empty key-group range", op.ID, sub.Index)
					}
					want := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, sub.Index)
					if sub.KeyGroups != want {
						t.Errorf("operator %s subtask %d: key groups %v, Flink's range is %v", op.ID, sub.Index, sub.KeyGroups, want)
					}
				}
			}
			if _, err := report.Summarize(ctx, dir, r, true); err != nil {
				t.Fatalf("summary: %v", err)
			}
			if _, err := report.KeyGroupDistribution(ctx, dir, r, ""); err != nil {
				t.Fatalf("key groups: %v", err)
			}
			if _, err := report.OperatorStateUsages(ctx, dir, r, testReg.Codecs, "", true); err != nil {
				t.Fatalf("operator states: %v", err)
			}
			if len(snapshot.UnreadableParts(s)) > 0 {
				degraded++
			} else {
				readable++
			}
		})
	}
	t.Logf("%d fixtures fully readable, %d with keyed state that cannot be enumerated", readable, degraded)
}

func TestProbe(t *testing.T) {
	root := fixtureRoot(t)
	dir := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint")
	for _, loc := range []string{dir, filepath.Join(dir, "_metadata"), "file://" + dir} {
		st, p, err := testReg.Storage.Resolve(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := Format.Probe(context.Background(), st, p); !ok || err != nil {
			t.Errorf("probe %s: %v %v", loc, ok, err)
		}
	}
	for _, loc := range []string{root, filepath.Join(root, "MANIFEST.tsv"), filepath.Join(root, "nope")} {
		if ok, _ := Format.Probe(context.Background(), storage.Local(), loc); ok {
			t.Errorf("probe %s accepted", loc)
		}
	}
}

// TestMissingStateFile checks that a state file that is gone is reported
// by name and maps to "not found".
func TestMissingStateFile(t *testing.T) {
	root := fixtureRoot(t)
	src := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint")
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(src, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_metadata"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = testReg.Open(context.Background(), dir, snapshot.OpenOptions{})
	if !errors.Is(err, snapshot.ErrNotFound) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("want a not-found error naming a file in %s, got %v", dir, err)
	}
}

// TestUnmappedAbsolutePath checks that an absolute handle with no mapping
// names the stored path and maps to "not found"; with a mapping it reads.
func TestUnmappedAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kg"), []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &metadata.StreamHandle{Type: metadata.HandleFile, Path: "file:/gone/chk-1/kg", Size: 3}
	res := statefile.NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil)
	if _, _, _, err := res.Bytes(context.Background(), h); !errors.Is(err, snapshot.ErrNotFound) || !strings.Contains(err.Error(), "file:/gone/chk-1/kg") {
		t.Errorf("unmapped: %v", err)
	}
	res.Mappings = []statefile.PathMapping{{Old: "file:/gone/chk-1", New: dir}}
	if b, _, _, err := res.Bytes(context.Background(), h); err != nil || string(b) != "abc" {
		t.Errorf("mapped: %q %v", b, err)
	}
}
