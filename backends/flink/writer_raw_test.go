package flink

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Raw operator state is not keyed: a max-parallelism change carries it
// with its subtask, byte for byte and with the layout its operator
// recorded, while a parallelism change, which would have to split it, is
// refused. No Flink job of the harness writes raw operator state, so the
// source is a real Flink savepoint given some.
func TestRawOperatorStateCarriedAcrossMaxParallelism(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "sp")
	if err := os.CopyFS(src, os.DirFS(filepath.Join("..", "..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d"))); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMetadata(ctx, storage.Local(), filepath.Join(src, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	// _metadata v4 records ids only: Flink's id of uid "keyed".
	keyedID := keygroup.OperatorIDOfUID("keyed")
	var keyed *metadata.OperatorState
	for _, op := range m.Operators {
		if hex.EncodeToString(op.ID[:]) == keyedID {
			keyed = op
		}
	}
	if keyed == nil || len(keyed.Subtasks) < 2 {
		t.Fatalf("the savepoint has no operator \"keyed\" of several subtasks")
	}
	raw := map[int][]byte{}
	layout := map[int][]metadata.OperatorStateInfo{}
	for _, st := range keyed.Subtasks {
		b := fmt.Appendf(nil, "\x00\x01raw state of subtask %d\xff", st.Index)
		name := fmt.Sprintf("raw-operator-%d", st.Index)
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		raw[st.Index] = b
		layout[st.Index] = []metadata.OperatorStateInfo{{Name: "events", Mode: metadata.SplitDistribute, Offsets: []int64{0, int64(st.Index + 3)}}, {Name: "all", Mode: metadata.Union, Offsets: []int64{9}}}
		st.RawOperatorState = &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState, States: layout[st.Index],
			Delegate: &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: name, Size: int64(len(b))}}
	}
	props, err := metadata.SavepointProperties("Savepoint", "NONE", true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := metadata.EncodeMetadata(m, props)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "_metadata"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := snapshot.NewRegistry(storage.NewRegistry())
	Register(reg)

	dst := filepath.Join(t.TempDir(), "out")
	if _, err := migrate.Run(ctx, reg, migrate.Request{Source: src, Destination: dst, Change: redistribute.Request{MaxParallelism: 256}, Verify: true}); err != nil {
		t.Fatal(err)
	}
	out, err := reg.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	op, ok := out.Snapshot().Operator("keyed")
	if !ok || op.MaxParallelism != 256 {
		t.Fatalf("operator keyed: %v, max parallelism %d", ok, op.MaxParallelism)
	}
	for _, sub := range op.Subtasks {
		got, err := out.Raw(ctx, op, sub.Index)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Operator) != string(raw[sub.Index]) || len(got.Keyed) != 0 {
			t.Errorf("subtask %d: raw operator state %q (raw keyed %d bytes), want %q", sub.Index, got.Operator, len(got.Keyed), raw[sub.Index])
		}
	}
	dm, err := ReadMetadata(ctx, storage.Local(), filepath.Join(dst, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fo := range dm.Operators {
		if hex.EncodeToString(fo.ID[:]) != keyedID {
			continue
		}
		for _, st := range fo.Subtasks {
			if st.RawOperatorState == nil || !reflect.DeepEqual(st.RawOperatorState.States, layout[st.Index]) {
				t.Errorf("subtask %d: raw operator state handle %+v, want states %+v", st.Index, st.RawOperatorState, layout[st.Index])
			}
		}
	}

	_, err = migrate.Run(ctx, reg, migrate.Request{Source: src, Destination: filepath.Join(t.TempDir(), "split"), Change: redistribute.Request{MaxParallelism: 256, Parallelism: 3}})
	if !errors.Is(err, redistribute.ErrNotRedistributable) {
		t.Errorf("a parallelism change that would split raw operator state: %v, want ErrNotRedistributable", err)
	}
}
