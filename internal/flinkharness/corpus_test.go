package flinkharness

import (
	"os"
	"path/filepath"
	"testing"
)

// checkCorpus: every entry's snapshot has a _metadata, and the job's own dump
// equals what Flink restored (restore.jsonl, at parallelism 3) and what the
// State Processor API read (spa.jsonl), where the generator kept them.
func checkCorpus(t *testing.T, root string, needWitness bool) {
	entries, err := ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("no corpus entries under %s", root)
	}
	for _, e := range entries {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(e.SnapshotDir(), "_metadata")); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			dump, err := ReadDump(e.File("dump.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if e.Manifest.DumpLines != nil && *e.Manifest.DumpLines != len(dump) {
				t.Fatalf("manifest says %d dump lines, dump.jsonl has %d", *e.Manifest.DumpLines, len(dump))
			}
			witnesses := 0
			for _, w := range []string{"restore.jsonl", "spa.jsonl"} {
				other, err := ReadDump(e.File(w))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				witnesses++
				if d := EqualDumps(dump, other); d != "" {
					t.Errorf("%s differs from the job's dump:\n%s", w, d)
				}
			}
			if needWitness && witnesses == 0 {
				t.Errorf("no restore.jsonl or spa.jsonl to witness the dump")
			}
		})
	}
}

// TestCheckedInCorpus checks testdata/flink (no Java needed).
func TestCheckedInCorpus(t *testing.T) {
	checkCorpus(t, filepath.Join(RepoRoot(), "testdata", "flink"), true)
}

// TestGeneratedCorpus checks a corpus made by scripts/flink-corpus.sh:
// $STATEUTIL_FLINK_CORPUS, else <repo>/.cache/flink-corpus when it exists.
func TestGeneratedCorpus(t *testing.T) {
	root := os.Getenv("STATEUTIL_FLINK_CORPUS")
	if root == "" {
		cache := os.Getenv("STATEUTIL_CACHE_DIR")
		if cache == "" {
			cache = filepath.Join(RepoRoot(), ".cache")
		}
		root = filepath.Join(cache, "flink-corpus")
	}
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no generated corpus at %s (scripts/flink-corpus.sh makes one)", root)
	}
	checkCorpus(t, root, false)
}
