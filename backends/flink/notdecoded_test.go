package flink

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// ordersValues are the "order" values (and the codec of their type) of the
// orders job's canonical savepoint of a Flink version in testdata/flink: a
// POJO {int id; String name; List<String> tags}.
func ordersValues(t *testing.T, version string) (snapshot.Codec, [][]byte) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "flink", version, "orders-hashmap-canonical", "snapshot", "savepoint-*"))
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

// A POJO whose List<String> field stateutil does not decode (a
// NullableSerializer in Flink 2.x; Flink 1.x's Kryo is, kryo_test.go) is not decoded as a whole, naming the
// field's serializer and the POJO's class; POJO flags that no serializer
// writes are damage all the same.
func TestPojoFieldNotDecoded(t *testing.T) {
	for version, serializer := range map[string]string{
		"2.3.0": "org.apache.flink.api.java.typeutils.runtime.NullableSerializer$NullableSerializerSnapshot",
	} {
		codec, values := ordersValues(t, version)
		for _, v := range values {
			_, err := codec.Decode(v)
			var nd *snapshot.NotDecodedError
			if !errors.As(err, &nd) || errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("%s: Decode(0x%x) = %v, want a NotDecodedError", version, v, err)
			}
			if nd.Class != "stateutil.flink.jobs.OrdersJob$Order" || nd.Serializer != serializer {
				t.Fatalf("%s: not decoded as %q by %q, want the POJO's class and %q", version, nd.Class, nd.Serializer, serializer)
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
