package cmd

import (
	"os"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// scalaEdits are new values for key scala-0 of the scala job, one per
// state but unit (whose one value cannot change), each unlike the job's own.
var scalaEdits = map[string]string{
	"tuple2":    `["edited",-7]`,
	"caseclass": `[-7,"edited",null]`,
	"option":    `"edited"`,
	"either":    `{"right":-7}`,
	"try":       `{"success":-7}`,
	"enum":      `"green"`,
	"seq":       `["p",null,"q"]`,
	"options":   `[null,-7]`,
	"seqs":      `[["x","y"],[]]`,
	"vectors":   `{"v0":[],"v9":[1,2,3]}`,
	"cases":     `{"k7":[-7,["z",null]],"k8":[8,null]}`,
	"kryo":      `{"@class":"scala.Tuple2","@value":[{"@class":"scala.Some","@value":"edited"},{"@class":"scala.collection.immutable.$colon$colon","@value":["a",-7]}]}`,
	"kryos":     `[{"@class":"scala.util.Left","@value":"edited"},{"@class":"scala.collection.immutable.Map$Map1","@value":[{"@class":"scala.Tuple2","@value":["k","v"]}]}]`,
}

// TestScalaLoadRestoresInFlink: Scala API values and Scala classes under
// Kryo, changed in stateutil's own dump of the scala job's savepoint, one
// key deleted, the rest loaded back as dumped: Flink restores exactly
// those changes, on the heap and on RocksDB.
func TestScalaLoadRestoresInFlink(t *testing.T) {
	eachFlinkVersion(t, func(t *testing.T, v string) {
		fc, out := newFlinkCase(t, v)
		scala := fc.entry("scala-hashmap-canonical")
		from, want := loadEdit(t, fc.stateutil("dump", scala.SnapshotDir(), "--operator", "keyed"), dumpOf(t, scala.File("dump.jsonl")),
			dumpEdit{key: "scala-0", values: scalaEdits, deleteKey: "scala-1", deleteState: "option", skip: map[string]bool{"unit": true}})
		records := out("scala-load.jsonl")
		if err := os.WriteFile(records, from, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := out("scala-loaded")
		fc.stateutil("load", scala.SnapshotDir(), "--from", records, "--output", dst)
		for _, backend := range []string{"hashmap", "rocksdb"} {
			fc.restore("load-scala-"+backend, "scala", dst, want, flinkharness.RestoreOptions{Parallelism: 2, Backend: backend})
		}
	})
}
