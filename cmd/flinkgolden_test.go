package cmd

import (
	"path/filepath"
	"testing"
)

// flinkSavepoint is a canonical savepoint Flink 1.20.5 wrote (testdata/flink).
var flinkSavepoint = filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")

// flinkTypes23 and flinkTypes120 are savepoints of the harness's types
// job, with a Kryo state, of Flink 2.3.0 and 1.20.5 (testdata/flink).
var (
	flinkTypes23  = filepath.Join("..", "testdata", "flink", "2.3.0", "types-hashmap-canonical", "snapshot", "savepoint-f9d9da-2fc270d6d6bb")
	flinkTypes120 = filepath.Join("..", "testdata", "flink", "1.20.5", "types-hashmap-canonical", "snapshot", "savepoint-5b5afd-4dc9a1a465e4")
	// Savepoints of the collections job (a POJO with List, Map and Set
	// fields) and of the kryojdk job (Kryo values of JDK classes).
	flinkCollections120 = filepath.Join("..", "testdata", "flink", "1.20.5", "collections-hashmap-canonical", "snapshot", "savepoint-3b0b8b-71bfecd35f9c")
	flinkKryoJDK120     = filepath.Join("..", "testdata", "flink", "1.20.5", "kryojdk-hashmap-canonical", "snapshot", "savepoint-5af467-07089e734626")
	// An unaligned checkpoint of the cep job with records in flight
	// (testdata/flink-upgrade).
	flinkUnaligned120 = filepath.Join("..", "testdata", "flink-upgrade", "1.20.5", "cep-hashmap-checkpoint-unaligned", "snapshot", "05524cb4fa71957fa97b36edda5b4db2", "chk-1")
)

func TestGoldenFlinkWriter(t *testing.T) {
	cases := map[string][]string{
		"flink-rescale-dry-run-maxp":    {"rescale", flinkSavepoint, "--max-parallelism", "256", "--operator", "keyed=3", "--dry-run"},
		"flink-rescale-bad-version":     {"rescale", flinkSavepoint, "--max-parallelism", "256", "--flink-version", "3", "--output", "x"},
		"flink-convert-old-version":     {"convert", flinkSavepoint, "--to", "flink", "--flink-version", "1.12", "--output", "x"},
		"flink-convert-new-version":     {"convert", flinkSavepoint, "--to", "flink", "--flink-version", "2.4", "--output", "x"},
		"flink-convert-kryo-to-1.x":     {"convert", flinkTypes23, "--to", "flink", "--flink-version", "1.19", "--output", "x"},
		"flink-rescale-kryo-to-2.x":     {"rescale", flinkTypes120, "--parallelism", "3", "--flink-version", "2.0", "--output", "x"},
		"flink-convert-ttl-unknown":     {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "2100-01-01T00:00:00Z", "--output", "x"},
		"flink-convert-ttl-bad-time":    {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "tomorrow", "--output", "x"},
		"flink-convert-ttl-bad-spec":    {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "0", "--ttl", "last", "--output", "x"},
		"flink-convert-ttl-alone":       {"convert", flinkSavepoint, "--to", "flink", "--ttl", "last=24h", "--output", "x"},
		"flink-set-uid-hash-bad-hash":   {"operator", "set-uid-hash", flinkSavepoint, "--operator", "keyed", "--to", "not-a-hash", "--output", "x"},
		"flink-rename-unknown":          {"operator", "rename", flinkSavepoint, "--operator", "nope", "--to", "keyed-v2", "--output", "x"},
		"flink-upgrade-check":           {"upgrade", "--check", flinkCollections120, "--flink-version", "2.3"},
		"flink-upgrade-check-json":      {"upgrade", "--check", flinkKryoJDK120, "--flink-version", "2.1", "-o", "json"},
		"flink-upgrade-blocked":         {"upgrade", flinkTypes120, "--flink-version", "2.0", "--output", "x"},
		"flink-upgrade-downgrade":       {"upgrade", flinkTypes23, "--flink-version", "1.20", "--output", "x"},
		"flink-upgrade-no-version":      {"upgrade", flinkTypes120, "--output", "x"},
		"flink-upgrade-check-unaligned": {"upgrade", "--check", flinkUnaligned120, "--flink-version", "2.3", "-o", "json"},
		"flink-upgrade-check-scala":     {"upgrade", "--check", flinkSnapshot(t, "1.20.5", "scala-hashmap-canonical"), "--flink-version", "2.3"},
		"flink-upgrade-unaligned":       {"upgrade", flinkUnaligned120, "--flink-version", "2.3", "--output", "x"},
		"help-upgrade":                  {"upgrade", "--help"},
		"help-rescale":                  {"rescale", "--help"},
		"help-convert":                  {"convert", "--help"},
		"help-operator-rename":          {"operator", "rename", "--help"},
		"help-operator-set-uid-hash":    {"operator", "set-uid-hash", "--help"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}
