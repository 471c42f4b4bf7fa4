package flink

import (
	"context"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/vmihailenco/msgpack/v5"
)

// A staged subtask's files carry the CRC32C the commit's manifest
// records: one whose handles name a file the staged files do not list, or
// list at another size, is refused rather than recorded without it.
func TestAdoptNeedsEachFileChecksummed(t *testing.T) {
	ctx := context.Background()
	const name = "op0-0.0badc0de-operator"
	layout, err := msgpack.Marshal(&stagedHandles{Operator: &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState,
		Delegate: &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: name, Size: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	op := &snapshot.Operator{ID: "0123456789abcdef0123456789abcdef", Parallelism: 1, MaxParallelism: 128}
	for _, c := range []struct {
		name  string
		files []snapshot.FileRef
		ok    bool
	}{
		{"listed", []snapshot.FileRef{{Path: "/sp/" + name, Size: 10, CRC32C: 0xc0ffee}}, true},
		{"not listed", nil, false},
		{"another size", []snapshot.FileRef{{Path: "/sp/" + name, Size: 9, CRC32C: 0xc0ffee}}, false},
		{"another directory", []snapshot.FileRef{{Path: "/elsewhere/" + name, Size: 10, CRC32C: 0xc0ffee}}, false},
	} {
		w := &writer{dir: "/sp"}
		err := w.Adopt(ctx, op, snapshot.StagedSubtask{Index: 0, Subtask: &snapshot.Subtask{KeyGroups: keygroup.Range{Start: 0, End: 127}}, Layout: layout, Files: c.files})
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), name)) {
			t.Errorf("%s: %v, want ok %v (or an error naming %s)", c.name, err, c.ok, name)
		}
	}
}
