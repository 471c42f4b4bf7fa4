package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// resealed is sp after edit, sealed again: an edit the digest cannot
// refuse, so that what a shard recomputes from the source is what refuses
// it.
func resealed(t *testing.T, sp *ShardPlan, edit func(*ShardPlan)) *ShardPlan {
	t.Helper()
	data, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	var c ShardPlan
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	edit(&c)
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// runPlan opens sp's staging area, runs every shard and commits.
func runPlan(ctx context.Context, sp *ShardPlan) error {
	if err := OpenStaging(ctx, testReg, sp); err != nil {
		return err
	}
	for i := range sp.Shards {
		if _, err := RunShard(ctx, testReg, sp, i+1, ShardOptions{}); err != nil {
			return err
		}
	}
	_, err := CommitShards(ctx, testReg, sp, CommitOptions{})
	return err
}

func TestPlanDigestRefusesAnEditedPlan(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 50, 2)
	dir := t.TempDir()
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: filepath.Join(dir, "dst"), Change: redistribute.Request{Parallelism: 3}}, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The digest is SHA-256 of the plan's JSON with the digest empty.
	c := *sp
	c.Digest = ""
	body, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if want := "sha256:" + hex.EncodeToString(sum[:]); sp.Digest != want {
		t.Fatalf("digest %q, want %q", sp.Digest, want)
	}
	file := filepath.Join(dir, "plan.json")
	if err := WriteShardPlan(ctx, testReg, file, sp, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadShardPlan(ctx, testReg, file); err != nil {
		t.Fatalf("the plan as written: %v", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), `"subtask": 1,`, `"subtask": 2,`, 1)
	if edited == string(data) {
		t.Fatal("no subtask 1 in the plan to edit")
	}
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadShardPlan(ctx, testReg, file)
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "was edited since it was planned") || !strings.Contains(err.Error(), file) {
		t.Fatalf("an edited plan: %v, want corrupt, naming %s, edited since it was planned", err, file)
	}
}

// A plan that leaves out a subtask, or an operator-state element, is
// refused by the shards and the commit, naming what differs, and nothing
// is written to the destination.
func TestShardAndCommitRefuseAPlanThatCoversLess(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 200, 3)
	for name, c := range map[string]struct {
		edit  func(*ShardPlan)
		where string
	}{
		"shard list lost a subtask": {func(sp *ShardPlan) {
			a := &sp.Shards[len(sp.Shards)-1]
			a.Bytes -= a.Subtasks[0].Bytes
			a.Subtasks = a.Subtasks[1:]
		}, "shards[1]"},
		"split assignment shortened": {func(sp *ShardPlan) {
			for i := range sp.Plan.Operators {
				for k := range sp.Plan.Operators[i].OperatorStates {
					if os := &sp.Plan.Operators[i].OperatorStates[k]; os.Mode == snapshot.Split {
						pieces := &os.Assignment[0]
						(*pieces)[0].Count--
						return
					}
				}
			}
			panic("no split state")
		}, "operator_states[0].assignment[0][0].count"},
		"union state left out of a subtask": {func(sp *ShardPlan) {
			for i := range sp.Plan.Operators {
				for k := range sp.Plan.Operators[i].OperatorStates {
					if os := &sp.Plan.Operators[i].OperatorStates[k]; os.Mode == snapshot.Union {
						os.Assignment[0] = []redistribute.Piece{}
						return
					}
				}
			}
			panic("no union state")
		}, "assignment[0]"},
		"sources of a subtask": {func(sp *ShardPlan) {
			s := &sp.Plan.Operators[1].Subtasks[1]
			s.Sources = s.Sources[:len(s.Sources)-1]
		}, "plan.operators[1].subtasks[1].sources"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "dst")
			sp, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 4}}, Shards: 2})
			if err != nil {
				t.Fatal(err)
			}
			bad := resealed(t, sp, c.edit)
			if err := OpenStaging(ctx, testReg, bad); err != nil {
				t.Fatal(err)
			}
			_, err = RunShard(ctx, testReg, bad, 1, ShardOptions{})
			if !errors.Is(err, ErrPlanMismatch) || !strings.Contains(err.Error(), c.where) {
				t.Fatalf("shard of the plan: %v, want a mismatch at %s", err, c.where)
			}
			_, err = CommitShards(ctx, testReg, bad, CommitOptions{})
			if !errors.Is(err, ErrPlanMismatch) || !strings.Contains(err.Error(), c.where) {
				t.Fatalf("commit of the plan: %v, want a mismatch at %s", err, c.where)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Fatalf("destination after refusals: %v", err)
			}
		})
	}
}

// A plan whose expiry the source refuses (a TTL for a state it does not
// have) is refused by shard and commit as by planning, without a panic.
func TestShardRefusesAnExpiryTheSourceRefuses(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 50, 2)
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: filepath.Join(t.TempDir(), "dst"), Change: redistribute.Request{Parallelism: 3}}, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	bad := resealed(t, sp, func(sp *ShardPlan) {
		sp.DropExpired = &PlannedExpiry{At: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), TTL: map[string]time.Duration{"count": 1}}
	})
	if err := OpenStaging(ctx, testReg, bad); err != nil {
		t.Fatal(err)
	}
	var x *snapshot.ExpiryError
	if _, err := RunShard(ctx, testReg, bad, 1, ShardOptions{}); !errors.As(err, &x) {
		t.Fatalf("shard: %v, want the expiry refused", err)
	}
	if _, err := CommitShards(ctx, testReg, bad, CommitOptions{}); !errors.As(err, &x) {
		t.Fatalf("commit: %v, want the expiry refused", err)
	}
}

func TestPlanShardsCount(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 20, 2)
	dst := filepath.Join(t.TempDir(), "dst")
	// 4 operators at parallelism 3: 12 new subtasks.
	for _, n := range []int{0, -1, 13, 100000} {
		if _, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 3}}, Shards: n}); !errors.Is(err, ErrShardCount) {
			t.Errorf("%d shards: %v, want ErrShardCount", n, err)
		}
	}
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 3}}, Shards: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range sp.Shards {
		if len(a.Subtasks) != 1 {
			t.Errorf("shard %d of 12 writes %d subtasks", a.Shard, len(a.Subtasks))
		}
	}
}

// A plan's staging area is opened by planning; shards refuse a plan that
// is not open, committed or aborted, and never make its staging area.
func TestShardsOfAClosedPlan(t *testing.T) {
	ctx := context.Background()
	src := generated(t, 50, 2)
	dst := filepath.Join(t.TempDir(), "dst")
	req := Request{Source: src, Destination: dst, Change: redistribute.Request{Parallelism: 3}}
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: req, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	gone := func(when string) {
		t.Helper()
		if _, err := os.Stat(sp.Staging); !os.IsNotExist(err) {
			t.Fatalf("%s: staging %s: %v, want none", when, sp.Staging, err)
		}
	}
	if _, err := RunShard(ctx, testReg, sp, 1, ShardOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("shard of a plan never opened: %v", err)
	}
	gone("a shard of a plan never opened")
	if err := OpenStaging(ctx, testReg, sp); err != nil {
		t.Fatal(err)
	}
	if err := OpenStaging(ctx, testReg, sp); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("a plan opened twice: %v", err)
	}
	other := resealed(t, sp, func(sp *ShardPlan) { sp.Force = true })
	if _, err := RunShard(ctx, testReg, other, 1, ShardOptions{}); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("shard of another plan of the same id: %v", err)
	}
	if _, err := AbortShards(ctx, testReg, other); !errors.Is(err, ErrPlanMismatch) {
		t.Fatalf("abort of another plan of the same id: %v", err)
	}
	// Committed: a shard is refused, and makes no staging area again.
	for i := 1; i <= 2; i++ {
		if _, err := RunShard(ctx, testReg, sp, i, ShardOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := RunShard(ctx, testReg, sp, 2, ShardOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("shard of a committed plan: %v", err)
	}
	gone("a shard of a committed plan")
	if res, err := AbortShards(ctx, testReg, sp); err != nil || res.Removed {
		t.Fatalf("abort of a committed plan whose staging is gone: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "_metadata")); err != nil {
		t.Fatalf("abort touched the destination: %v", err)
	}

	// Aborted: the staging area goes, plan first; again is no error.
	req.Destination = filepath.Join(t.TempDir(), "dst2")
	sp = planned(t, req, 2)
	if _, err := RunShard(ctx, testReg, sp, 1, ShardOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := AbortShards(ctx, testReg, sp); err != nil || !res.Removed {
		t.Fatalf("abort: %+v, %v", res, err)
	}
	gone("abort")
	if res, err := AbortShards(ctx, testReg, sp); err != nil || res.Removed {
		t.Fatalf("abort again: %+v, %v", res, err)
	}
	if _, err := RunShard(ctx, testReg, sp, 2, ShardOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("shard of an aborted plan: %v", err)
	}
	gone("a shard of an aborted plan")
	if _, err := os.Stat(req.Destination); !os.IsNotExist(err) {
		t.Fatalf("destination of an aborted plan: %v", err)
	}

	// Once its commit has begun, a plan is not aborted, and no shard runs.
	req.Destination = filepath.Join(t.TempDir(), "dst3")
	sp = planned(t, req, 2)
	if err := os.WriteFile(filepath.Join(sp.Staging, StagingCommitted), []byte(sp.ID), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AbortShards(ctx, testReg, sp); !errors.Is(err, ErrPlanClosed) || !strings.Contains(err.Error(), "run commit") {
		t.Fatalf("abort of a committing plan: %v", err)
	}
	if _, err := RunShard(ctx, testReg, sp, 1, ShardOptions{}); !errors.Is(err, ErrPlanClosed) {
		t.Fatalf("shard of a committing plan: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sp.Staging, StagingPlan)); err != nil {
		t.Fatalf("a refused abort removed the plan: %v", err)
	}
}

// contents is a snapshot's whole content as text, subtask by subtask in
// the order its reader gives: operators, their parallelism, key groups,
// every entry and every operator-state element.
func contents(ctx context.Context, loc string) (string, error) {
	r, err := testReg.Open(ctx, loc, snapshot.OpenOptions{})
	if err != nil {
		return "", err
	}
	defer r.Close()
	var b strings.Builder
	s := r.Snapshot()
	fmt.Fprintf(&b, "format %s\n", s.Format)
	for _, op := range s.Operators {
		fmt.Fprintf(&b, "operator %s/%s/%s p%d max%d keyed %d operator %d\n", op.ID, op.UID, op.Name, op.Parallelism, op.MaxParallelism, len(op.KeyedStates), len(op.OperatorStates))
		for _, sub := range op.Subtasks {
			fmt.Fprintf(&b, " subtask %d %v\n", sub.Index, sub.KeyGroups)
			for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&b, "  entry %d %s %x %x %x %x %d\n", e.KeyGroup, e.State, e.Key, e.Namespace, e.UserKey, e.Value, e.ExpiresAt)
			}
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&b, "  element %s %x\n", el.State, el.Value)
			}
		}
	}
	return b.String(), nil
}

// planEdit is one single-field edit of a plan's JSON: a leaf set to
// another value, or an array element removed.
type planEdit struct {
	path  string
	apply func(root any) any
}

// planEdits lists the edits of every leaf of v (at path) and of every
// element of its arrays; arrays longer than 24 have 24 of their
// elements, evenly spaced, taken.
func planEdits(v any, path string, set func(root, v any) any) []planEdit {
	var out []planEdit
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(mapKeys(x)) {
			out = append(out, planEdits(x[k], path+"."+k, func(root, nv any) any {
				return set(root, withKey(x, k, nv))
			})...)
		}
	case []any:
		idx := make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
		if len(x) > 24 {
			idx = idx[:0]
			for i := range 24 {
				idx = append(idx, i*(len(x)-1)/23)
			}
			idx = slices.Compact(idx)
		}
		for _, i := range idx {
			p := path + "[" + strconv.Itoa(i) + "]"
			out = append(out, planEdit{p + " removed", func(root any) any {
				return set(root, append(slices.Clone(x[:i]), x[i+1:]...))
			}})
			out = append(out, planEdits(x[i], p, func(root, nv any) any {
				c := slices.Clone(x)
				c[i] = nv
				return set(root, c)
			})...)
		}
	default:
		for _, nv := range otherValues(v) {
			out = append(out, planEdit{fmt.Sprintf("%s = %v", path, nv), func(root any) any { return set(root, nv) }})
		}
	}
	return out
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func withKey(m map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(m))
	for key, val := range m {
		c[key] = val
	}
	c[k] = v
	return c
}

// otherValues are the values a leaf is edited to.
func otherValues(v any) []any {
	switch x := v.(type) {
	case bool:
		return []any{!x}
	case float64:
		var out []any
		for _, n := range []float64{x + 1, x - 1, 0} {
			if n != x && !slices.Contains(out, any(n)) {
				out = append(out, n)
			}
		}
		return out
	case string:
		if x == "" {
			return []any{"x"}
		}
		return []any{"", x + "x"}
	}
	return nil
}

// TestEveryPlanFieldEdit edits every field of two real plans, one at a
// time (every leaf set to other values, every array element removed; see
// planEdits), and runs each edited plan through its shards and commit,
// twice: as edited, and sealed again after the edit, so that the shards'
// own checks are what is tried. An edit is refused before anything is
// written to the destination, or completes with the result of the plan
// as it was; none changes the result silently, none panics.
func TestEveryPlanFieldEdit(t *testing.T) {
	src := generated(t, 60, 3)
	// A Flink savepoint records no keyed figures: the shards take those
	// from the plan.
	savepoint := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-hashmap-canonical", "snapshot", "savepoint-58fe20-3983f452098d")
	for _, c := range []struct {
		name, src string
		change    redistribute.Request
		edits     []Edit
	}{
		// Split, union and broadcast state redistributed, new key-group
		// ranges, an operator given a new uid.
		{"rescale", src, redistribute.Request{Parallelism: 4}, []Edit{{Operator: "sink", UID: "printer"}}},
		{"max-parallelism", src, redistribute.Request{Parallelism: 2, MaxParallelism: 64}, nil},
		{"flink-rescale", savepoint, redistribute.Request{Parallelism: 3}, nil},
	} {
		t.Run(c.name, func(t *testing.T) { everyPlanFieldEdit(t, c.src, c.change, c.edits) })
	}
}

func everyPlanFieldEdit(t *testing.T, src string, change redistribute.Request, edits []Edit) {
	ctx := context.Background()
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst")
	sp, err := PlanShards(ctx, testReg, ShardRequest{Request: Request{Source: src, Destination: dst, Change: change, Edits: edits}, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	original, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := runPlan(ctx, sp); err != nil {
		t.Fatal(err)
	}
	want, err := contents(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	var root any
	if err := json.Unmarshal(original, &root); err != nil {
		t.Fatal(err)
	}
	all := planEdits(root, "", func(_, v any) any { return v })
	file := filepath.Join(dir, "plan.json")
	for _, sealed := range []bool{false, true} {
		counts := map[string]int{}
		for _, e := range all {
			data, err := json.MarshalIndent(e.apply(root), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if sealed {
				var c ShardPlan
				if err := json.Unmarshal(data, &c); err != nil {
					counts["refused: not a plan"]++
					continue
				}
				if err := c.Seal(); err != nil {
					t.Fatal(err)
				}
				if data, err = json.Marshal(&c); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{dst, sp.Staging, file} {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			outcome := tryPlan(ctx, file)
			counts[outcome]++
			switch {
			case !sealed && outcome != "refused: reading the plan":
				t.Errorf("%s: %s, want the edit refused by the plan's digest", e.path, outcome)
			case outcome == "panicked":
				t.Errorf("%s (sealed again: %v): a panic", e.path, sealed)
			case outcome == "completed":
				got, err := contents(ctx, dst)
				switch {
				case err != nil:
					t.Errorf("%s (sealed again: %v): completed, but the result does not read: %v", e.path, sealed, err)
					counts["silent wrong result"]++
				case got != want:
					t.Errorf("%s (sealed again: %v): completed with another result than the plan's", e.path, sealed)
					counts["silent wrong result"]++
				}
			default:
				if _, err := os.Stat(dst); !os.IsNotExist(err) {
					t.Errorf("%s (sealed again: %v): %s, but left the destination: %v", e.path, sealed, outcome, err)
				}
			}
		}
		t.Logf("%d single-field edits, sealed again: %v: %v", len(all), sealed, counts)
	}
}

// tryPlan reads the plan file, runs its shards and commits, and says where
// it stopped.
func tryPlan(ctx context.Context, file string) (outcome string) {
	defer func() {
		if recover() != nil {
			outcome = "panicked"
		}
	}()
	sp, err := ReadShardPlan(ctx, testReg, file)
	if err != nil {
		return "refused: reading the plan"
	}
	if err := OpenStaging(ctx, testReg, sp); err != nil {
		return "refused: opening the staging area"
	}
	for i := range sp.Shards {
		if _, err := RunShard(ctx, testReg, sp, i+1, ShardOptions{}); err != nil {
			return "refused: by a shard"
		}
	}
	if _, err := CommitShards(ctx, testReg, sp, CommitOptions{}); err != nil {
		return "refused: by the commit"
	}
	return "completed"
}
