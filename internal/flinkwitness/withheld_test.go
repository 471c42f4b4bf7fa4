package flinkwitness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// zooEntries are the checked-in witness snapshots of the zoo job.
func zooEntries(t testing.TB) []flinkharness.Entry {
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	var zoo []flinkharness.Entry
	for _, e := range entries {
		if e.Manifest.Job == "zoo" {
			zoo = append(zoo, e)
		}
	}
	if len(zoo) == 0 {
		t.Fatal("no zoo entries in testdata/flink-witness")
	}
	return zoo
}

// kryoStates are the zoo job's states whose values need a class layout,
// with the class each needs.
var kryoStates = map[string]string{"kryo": "stateutil.flink.jobs.ZooJob$Gadget", "nested": "stateutil.flink.jobs.ZooJob$Inner"}

// FuzzVerifyWithheldLayouts feeds the zoo job's healthy snapshots to verify
// with whatever the user says of its Kryo classes: nothing, a part, their
// real layout, or a wrong one. Whatever it is, verify finds no damage: a
// value whose layout is withheld or does not fit is not decoded. (A heap
// checkpoint, which records no value lengths, cannot have its states read
// past such a value: they are unreadable, never damaged.)
func FuzzVerifyWithheldLayouts(f *testing.F) {
	entries := zooEntries(f)
	real, err := os.ReadFile(filepath.Join(flinkharness.RepoRoot(), "testenv", "flink", "witness", "zoo.kryo-classes"))
	if err != nil {
		f.Fatal(err)
	}
	for i := range entries {
		f.Add(uint8(i), "")
		f.Add(uint8(i), string(real))
	}
	f.Add(uint8(0), "final class stateutil.flink.jobs.ZooJob$Inner { String label; int weight; }")
	f.Add(uint8(1), "final class stateutil.flink.jobs.ZooJob$Gadget { String name; long[] values; Map<String, Integer> attrs; }")
	f.Add(uint8(2), "final class stateutil.flink.jobs.ZooJob$Inner { int weight; String label; long extra; }")
	f.Add(uint8(3), "class stateutil.flink.jobs.ZooJob$Gadget { Object name; long[] values; Map attrs; }\nenum stateutil.flink.jobs.ZooJob$Inner { A, B }")
	f.Fuzz(func(t *testing.T, pick uint8, layout string) {
		e := entries[int(pick)%len(entries)]
		set, err := classlayout.Parse([]byte(layout), "layout")
		if err != nil {
			return // refused before anything is read
		}
		file := filepath.Join(t.TempDir(), "layout")
		if err := os.WriteFile(file, []byte(layout), 0o644); err != nil {
			t.Fatal(err)
		}
		old, nw := e.PathMap()
		code, out, errOut := stateutil("verify", "-o", "json", e.SnapshotDir(), "--path-map", old+"="+nw, "--kryo-classes", file)
		var v struct {
			Findings   []finding    `json:"findings"`
			NotDecoded []notDecoded `json:"not_decoded"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: verify exit %d: %s", e.Name, code, errOut)
		}
		heap := e.Manifest.Backend == "hashmap" && e.Manifest.Kind == "checkpoint"
		for _, f := range v.Findings {
			if f.Check != "unreadable" || !heap {
				t.Fatalf("%s, layout %q: verify finds %s: %s", e.Name, layout, f.Check, f.Message)
			}
		}
		if len(v.Findings) > 0 {
			return
		}
		for state, class := range kryoStates {
			if _, given := set.Class(class); given {
				continue
			}
			if !slices.ContainsFunc(v.NotDecoded, func(n notDecoded) bool { return n.State == state && n.ValueClass == class }) {
				t.Fatalf("%s: with %s withheld, state %s is decoded: %+v", e.Name, class, state, v.NotDecoded)
			}
		}
		if code != 0 {
			t.Fatalf("%s: verify exit %d without findings: %s", e.Name, code, strings.TrimSpace(errOut))
		}
	})
}
