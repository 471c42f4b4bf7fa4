package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// unalignedCheckpoint is the checked-in unaligned checkpoint of the CEP
// witness job (Flink 2.3.0): records in flight in the result
// subpartitions of "emitted" and the input channels of "cep"; and the
// --path-map from the absolute path its keyed state files were written
// under, which its manifest records.
func unalignedCheckpoint(t *testing.T) (snap, pathMap string) {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == "cep-hashmap-checkpoint-unaligned" && e.Manifest.FlinkVersion == "2.3.0" {
			old, now := e.PathMap()
			return e.SnapshotDir(), old + "=" + now
		}
	}
	t.Fatal("testdata/flink-witness/2.3.0 has no cep-hashmap-checkpoint-unaligned")
	return "", ""
}

// inspect shows the records in flight of an unaligned checkpoint per
// subtask and channel, verify checks them, and every copy refuses them
// (exit 4) rather than drop them: to another format, rescaled, converted
// to a Flink savepoint, edited.
func TestGoldenUnaligned(t *testing.T) {
	s, pm := unalignedCheckpoint(t)
	out := filepath.Join(t.TempDir(), "out")
	cases := map[string][]string{
		"flink-unaligned-inspect":         {"inspect", s, "--path-map", pm},
		"flink-unaligned-inspect-json":    {"inspect", s, "--path-map", pm, "-o", "json"},
		"flink-unaligned-verify":          {"verify", s, "--path-map", pm},
		"flink-unaligned-rescale":         {"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out},
		"flink-unaligned-convert-flink":   {"convert", s, "--path-map", pm, "--to", "flink", "--output", out},
		"flink-unaligned-convert-fs":      {"convert", s, "--path-map", pm, "--to", "filesystem", "--output", out},
		"flink-unaligned-keys-delete":     {"keys", "delete", s, "--path-map", pm, "--operator", "cep", "--key", "c-1", "--output", out},
		"flink-unaligned-rescale-dry-run": {"rescale", s, "--path-map", pm, "--parallelism", "3", "--output", out, "--dry-run"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			runGoldenReplacing(t, name, strings.NewReplacer(out, "OUT").Replace, args...)
		})
	}
}
