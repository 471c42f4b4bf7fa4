package flink

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
)

// BenchmarkInspectFixture is `inspect` of a real savepoint end to end:
// detect, open, decode `_metadata` and headers, scan the keyed state for
// the summary.
func BenchmarkInspectFixture(b *testing.B) {
	dir := filepath.Join(fixtureRoot(b), "new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint")
	ctx := context.Background()
	for b.Loop() {
		r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := report.Summarize(ctx, dir, r, true); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkReadAllEntries reads every keyed entry of the largest fixture
// (by bytes on disk) whose keyed state can be enumerated.
func BenchmarkReadAllEntries(b *testing.B) {
	_, dirs := fixtureDirs(b)
	var best string
	var most int64
	for _, d := range dirs {
		var n int64
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		if n <= most {
			continue
		}
		r, err := testReg.Open(context.Background(), d, snapshot.OpenOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(snapshot.UnreadableParts(r.Snapshot())) == 0 {
			best, most = d, n
		}
		r.Close()
	}
	b.Logf("largest readable fixture: %s (%d bytes)", filepath.Base(best), most)
	ctx := context.Background()
	r, err := testReg.Open(ctx, best, snapshot.OpenOptions{TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(most)
	for b.Loop() {
		n := 0
		for _, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				for _, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
		}
		if n == 0 && most > 0 {
			b.Logf("%s: no keyed entries", best)
		}
	}
}
