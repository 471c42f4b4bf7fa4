package cmd

import (
	"path/filepath"
	"testing"
)

// flinkSavepoint is a canonical savepoint Flink 1.20.5 wrote (testdata/flink).
var flinkSavepoint = filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")

func TestGoldenFlinkWriter(t *testing.T) {
	cases := map[string][]string{
		"flink-rescale-dry-run-maxp":  {"rescale", flinkSavepoint, "--max-parallelism", "256", "--operator", "keyed=3", "--dry-run"},
		"flink-rescale-bad-version":   {"rescale", flinkSavepoint, "--max-parallelism", "256", "--flink-version", "3", "--output", "x"},
		"flink-convert-old-version":   {"convert", flinkSavepoint, "--to", "flink", "--flink-version", "1.12", "--output", "x"},
		"flink-convert-ttl-unknown":   {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "2100-01-01T00:00:00Z", "--output", "x"},
		"flink-convert-ttl-bad-time":  {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "tomorrow", "--output", "x"},
		"flink-convert-ttl-bad-spec":  {"convert", flinkSavepoint, "--to", "flink", "--drop-expired-ttl-at", "0", "--ttl", "last", "--output", "x"},
		"flink-convert-ttl-alone":     {"convert", flinkSavepoint, "--to", "flink", "--ttl", "last=24h", "--output", "x"},
		"flink-set-uid-hash-bad-hash": {"operator", "set-uid-hash", flinkSavepoint, "--operator", "keyed", "--to", "not-a-hash", "--output", "x"},
		"flink-rename-unknown":        {"operator", "rename", flinkSavepoint, "--operator", "nope", "--to", "keyed-v2", "--output", "x"},
		"help-rescale":                {"rescale", "--help"},
		"help-convert":                {"convert", "--help"},
		"help-operator-rename":        {"operator", "rename", "--help"},
		"help-operator-set-uid-hash":  {"operator", "set-uid-hash", "--help"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}
