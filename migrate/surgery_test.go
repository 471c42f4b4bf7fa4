package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/surgery"
)

var flinkEdits = []surgery.Edit{
	{Op: surgery.DeleteKeys, Operator: "keyed", Keys: []string{"user-0", "user-7"}},
	{Op: surgery.RenameState, Operator: "keyed", State: "count", To: "count-v2"},
	{Op: surgery.DropState, Operator: "keyed", State: "events"},
	{Op: surgery.DropState, Operator: "offsets", State: "subtask-summary"},
}

// State edits in shards write what one process writes, byte for byte in a
// Flink savepoint, with a max-parallelism change in the same run; the
// commit's checks of what the shards wrote hold for the edited source.
func TestShardedStateEditsEqualSingleProcess(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")
	dir := t.TempDir()
	req := Request{Source: src, Change: redistribute.Request{MaxParallelism: 256, Parallelism: 3}, StateEdits: flinkEdits}
	req.Destination = filepath.Join(dir, "single")
	res, err := Run(ctx, testReg, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Surgery == nil || len(res.Surgery.Deletions) != 1 || res.Surgery.Deletions[0].Deleted != 2 {
		t.Fatalf("report %+v, want the 2 keys deleted", res.Surgery)
	}
	single := flinkFiles(t, req.Destination)
	out := openSnap(t, req.Destination)
	keyed, _ := out.Snapshot().Operator("keyed")
	if _, ok := keyed.KeyedStateByName("events"); ok || countEntries(t, out, keyed, "count-v2") != 18 {
		t.Fatalf("keyed states of the copy: %+v, want events dropped and the 20 keys' count less 2 as count-v2", keyed.KeyedStates)
	}
	for _, n := range []int{1, 3} {
		req.Destination = filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
		sharded(t, req, n)
		sameFlinkFiles(t, n, req.Destination, single)
	}
}

// A load's records travel in the plan: shards write what one process
// writes, byte for byte, the records' key groups spread over the shards.
func TestShardedLoadEqualsSingleProcess(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")
	recs, err := surgery.ReadRecords(strings.NewReader(`{"operator":"keyed","state":"count","key":"user-3","value":1234}
{"operator":"keyed","state":"events","key":"user-new","value":["x","y"]}
{"operator":"keyed","state":"by-bucket","key":"user-7","value":{"b0":1}}
{"operator":"keyed","state":"avg","key":"user-5","delete":true}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	req := Request{Source: src, Change: redistribute.Request{Parallelism: 3}, StateEdits: []surgery.Edit{{Op: surgery.Load, From: "records.jsonl", Records: recs}}}
	req.Destination = filepath.Join(dir, "single")
	res, err := Run(ctx, testReg, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := []surgery.LoadReport{{From: "records.jsonl", Records: 4, Puts: 3, Deletes: 1}}; res.Surgery == nil || !slices.Equal(res.Surgery.Loads, want) {
		t.Fatalf("report %+v, want loads %+v", res.Surgery, want)
	}
	single := flinkFiles(t, req.Destination)
	for _, n := range []int{1, 3} {
		req.Destination = filepath.Join(dir, fmt.Sprintf("sharded-%d", n))
		sharded(t, req, n)
		sameFlinkFiles(t, n, req.Destination, single)
	}
}

func TestShardedStateEditsEveryFormat(t *testing.T) {
	src := generated(t, 200, 3)
	edits := []surgery.Edit{
		{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-1", "word-2", "word-3"}},
		{Op: surgery.RenameState, Operator: "kafka-source", State: "partition-offsets", To: "offsets"},
	}
	for _, format := range []string{"filesystem", "rocksdb", "memory"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			req := Request{Source: src, Format: format, Change: redistribute.Request{Parallelism: 2}, StateEdits: edits, Verify: true}
			req.Destination = filepath.Join(dir, "single")
			if _, err := Run(context.Background(), testReg, req); err != nil {
				t.Fatal(err)
			}
			req.Verify = false
			req.Destination = filepath.Join(dir, "sharded")
			sharded(t, req, 2)
			sameEntries(t, filepath.Join(dir, "single"), req.Destination)
		})
	}
}

// A deletion that requires its keys present and misses one writes
// nothing, and cannot be planned for shards.
func TestRequirePresentWritesNothing(t *testing.T) {
	src := generated(t, 50, 2)
	dst := filepath.Join(t.TempDir(), "dst")
	req := Request{Source: src, Destination: dst, StateEdits: []surgery.Edit{
		{Op: surgery.DeleteKeys, Operator: "word-counter", Keys: []string{"word-1", "no-such-word"}, RequirePresent: true}}}
	if _, err := Run(context.Background(), testReg, req); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("Run: %v, want not found", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a refused deletion left %s: %v", dst, err)
	}
	if _, err := PlanShards(context.Background(), testReg, ShardRequest{Request: req, Shards: 1}); !errors.Is(err, surgery.ErrBadEdit) {
		t.Fatalf("PlanShards: %v, want a bad edit", err)
	}
}
