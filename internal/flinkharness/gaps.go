package flinkharness

import (
	"os"
	"path/filepath"
	"strings"
)

// KnownGaps reads the witness jobs' known gaps
// (internal/flinkwitness/known_gaps.txt): one gap a line, "VERSION/ENTRY
// WHAT ...", # comments. The corpus of real Flink snapshots holds the same
// jobs, and has the same gaps.
func KnownGaps() (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "internal", "flinkwitness", "known_gaps.txt"))
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for l := range strings.Lines(string(data)) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			known[l] = true
		}
	}
	return known, nil
}
