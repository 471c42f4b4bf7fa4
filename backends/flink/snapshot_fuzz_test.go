package flink

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// fuzzFixtures are the real Flink snapshots FuzzFlinkSnapshot mutates, one
// of each kind it reads.
var fuzzFixtures = []string{
	"new-stateful-udf-migration-itcase-flink1.16-hashmap-checkpoint",           // heap checkpoint, state files
	"new-stateful-udf-migration-itcase-flink1.16-hashmap-savepoint",            // heap canonical savepoint
	"new-stateful-udf-migration-itcase-flink1.16-hashmap-savepoint-native",     // heap native savepoint
	"new-stateful-udf-migration-itcase-flink1.16-rocksdb-checkpoint",           // incremental RocksDB: SST, MANIFEST
	"new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint",            // RocksDB canonical savepoint
	"new-stateful-udf-migration-itcase-flink1.15-rocksdb-savepoint-native",     // RocksDB native savepoint
	"new-stateful-broadcast-udf-migration-itcase-flink1.17-hashmap-checkpoint", // broadcast state
	"new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint",           // changelog handles
	"legacy-raw-state-heap-timers-rocks-db-1.12",                               // raw keyed state, timers
	"operatorstate/complexKeyed-flink1.16",                                     // all state inline in _metadata
	"stateful-scala-udf-migration-itcase-flink1.13-jobmanager-savepoint",       // memory backend, _metadata v3
	"type-serializer-snapshot-migration-itcase-flink1.5-savepoint",             // _metadata v2
	"stateful-scala-udf-migration-itcase-flink1.8-jobmanager-savepoint",        // heap sections after ones not walked
}

// FuzzFlinkSnapshot mutates whole real Flink snapshots, _metadata and state
// files together, and reads everything of the result through the registry
// as the commands do (formattest.ReadHostile): nothing may panic, hang,
// allocate without bound or fail with an error the exit codes do not
// classify. The input selects a fixture and lists edits to its files
// (formattest.Mutate; _metadata is the first).
func FuzzFlinkSnapshot(f *testing.F) {
	root := fixtureRoot(f)
	type fixture struct {
		names []string
		files map[string][]byte
	}
	var fixtures []fixture
	for _, name := range fuzzFixtures {
		dir := filepath.Join(root, name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			f.Fatal(err)
		}
		fx := fixture{names: []string{"_metadata"}, files: map[string][]byte{}}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			fx.files[e.Name()] = data
			if e.Name() != "_metadata" {
				fx.names = append(fx.names, e.Name())
			}
		}
		fixtures = append(fixtures, fx)
	}
	for i, fx := range fixtures {
		meta := len(fx.files["_metadata"])
		f.Add(uint8(i), []byte{})
		// A flipped byte in the middle of _metadata, a state file cut
		// short, and an int early in _metadata set to -1.
		f.Add(uint8(i), []byte{1, 0, byte(meta / 2 >> 16), byte(meta / 2 >> 8), byte(meta / 2), 0x40})
		f.Add(uint8(i), []byte{2, 128, 0, 0x10, 0, 0})
		f.Add(uint8(i), []byte{3, 0, 0, 0, 24, 2})
	}
	f.Fuzz(func(t *testing.T, which uint8, edits []byte) {
		fx := fixtures[int(which)%len(fixtures)]
		changed := formattest.Mutate(fx.files, fx.names, edits)
		dir := t.TempDir()
		for _, name := range fx.names {
			p := filepath.Join(dir, name)
			// Every file written, none symlinked: a state file that a
			// symlink leads out of the snapshot to is refused.
			data, ok := changed[name]
			if !ok {
				data = fx.files[name]
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		formattest.ReadHostile(t, testReg, dir)
	})
}
