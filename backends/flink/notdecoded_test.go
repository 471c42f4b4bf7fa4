package flink

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// ordersValues are the "order" values (and the codec of their type) of the
// orders job's canonical savepoint of a Flink version in testdata/flink: a
// POJO {int id; String name; List<String> tags}.
func ordersValues(t *testing.T, version string) (snapshot.Codec, [][]byte) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", version, "orders-hashmap-canonical", "snapshot", "savepoint-*"))
	if len(dirs) != 1 {
		t.Fatalf("testdata/flink/%s/orders-hashmap-canonical holds %d savepoints, want 1", version, len(dirs))
	}
	ctx := context.Background()
	r, err := testReg.Open(ctx, dirs[0], snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var codec snapshot.Codec
	var values [][]byte
	for _, op := range r.Snapshot().Operators {
		st, ok := op.KeyedStateByName("order")
		if !ok {
			continue
		}
		if codec, err = testReg.Codecs.Codec(st.ValueType); err != nil {
			t.Fatal(err)
		}
		for i := range op.Subtasks {
			for e, err := range r.Entries(ctx, op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
				if err != nil {
					t.Fatal(err)
				}
				if e.State == "order" {
					values = append(values, append([]byte(nil), e.Value...))
				}
			}
		}
	}
	if len(values) == 0 {
		t.Fatal("no order values")
	}
	return codec, values
}

// The orders POJO's List<String> field decodes in both majors (Kryo in
// Flink 1.x, kryo.go; a NullableSerializer around a ListSerializer in
// 2.x), so its POJO does; POJO flags that no serializer writes are damage.
func TestOrdersPojoDecodes(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		codec, values := ordersValues(t, version)
		for _, v := range values {
			got, err := codec.Decode(v)
			m, _ := got.(map[string]any)
			if tags, ok := m["tags"].([]any); err != nil || !ok || len(tags) != 2 {
				t.Fatalf("%s: Decode(0x%x) = %v, %v; want the POJO with its two tags", version, v, got, err)
			}
		}
		// Flink writes exactly one of the flags null (1), no subclass (2),
		// subclass (4, then the class name) and tagged subclass (8).
		for _, flags := range []byte{0x03, 0x06, 0x04, 0x00} {
			b := append([]byte{flags}, values[0][1:]...)
			if _, err := codec.Decode(b); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Errorf("%s: POJO flags 0x%02x: %v, want damage", version, flags, err)
			}
		}
	}
}
