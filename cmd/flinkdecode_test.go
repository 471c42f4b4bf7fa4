package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// Values decode by the types the snapshot records, not by codecs that live
// only in the process that read the Flink snapshot: once a real Flink
// savepoint is converted to another format, dump and the operator-state
// values read exactly as they did from Flink's own files.
func TestFlinkValuesDecodeAfterConversion(t *testing.T) {
	for _, entry := range []string{"types-hashmap-canonical", "basic-rocksdb-native", "tuplekeys-hashmap-canonical"} {
		t.Run(entry, func(t *testing.T) {
			src := flinkSnapshot(t, "1.20.5", entry)
			for _, format := range []string{"filesystem", "rocksdb"} {
				dst := filepath.Join(t.TempDir(), format)
				mustRun(t, "convert", src, "--to", format, "--output", dst, "--quiet")
				const now = "--now=2026-01-01T00:00:00Z"
				want, got := mustRun(t, "dump", src, now), mustRun(t, "dump", dst, now)
				if strings.Count(want, "\n") < 50 {
					t.Fatalf("dump of %s gave only %d records", entry, strings.Count(want, "\n"))
				}
				if got != want {
					t.Errorf("%s: dump after converting to %s differs from dump of the Flink savepoint", entry, format)
				}
				wantOps := mustRun(t, "inspect", src, "--operator-state", "--values", "-o", "json")
				gotOps := mustRun(t, "inspect", dst, "--operator-state", "--values", "-o", "json")
				if valuesOf(wantOps) != valuesOf(gotOps) {
					t.Errorf("%s: operator-state values after converting to %s:\n%s\nwant (from Flink's files):\n%s", entry, format, valuesOf(gotOps), valuesOf(wantOps))
				}
			}
		})
	}
}

// valuesOf keeps the "value" lines of an indented JSON document.
func valuesOf(doc string) string {
	var out []string
	for line := range strings.Lines(doc) {
		if strings.Contains(line, `"value":`) || strings.Contains(line, `"values":`) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}
