package flink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// carriedParts are the parts of an operator's carried record that a copy
// must keep byte for byte: serializer snapshots (key, keyed, operator and
// broadcast states, TTL wrappers and timers included) and the coordinator
// state (a FLIP-27 source's enumerator and split assignments).
var carriedParts = []string{"key_serializer", "keyed", "operator", "broadcast", "has_coordinator", "coordinator_name", "coordinator_data"}

func carried(t *testing.T, op *snapshot.Operator) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(op.Carried, &m); err != nil {
		t.Fatalf("operator %s: carried record: %v", op.Label(), err)
	}
	return m
}

// What stateutil's model does not hold is carried over from real Flink
// snapshots into the savepoint written: master states, CheckpointProperties
// of a savepoint, serializer snapshots as bytes, coordinator state, raw
// keyed and operator state. The source read by Flink's own reader is the
// reference; each part must have been present in some source, so that
// the test cannot pass on sources without it.
func TestWriterCarriesWhatTheModelLacks(t *testing.T) {
	ctx := context.Background()
	reg := registry()
	type source struct {
		name, dir string
		pathMap   map[string]string
	}
	var sources []source
	for _, e := range corpus(t) {
		// heapkryo holds a state no reader reads (TestWriterRoundTripsRealSnapshots).
		if e.Manifest.Changelog || e.Manifest.Compression || e.Manifest.Job == "heapkryo" {
			continue
		}
		old, nw := e.PathMap()
		sources = append(sources, source{e.Manifest.FlinkVersion + "/" + e.Name, e.SnapshotDir(), map[string]string{old: nw}})
	}
	if root := fixtureDir(t); root != "" {
		// Flink 1.9's RocksDB savepoint with raw keyed state (heap timers
		// of a RocksDB backend) and broadcast state.
		for _, n := range []string{"new-stateful-udf-migration-itcase-flink1.9-rocksdb-savepoint", "new-stateful-broadcast-udf-migration-itcase-flink1.11-rocksdb-savepoint"} {
			sources = append(sources, source{n, filepath.Join(root, n), nil})
		}
	}
	seen := map[string]int{}
	for _, s := range sources {
		t.Run(s.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "sp")
			if _, err := migrate.Run(ctx, reg, migrate.Request{Source: s.dir, Destination: dst, Format: "flink", PathMap: s.pathMap}); err != nil {
				t.Fatal(err)
			}
			sm, err := flink.ReadMetadata(ctx, storage.Local(), filepath.Join(s.dir, "_metadata"))
			if err != nil {
				t.Fatal(err)
			}
			dm, err := flink.ReadMetadata(ctx, storage.Local(), filepath.Join(dst, "_metadata"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(masters(sm), masters(dm)) {
				t.Errorf("master states %v, the source's %v", masters(dm), masters(sm))
			}
			seen["master states"] += len(sm.MasterStates)
			if sm.IsSavepoint() {
				want := *sm.Properties
				if want.Format == "NATIVE" {
					// The writer's savepoints are canonical.
					want.Format = "CANONICAL"
					want.Strings = slices.Clone(want.Strings)
					for i, s := range want.Strings {
						if s == "NATIVE" {
							want.Strings[i] = "CANONICAL"
						}
					}
				}
				if !reflect.DeepEqual(*dm.Properties, want) {
					t.Errorf("CheckpointProperties %+v, the source's %+v", *dm.Properties, *sm.Properties)
				}
				seen["savepoint properties"]++
			}
			src, err := reg.Open(ctx, s.dir, snapshot.OpenOptions{PathMap: s.pathMap})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			out, err := reg.Open(ctx, dst, snapshot.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			for _, op := range src.Snapshot().Operators {
				got, ok := out.Snapshot().Operator(op.ID)
				if !ok {
					t.Errorf("operator %s not written", op.Label())
					continue
				}
				a, b := carried(t, op), carried(t, got)
				for _, part := range carriedParts {
					if !bytes.Equal(byName(t, a[part]), byName(t, b[part])) {
						t.Errorf("operator %s: %s is %s, the source's %s", op.Label(), part, b[part], a[part])
					}
					if len(a[part]) > 0 && string(a[part]) != "null" && string(a[part]) != "false" {
						seen[part]++
					}
				}
				for _, sub := range op.Subtasks {
					ra, err := src.Raw(ctx, op, sub.Index)
					if err != nil {
						t.Fatal(err)
					}
					rb, err := out.Raw(ctx, got, sub.Index)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(ra.Keyed, rb.Keyed) || !bytes.Equal(ra.Operator, rb.Operator) {
						t.Errorf("operator %s subtask %d: raw state of %d+%d bytes, the source's %d+%d", op.Label(), sub.Index,
							len(rb.Keyed), len(rb.Operator), len(ra.Keyed), len(ra.Operator))
					}
					if len(ra.Keyed)+len(ra.Operator) > 0 {
						seen["raw state"]++
					}
				}
			}
		})
	}
	for _, part := range append([]string{"savepoint properties", "key_serializer", "keyed", "operator", "broadcast", "coordinator_data"}, fixtureParts(t)...) {
		if seen[part] == 0 {
			t.Errorf("no source had %s: the test shows nothing about carrying it", part)
		}
	}
}

// fixtureParts are parts only the shared fixtures have.
func fixtureParts(t *testing.T) []string {
	if fixtureDir(t) == "" {
		return nil
	}
	return []string{"raw state"}
}

// byName is a list of state meta infos sorted by name (Flink writes
// operator states in hash order, the writer in descriptor order; Flink
// finds them by name), or any other part as it is.
func byName(t *testing.T, part json.RawMessage) json.RawMessage {
	var metas []map[string]json.RawMessage
	if json.Unmarshal(part, &metas) != nil {
		return part
	}
	slices.SortFunc(metas, func(a, b map[string]json.RawMessage) int { return bytes.Compare(a["name"], b["name"]) })
	out, err := json.Marshal(metas)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type masterState struct {
	Version int32
	Name    string
	Data    []byte
}

func masters(m *metadata.Metadata) []masterState {
	out := []masterState{}
	for _, s := range m.MasterStates {
		out = append(out, masterState{s.Version, s.Name, s.Data})
	}
	return out
}

// fixtureDir is ../shared/fixtures/flink, or "" when it is absent.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "fixtures", "flink"))
	if err != nil {
		return ""
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}
