package flink_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
)

// savepointOf is the snapshot directory of a checked-in corpus entry.
func savepointOf(t *testing.T, version, name string) string {
	t.Helper()
	for _, e := range corpus(t) {
		if e.Manifest.FlinkVersion == version && e.Name == name {
			return e.SnapshotDir()
		}
	}
	t.Fatalf("testdata/flink has no %s of Flink %s", name, version)
	return ""
}

// A savepoint written for the other major version whose Kryo state Flink
// could not restore (Kryo 2 in 1.x, Kryo 5 in 2.x: real Flink 1.19.3
// fails with "Missing value for the key
// 'org.apache.avro.generic.GenericData$Array'" on the 2.3.0 one) is
// refused before anything is written, sharded or not, naming the
// operator, the state and the serializer; within a major, and without
// Kryo, the same sources are written.
func TestFlinkVersionRefusesWhatFlinkCannotRestore(t *testing.T) {
	ctx := context.Background()
	reg := registry()
	const kryo = "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"
	for _, c := range []struct {
		from, entry, to string
		refused         []string // in the message; nil: written
	}{
		{"2.3.0", "types-hashmap-canonical", "1.19", []string{`Flink 1.19 would not restore`, `operator "keyed" keyed state "kryo"`, kryo, "Kryo 2", "nothing was written"}},
		{"2.3.0", "types-hashmap-canonical", "1.20", []string{`operator "keyed" keyed state "kryo"`, kryo}},
		{"1.20.5", "types-hashmap-canonical", "2.0", []string{`Flink 2.0 would not restore`, `keyed state "kryo"`, kryo}},
		{"1.20.5", "types-hashmap-canonical", "2.3", []string{`keyed state "kryo"`, kryo}},
		{"2.3.0", "types-hashmap-canonical", "1.15", []string{`Flink 1.15 would not restore`, `keyed state "kryo"`, kryo}},
		{"2.3.0", "basic-hashmap-canonical", "1.15", nil},
		{"2.3.0", "basic-hashmap-canonical", "1.17", nil},
		{"2.3.0", "types-hashmap-canonical", "2.0", nil},
		{"1.20.5", "types-hashmap-canonical", "1.18", nil},
		{"2.3.0", "basic-hashmap-canonical", "1.19", nil},
		{"1.20.5", "basic-hashmap-canonical", "2.1", nil},
	} {
		t.Run(c.from+"-"+c.entry+"-for-"+c.to, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			req := migrate.Request{Source: savepointOf(t, c.from, c.entry), Destination: dst, Format: "flink", ReaderVersion: c.to}
			_, perr := migrate.PlanShards(ctx, reg, migrate.ShardRequest{Request: req, Shards: 2})
			_, err := migrate.Run(ctx, reg, req)
			if c.refused == nil {
				if err != nil || perr != nil {
					t.Fatalf("refused: %v; planning shards: %v", err, perr)
				}
				return
			}
			for _, err := range []error{err, perr} {
				var re *flink.RestoreError
				if !errors.As(err, &re) || !errors.Is(err, snapshot.ErrUnsupportedVersion) {
					t.Fatalf("got %v, want a RestoreError (unsupported)", err)
				}
				for _, s := range c.refused {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the refusal does not say %q: %v", s, err)
					}
				}
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written (%v)", dst, err)
			}
		})
	}
}

// Flink 1.15 writes and reads _metadata version 3, which has no
// CheckpointProperties: what stateutil writes for it reads back whole.
func TestFlinkVersion115WritesVersion3(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "out")
	_, err := migrate.Run(ctx, registry(), migrate.Request{Source: savepointOf(t, "1.20.5", "basic-hashmap-canonical"), Destination: dst,
		Format: "flink", ReaderVersion: "1.15", Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	m := writtenMetadata(t, dst)
	if m.Version != 3 || m.Properties != nil {
		t.Errorf("_metadata v%d, properties %v; want v3 without properties", m.Version, m.Properties)
	}
}

// Flink 1.15 to 1.17 read OperatorBackendSerializationProxy versions up
// to 5 (1.17.2 refuses 6: "Incompatible version: found 6, compatible
// versions are [5, 4, 3, 2, 1]"): the operator state files written for
// them have a version 5 header, for 1.18 on version 6.
func TestFlinkVersionWritesTheOperatorHeaderItReads(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		to   string
		want uint32
	}{{"1.15", 5}, {"1.16", 5}, {"1.17", 5}, {"1.18", 6}, {"2.3", 6}} {
		t.Run(c.to, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			_, err := migrate.Run(ctx, registry(), migrate.Request{Source: savepointOf(t, "1.20.5", "basic-hashmap-canonical"), Destination: dst,
				Format: "flink", ReaderVersion: c.to, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			checkOperatorHeaders(t, dst, c.want)
		})
	}
}

// Without --flink-version, a savepoint's operator state files keep the
// header version of its source: Flink 1.15 to 1.17 read no version 6, and
// their `_metadata` version (4) is the one 1.18 to 1.20 write too.
func TestDefaultKeepsTheSourcesOperatorHeader(t *testing.T) {
	root := fixtureDir(t)
	if root == "" {
		t.Skip("../shared/fixtures/flink is absent: the Flink 1.15 and 1.17 savepoints live there")
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, src string
		want      uint32
	}{
		{"1.15", filepath.Join(root, "new-stateful-broadcast-udf-migration-itcase-flink1.15-hashmap-savepoint"), 5},
		{"1.17", filepath.Join(root, "new-stateful-broadcast-udf-migration-itcase-flink1.17-rocksdb-savepoint"), 5},
		{"1.20.5", savepointOf(t, "1.20.5", "basic-hashmap-canonical"), 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			if _, err := migrate.Run(ctx, registry(), migrate.Request{Source: c.src, Destination: dst, Format: "flink", Verify: true}); err != nil {
				t.Fatal(err)
			}
			checkOperatorHeaders(t, dst, c.want)
		})
	}
}

// checkOperatorHeaders checks that every operator state file of the
// savepoint at dir starts with header version want.
func checkOperatorHeaders(t *testing.T, dir string, want uint32) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*-operator"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no operator state files in %s (%v)", dir, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 4 || binary.BigEndian.Uint32(data) != want {
			t.Errorf("%s: header % x, want version %d", f, data[:min(len(data), 4)], want)
		}
	}
}

// writtenMetadata parses the `_metadata` of the savepoint written at dir.
func writtenMetadata(t *testing.T, dir string) *metadata.Metadata {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := metadata.ParseMetadata(data, dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
