package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// rebuild checks sp against the source *r and returns sp's plan for it:
// the source must be the one planned (its fingerprint), and the plan file
// must hold exactly what planning sp's request on the source gives (the
// same planner, PlanShards's derive): every operator's targets, new
// subtasks, key groups and sources, where every operator-state element
// goes, the edits' outcome, the staging area and every new subtask dealt
// to one shard. What a shard can only count by reading the source's keyed
// state, where its metadata records no figures, is taken from the file:
// the keyed entries and bytes, and the old subtasks feeding a new one
// across a max-parallelism change. Those steer no byte of the copy. *r is
// replaced by the view the copy reads (without unreadable state, without
// expired entries) as the plan asks.
func rebuild(ctx context.Context, reg *snapshot.Registry, sp *ShardPlan, r *snapshot.Reader) (*Plan, *snapshot.Format, error) {
	fp, err := Fingerprint((*r).Snapshot())
	if err != nil {
		return nil, nil, err
	}
	if fp != sp.SourceFingerprint {
		return nil, nil, fmt.Errorf("%w: the source %s changed since it was planned (metadata %s, the plan has %s); plan again", ErrPlanMismatch, sp.Source, fp, sp.SourceFingerprint)
	}
	want := *sp
	unread := &keyedUnread{Reader: *r, ops: map[*snapshot.Operator]bool{}}
	plan, err := want.derive(ctx, reg, unread, len(sp.Shards))
	if err != nil {
		return nil, nil, err
	}
	if len(plan.Operators) == len(sp.Plan.Operators) {
		for i, op := range (*r).Snapshot().Operators {
			if unread.ops[op] {
				takeKeyedFigures(&plan.Operators[i], &sp.Plan.Operators[i])
			}
		}
		want.Shards = assign(plan, len(sp.Shards))
	}
	if err := samePlan(sp, &want); err != nil {
		return nil, nil, err
	}
	if *r, _, err = sp.readable(reg, *r); err != nil {
		return nil, nil, err
	}
	f, err := reg.Writable(sp.Format)
	if err != nil {
		return nil, nil, err
	}
	return plan, f, nil
}

// keyedUnread is a source whose keyed state reads as empty: a shard plans
// from the metadata alone. ops records the operators whose keyed state
// the planner asked for, those whose metadata records no figures.
type keyedUnread struct {
	snapshot.Reader
	ops map[*snapshot.Operator]bool
}

func (k *keyedUnread) Entries(_ context.Context, op *snapshot.Operator, _ int, _ keygroup.Range) snapshot.Entries {
	k.ops[op] = true
	return func(func(snapshot.Entry, error) bool) {}
}

// takeKeyedFigures sets the keyed figures of got (planned from the
// metadata alone) to file's, where they have the same subtasks, and
// across a max-parallelism change also the old subtasks feeding each.
func takeKeyedFigures(got, file *redistribute.OperatorPlan) {
	if len(got.Subtasks) != len(file.Subtasks) {
		return
	}
	got.KeyedEntries, got.KeyedBytes, got.KeyedSkew = file.KeyedEntries, file.KeyedBytes, file.KeyedSkew
	for j := range got.Subtasks {
		g, f := &got.Subtasks[j], &file.Subtasks[j]
		g.KeyedEntries, g.KeyedBytes = f.KeyedEntries, f.KeyedBytes
		if got.New.MaxParallelism != got.Old.MaxParallelism {
			g.Sources = slices.Clone(f.Sources)
		}
	}
}

// samePlan refuses a plan file (got) that differs from what its request
// gives (want), naming the first field that differs as a path into the
// file.
func samePlan(got, want *ShardPlan) error {
	a, err := asJSON(got)
	if err != nil {
		return err
	}
	b, err := asJSON(want)
	if err != nil {
		return err
	}
	if where, ok := firstDiff(a, b, ""); !ok {
		return fmt.Errorf("%w: plan %s: %s is %s in the plan file, but planning its request on the source %s gives %s; plan again",
			ErrPlanMismatch, got.ID, where.path, where.got, got.Source, where.want)
	}
	return nil
}

func asJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

type difference struct{ path, got, want string }

// firstDiff compares two decoded JSON values; where they differ it
// returns the first place, in field-name and index order.
func firstDiff(got, want any, at string) (difference, bool) {
	switch g := got.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			break
		}
		keys := maps.Clone(g)
		maps.Copy(keys, w)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if d, ok := firstDiff(g[k], w[k], join(at, k)); !ok {
				return d, false
			}
		}
		return difference{}, true
	case []any:
		w, ok := want.([]any)
		if !ok {
			break
		}
		if len(w) != len(g) {
			return difference{at, fmt.Sprintf("a list of %d", len(g)), fmt.Sprintf("a list of %d", len(w))}, false
		}
		for i := range g {
			if d, ok := firstDiff(g[i], w[i], at+"["+strconv.Itoa(i)+"]"); !ok {
				return d, false
			}
		}
		return difference{}, true
	}
	if reflect.DeepEqual(got, want) {
		return difference{}, true
	}
	return difference{at, brief(got), brief(want)}, false
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// brief renders a decoded JSON value for a message, cut short.
func brief(v any) string {
	if v == nil {
		return "absent"
	}
	data, _ := json.Marshal(v)
	if len(data) > 80 {
		return string(data[:77]) + "..."
	}
	return string(data)
}
