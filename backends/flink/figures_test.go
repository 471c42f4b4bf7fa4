package flink

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// manifestVersions reads the `_metadata` version from MANIFEST.tsv's
// first8_hex column (bytes 4..7), independently of the decoder.
func manifestVersions(t *testing.T, root string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 3 || !strings.HasSuffix(cols[0], "/_metadata") || len(cols[2]) != 16 {
			continue
		}
		v, err := strconv.ParseInt(cols[2][8:], 16, 32)
		if err == nil {
			out[strings.TrimSuffix(cols[0], "/_metadata")] = int(v)
		}
	}
	return out
}

// TestSnapshotFigures checks figures of twelve fixtures against values
// obtained without this package:
//   - version: bytes 4..7 of `_metadata` as MANIFEST.tsv lists them;
//   - file sizes: every relative file the snapshot lists has the size
//     MANIFEST.tsv gives it;
//   - keyed entries: from what Flink's migration jobs write (the stateful
//     UDF job keeps 4 keys 0..3 with a value state in 4 operators and one
//     event and one processing timer per key in 2 of them: 32 entries;
//     with RocksDB before 1.10 the timers are raw keyed state: 16; the
//     complex keyed job keeps 10 list/value entries);
//   - operator elements: the number of offsets per handle, counted by hand
//     from `_metadata` with xxd for complexKeyed-flink1.16 (4 subtasks x 2
//     operators with one "_default_" element each: 8) and the same job in
//     every other version; a broadcast state counts its map's entries
//     (the broadcast job's three states hold keys 0..3 in each of 4
//     subtasks: 48 entries where `_metadata` lists 12 offsets).
func TestSnapshotFigures(t *testing.T) {
	root := fixtureRoot(t)
	versions := manifestVersions(t, root)
	sizes := manifestSizes(t, root)
	cases := []struct {
		dir             string
		kind            snapshot.Kind
		operators       int
		keyed, elements int64
	}{
		{"new-stateful-udf-migration-itcase-flink1.17-rocksdb-checkpoint", snapshot.Checkpoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.17-rocksdb-savepoint-native", snapshot.Savepoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.16-hashmap-checkpoint", snapshot.Checkpoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.16-rocksdb-savepoint", snapshot.Savepoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.13-savepoint", snapshot.Savepoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.12-savepoint", snapshot.Checkpoint, 8, 32, 8},
		{"new-stateful-udf-migration-itcase-flink1.9-rocksdb-savepoint", snapshot.Checkpoint, 8, 16, 8},
		{"operatorstate/complexKeyed-flink1.16", snapshot.Savepoint, 4, 10, 8},
		{"operatorstate/complexKeyed-flink1.9", snapshot.Checkpoint, 3, 10, 8},
		{"operatorstate/nonKeyed-flink1.17", snapshot.Savepoint, 0, 0, 12},
		{"new-stateful-broadcast-udf-migration-itcase-flink1.16-rocksdb-savepoint-native", snapshot.Savepoint, 0, 0, 28 - 12 + 48},
		{"stateful-scala-udf-migration-itcase-flink1.15-rocksdb-savepoint", snapshot.Savepoint, 0, 0, 0},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join(root, c.dir)
			r := openFixture(t, dir)
			s := r.Snapshot()
			if got := s.Properties["metadata_version"]; got != strconv.Itoa(versions[c.dir]) {
				t.Errorf("version %s, MANIFEST says %d", got, versions[c.dir])
			}
			if s.Kind != c.kind {
				t.Errorf("kind %s (%s), want %s", s.Kind, s.Properties["kind_source"], c.kind)
			}
			if c.operators > 0 && len(s.Operators) != c.operators {
				t.Errorf("%d operators, want %d", len(s.Operators), c.operators)
			}
			var keyed, elements int64
			for _, op := range s.Operators {
				for _, sub := range op.Subtasks {
					st, err := snapshot.KeyedStats(ctx, r, op, sub)
					if err != nil {
						t.Fatal(err)
					}
					keyed += st.Entries
					elements += sub.Operator.Entries
					for _, f := range sub.Files {
						if f.Absolute {
							continue
						}
						want, ok := sizes[filepath.ToSlash(filepath.Join(c.dir, f.Path))]
						if !ok || want != f.Size {
							t.Errorf("file %s: size %d, MANIFEST %d (listed %v)", f.Path, f.Size, want, ok)
						}
					}
				}
			}
			if c.keyed > 0 && keyed != c.keyed {
				t.Errorf("%d keyed entries, want %d", keyed, c.keyed)
			}
			if c.elements > 0 && elements != c.elements {
				t.Errorf("%d operator elements, want %d", elements, c.elements)
			}
		})
	}
}
