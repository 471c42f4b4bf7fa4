package flinkharness

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEqualUpgradedDumps compares the 1.20.5 and 2.3.0 dumps of the jobs
// whose POJOs have collection fields (the same records: the same state,
// shown as a generic type by 1.x and as lists and maps by 2.x), and finds
// a changed element.
func TestEqualUpgradedDumps(t *testing.T) {
	for _, job := range []string{"collections", "orders"} {
		read := func(v string) []Line {
			ls, err := ReadDump(filepath.Join(RepoRoot(), "testdata", "flink", v, job+"-hashmap-canonical", "dump.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			return ls
		}
		old, restored := read("1.20.5"), read("2.3.0")
		if d := EqualUpgradedDumps(old, restored); d != "" {
			t.Errorf("%s: %s", job, d)
		}
		changed := 0
		for i, l := range restored {
			if s := string(l.Value); strings.Contains(s, `"t0"`) || strings.Contains(s, `"a":3`) {
				restored[i].Value = []byte(strings.Replace(strings.Replace(s, `"t0"`, `"t9"`, 1), `"a":3`, `"a":4`, 1))
				changed++
			}
		}
		if changed == 0 {
			t.Fatalf("%s: nothing to change", job)
		}
		if d := EqualUpgradedDumps(old, restored); !strings.Contains(d, "dumps differ") {
			t.Errorf("%s: %d values changed, and the dumps compare equal", job, changed)
		}
	}
}
