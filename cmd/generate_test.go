package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoldenGenerate(t *testing.T) {
	cases := map[string][]string{
		"generate-no-output":      {"generate"},
		"generate-unknown-format": {"generate", "--format", "parquet", "--output", "x"},
		"generate-read-only":      {"generate", "--format", "flink", "--output", "x"},
		"generate-bad-maxp":       {"generate", "--output", "x", "--parallelism", "5", "--max-parallelism", "4"},
		"generate-exists":         {"generate", "--output", example},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// generate with the fixture's settings writes what inspect shows for the
// checked-in example, in every writable format.
func TestGenerateMatchesTheExampleInEveryFormat(t *testing.T) {
	var want bytes.Buffer
	if code := Run(context.Background(), []string{"inspect", example, "--subtasks", "-o", "json"}, &want, os.Stderr); code != 0 {
		t.Fatal("inspect of the example failed")
	}
	for _, format := range []string{"memory", "filesystem", "rocksdb"} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "snap")
			var stdout, stderr bytes.Buffer
			if code := Run(context.Background(), []string{"generate", "--format", format, "--output", out}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var got bytes.Buffer
			if code := Run(context.Background(), []string{"inspect", out, "--subtasks", "-o", "json"}, &got, &stderr); code != 0 {
				t.Fatalf("inspect: %s", stderr.String())
			}
			// Only the location, the format, and which files hold the state differ.
			norm := func(s string) string {
				var keep []string
				for _, line := range strings.Split(s, "\n") {
					if strings.Contains(line, `"location"`) || strings.Contains(line, `"format"`) || strings.Contains(line, `"files"`) {
						continue
					}
					keep = append(keep, line)
				}
				return strings.Join(keep, "\n")
			}
			if norm(got.String()) != norm(want.String()) {
				t.Errorf("inspect of the generated %s snapshot differs from the example's:\n%s\nwant\n%s", format, got.String(), want.String())
			}
		})
	}
}
