package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flinkSnapshot is the snapshot directory of a checked-in corpus entry of
// testdata/flink (made by real Flink with testenv/flink), as its manifest
// names it.
func flinkSnapshot(t *testing.T, version, entry string) string {
	t.Helper()
	dir, m := flinkManifest(t, version, entry)
	return filepath.Join(dir, "snapshot", m.SnapshotSubpath)
}

// flinkManifestOf is what a corpus entry's manifest.json says of where
// its snapshot is and was.
type flinkManifestOf struct {
	SnapshotSubpath string `json:"snapshot_subpath"`
	OriginalDir     string `json:"original_dir"`
}

// flinkManifest reads the manifest of a corpus entry, and returns the
// entry's directory with it.
func flinkManifest(t *testing.T, version, entry string) (string, flinkManifestOf) {
	t.Helper()
	return corpusManifest(t, "flink", version, entry)
}

// corpusManifest reads the manifest of an entry of a corpus under
// testdata (flink, flink-witness, ...), and gives the entry's directory
// with it.
func corpusManifest(t *testing.T, corpus, version, entry string) (string, flinkManifestOf) {
	t.Helper()
	dir := filepath.Join("..", "testdata", corpus, version, entry)
	return dir, entryManifest(t, dir)
}

// flinkWrittenDir is the directory Flink wrote a checkpoint of the corpus
// into, whose absolute paths the checkpoint records: --path-map maps it to
// the entry's snapshot directory.
func flinkWrittenDir(t *testing.T, version, entry string) string {
	t.Helper()
	_, m := flinkManifest(t, version, entry)
	if m.OriginalDir == "" {
		t.Fatalf("testdata/flink/%s/%s/manifest.json: no original_dir", version, entry)
	}
	return m.OriginalDir
}

// entryManifest reads the manifest of the corpus entry in dir.
func entryManifest(t *testing.T, dir string) flinkManifestOf {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m flinkManifestOf
	if err := json.Unmarshal(data, &m); err != nil || m.SnapshotSubpath == "" {
		t.Fatalf("%s/manifest.json: no snapshot_subpath (%v)", dir, err)
	}
	return m
}

// The golden output of get and dump on real Flink snapshots: canonical
// (heap and RocksDB, compressed), native RocksDB, an incremental checkpoint
// moved from where Flink wrote it, and String, Long and Tuple2 keys; the
// operator named by its uid although _metadata records only its id; a
// changelog checkpoint, its logged changes applied, moved too.
func TestGoldenGetDumpFlink(t *testing.T) {
	const v = "1.20.5"
	incremental := flinkSnapshot(t, v, "basic-rocksdb-checkpoint-incremental")
	written := flinkWrittenDir(t, v, "basic-rocksdb-checkpoint-incremental")
	moved := filepath.Join("..", "testdata", "flink", v, "basic-rocksdb-checkpoint-incremental", "snapshot")
	changelog := flinkSnapshot(t, v, "basic-hashmap-checkpoint-changelog")
	changelogMap := flinkWrittenDir(t, v, "basic-hashmap-checkpoint-changelog") + "=" +
		filepath.Join("..", "testdata", "flink", v, "basic-hashmap-checkpoint-changelog", "snapshot")
	cases := map[string][]string{
		"flink-get-canonical-map":      {"get", flinkSnapshot(t, v, "basic-hashmap-canonical"), "--operator", "keyed", "--state", "by-bucket", "--key", "user-1"},
		"flink-get-canonical-list":     {"get", flinkSnapshot(t, v, "basic-hashmap-canonical"), "--operator", "keyed", "--state", "events", "--key", "user-3", "-o", "json"},
		"flink-get-compressed-avg":     {"get", flinkSnapshot(t, v, "basic-rocksdb-canonical-compressed"), "--operator", "keyed", "--state", "avg", "--key", "user-7", "-o", "json"},
		"flink-get-native-ttl":         {"get", flinkSnapshot(t, v, "basic-rocksdb-native"), "--operator", "keyed", "--state", "last", "--key", "user-0", "--now", "2026-01-01T00:00:00Z", "-o", "json"},
		"flink-get-native-missing":     {"get", flinkSnapshot(t, v, "basic-rocksdb-native"), "--operator", "keyed", "--state", "count", "--key", "user-999"},
		"flink-get-incremental":        {"get", incremental, "--path-map", written + "=" + moved, "--operator", "keyed", "--state", "sum", "--key", "user-2"},
		"flink-get-long-key":           {"get", flinkSnapshot(t, v, "longkeys-hashmap-canonical"), "--operator", "keyed", "--state", "by-record", "--key", "-10", "-o", "json"},
		"flink-get-bad-long-key":       {"get", flinkSnapshot(t, v, "longkeys-hashmap-canonical"), "--operator", "keyed", "--state", "by-record", "--key", "abc"},
		"flink-get-void-namespace":     {"get", flinkSnapshot(t, v, "basic-hashmap-canonical"), "--operator", "keyed", "--state", "count", "--key", "user-1", "--namespace", `{"start":0,"end":60000}`},
		"flink-get-tuple-key":          {"get", flinkSnapshot(t, v, "tuplekeys-hashmap-canonical"), "--operator", "keyed", "--state", "records", "--key", `["g0",14]`, "-o", "json"},
		"flink-get-changelog":          {"get", changelog, "--path-map", changelogMap, "--operator", "keyed", "--state", "count", "--key", "user-1"},
		"flink-dump-canonical":         {"dump", flinkSnapshot(t, v, "basic-hashmap-canonical"), "--operator", "keyed", "--state", "count", "--limit", "4"},
		"flink-dump-native-key-groups": {"dump", flinkSnapshot(t, v, "basic-rocksdb-native"), "--operator", "keyed", "--key-group", "1-3", "--now", "2026-01-01T00:00:00Z", "-o", "csv"},
		"flink-dump-tuple-table":       {"dump", flinkSnapshot(t, v, "tuplekeys-hashmap-canonical"), "--state", "count", "--limit", "3", "-o", "table"},
		"flink-dump-changelog":         {"dump", changelog, "--path-map", changelogMap, "--operator", "keyed", "--key-group", "0-9", "--now", "2026-01-01T00:00:00Z"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			runGoldenReplacing(t, name, strings.NewReplacer(args[1], "SNAP", moved, "MOVED").Replace, args...)
		})
	}
}
