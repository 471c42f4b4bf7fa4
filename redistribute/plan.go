package redistribute

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the Plan JSON document.
const SchemaVersion = 1

// Request says what to change. Zero values keep what the snapshot has.
type Request struct {
	// Parallelism is the new parallelism of every operator not named in
	// Operators; 0 keeps each operator's own.
	Parallelism int
	// Operators sets the parallelism of single operators, by uid, id or name.
	Operators map[string]int
	// MaxParallelism is the new max parallelism of every operator; 0 keeps it.
	MaxParallelism int
	// Codecs hash keys when max parallelism changes.
	Codecs *snapshot.Codecs
	// EstimateRehash plans a max-parallelism change from the key groups'
	// figures (see estimateRehash) instead of hashing every key: a plan
	// for shards, which must not read the whole snapshot on one machine.
	EstimateRehash bool
	// EstimateStored plans a max-parallelism change from the key-group
	// sizes a snapshot.KeyGroupSizer records, without reading state, where
	// it records them: for a writer that re-hashes the stored pairs, whose
	// counts then replace the estimates (OperatorPlan.Counted).
	EstimateStored bool
}

// Target is where one operator goes.
type Target struct {
	Parallelism    int `json:"parallelism"`
	MaxParallelism int `json:"max_parallelism"`
}

// Actions an operator plan can take.
const (
	ActionKeep    = "keep"    // same parallelism and max parallelism: copied as is
	ActionRescale = "rescale" // new parallelism: key groups regrouped, operator state redistributed
	ActionRehash  = "rehash"  // new max parallelism: every key hashed to its new key group
)

// Plan is what a rescale will do, operator by operator.
type Plan struct {
	SchemaVersion int `json:"schema_version"`
	// Source and Destination are for reports; NewPlan leaves them empty.
	Source      string         `json:"source,omitempty"`
	Destination string         `json:"destination,omitempty"`
	DryRun      bool           `json:"dry_run"`
	Operators   []OperatorPlan `json:"operators"`
}

// OperatorPlan is one operator's part of a Plan.
type OperatorPlan struct {
	ID               string              `json:"id"`
	UID              string              `json:"uid"`
	Name             string              `json:"name"`
	Action           string              `json:"action"`
	Old              Target              `json:"old"`
	New              Target              `json:"new"`
	Subtasks         []SubtaskPlan       `json:"subtasks"`
	OperatorStates   []OperatorStatePlan `json:"operator_states"`
	KeyedEntries     int64               `json:"keyed_entries"`
	KeyedBytes       int64               `json:"keyed_bytes"`
	KeyedSkew        float64             `json:"keyed_skew"`
	OperatorElements int64               `json:"operator_elements"`
	HasRawState      bool                `json:"has_raw_state"`
	// Estimated is set when the keyed figures of a max-parallelism change
	// are estimates (Request.EstimateRehash), not counts.
	Estimated bool `json:"estimated,omitempty"`
	// Note says why the operator is not where the request put the others.
	Note string `json:"note,omitempty"`
}

// Label is how tools name the operator: its uid, else its name, else its id.
func (p *OperatorPlan) Label() string {
	return (&snapshot.Operator{ID: p.ID, UID: p.UID, Name: p.Name}).Label()
}

// SubtaskPlan is what one new subtask will hold.
type SubtaskPlan struct {
	Index     int            `json:"index"`
	KeyGroups keygroup.Range `json:"key_groups"`
	// Sources are the old subtasks whose keyed state feeds this one.
	Sources      []int `json:"sources"`
	KeyedEntries int64 `json:"keyed_entries"`
	KeyedBytes   int64 `json:"keyed_bytes"`
	// OperatorElements is exact; OperatorBytes is estimated from each old
	// subtask's average element size when the format does not record it
	// per state.
	OperatorElements int64 `json:"operator_elements"`
	OperatorBytes    int64 `json:"operator_bytes"`
	RawBytes         int64 `json:"raw_bytes"`
}

// Bytes is all the state the subtask will hold.
func (s SubtaskPlan) Bytes() int64 { return s.KeyedBytes + s.OperatorBytes + s.RawBytes }

// OperatorStatePlan is how one operator state's elements are dealt out.
type OperatorStatePlan struct {
	Name     string        `json:"name"`
	Mode     snapshot.Mode `json:"mode"`
	Elements int64         `json:"elements"`
	// Assignment lists, per new subtask, the pieces of old lists it
	// stores (see StoredOperatorState: union state is stored once and
	// restored by every subtask in full).
	Assignment [][]Piece `json:"assignment"`
}

// pinnedNote says why an operator of max parallelism 1 stays where it is.
const pinnedNote = "max parallelism 1: Flink keeps this operator at parallelism 1 whatever the job's"

// pinned reports an operator the job pins to one subtask with a max
// parallelism of 1 (the planner's global aggregates, sorts and limits).
// Flink keeps it at parallelism 1, and its max parallelism at 1, when the
// job's change; a savepoint with it elsewhere does not restore.
func pinned(op *snapshot.Operator) bool { return op.MaxParallelism == 1 }

// Targets resolves a request against a snapshot: the target of every
// operator, in snapshot order. Operators pinned to one subtask stay so. It
// refuses unknown operators, impossible parallelisms, and a pinned
// operator named at another parallelism.
func Targets(s *snapshot.Snapshot, req Request) ([]Target, error) {
	out := make([]Target, len(s.Operators))
	named := make(map[*snapshot.Operator]int, len(req.Operators))
	for _, label := range slices.Sorted(maps.Keys(req.Operators)) {
		op, ok := s.Operator(label)
		if !ok {
			return nil, fmt.Errorf("%w: no operator %q in the snapshot (operators: %s)", snapshot.ErrNotFound, label, labels(s))
		}
		named[op] = req.Operators[label]
	}
	for i, op := range s.Operators {
		t := Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
		if req.Parallelism != 0 && !pinned(op) {
			t.Parallelism = req.Parallelism
		}
		if p, ok := named[op]; ok {
			if pinned(op) && p != 1 {
				return nil, fmt.Errorf("%w: operator %q has max parallelism 1: the job pins it to one subtask, and Flink restores it at parallelism 1 only", keygroup.ErrInvalidParallelism, op.Label())
			}
			t.Parallelism = p
		}
		if req.MaxParallelism != 0 && !pinned(op) {
			t.MaxParallelism = req.MaxParallelism
		}
		if err := keygroup.Check(t.Parallelism, t.MaxParallelism); err != nil {
			return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
		}
		out[i] = t
	}
	return out, nil
}

func labels(s *snapshot.Snapshot) string {
	var out []string
	for _, op := range s.Operators {
		out = append(out, op.Label())
	}
	return strings.Join(out, ", ")
}

// NewPlan computes the plan of a request from the snapshot's metadata,
// reading state only where the format records no figures, or where max
// parallelism changes (each key must then be hashed to find its new key
// group).
func NewPlan(ctx context.Context, r snapshot.Reader, req Request) (*Plan, error) {
	s := r.Snapshot()
	targets, err := Targets(s, req)
	if err != nil {
		return nil, err
	}
	p := &Plan{SchemaVersion: SchemaVersion, Operators: []OperatorPlan{}}
	for i, op := range s.Operators {
		opPlan, err := planOperator(ctx, r, op, targets[i], req)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
		}
		p.Operators = append(p.Operators, *opPlan)
	}
	return p, nil
}

func planOperator(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, t Target, req Request) (*OperatorPlan, error) {
	old := Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
	if len(op.Subtasks) != op.Parallelism {
		return nil, snapshot.Corrupt(op.Label(), -1, "parallelism %d but %d subtasks", op.Parallelism, len(op.Subtasks))
	}
	p := &OperatorPlan{ID: op.ID, UID: op.UID, Name: op.Name, Old: old, New: t, Action: action(old, t)}
	if pinned(op) && (req.Parallelism > 1 || req.MaxParallelism > 1) {
		p.Note = pinnedNote
	}
	p.Subtasks = make([]SubtaskPlan, t.Parallelism)
	for j := range p.Subtasks {
		p.Subtasks[j] = SubtaskPlan{Index: j, KeyGroups: keygroup.RangeOf(t.MaxParallelism, t.Parallelism, j), Sources: []int{}}
	}
	if err := planRaw(p, op); err != nil {
		return nil, err
	}
	var err error
	switch {
	case t.MaxParallelism == old.MaxParallelism:
		err = planKeyed(ctx, r, op, p)
	case req.EstimateRehash:
		err = estimateRehash(ctx, r, op, p, req.Codecs, nil)
	case req.EstimateStored && storedSizes(ctx, r, op, t):
		err = estimateRehash(ctx, r, op, p, req.Codecs, r.(snapshot.KeyGroupSizer))
	default:
		err = planRehash(ctx, r, op, p, req.Codecs)
	}
	if err != nil {
		return nil, err
	}
	if err := planOperatorState(ctx, r, op, p); err != nil {
		return nil, err
	}
	p.total()
	return p, nil
}

// total sums the subtasks' figures into the operator's.
func (p *OperatorPlan) total() {
	p.KeyedEntries, p.KeyedBytes, p.OperatorElements = 0, 0, 0
	bytes := make([]int64, len(p.Subtasks))
	for j, sp := range p.Subtasks {
		p.KeyedEntries += sp.KeyedEntries
		p.KeyedBytes += sp.KeyedBytes
		p.OperatorElements += sp.OperatorElements
		bytes[j] = sp.KeyedBytes
	}
	p.KeyedSkew = snapshot.Skew(bytes)
}

// Counted replaces estimated keyed figures (Estimated) with what the new
// subtasks were found to hold once written: counts[j] of subtask j.
func (p *OperatorPlan) Counted(counts []snapshot.Stats) {
	for j, c := range counts {
		p.Subtasks[j].KeyedEntries, p.Subtasks[j].KeyedBytes = c.Entries, c.Bytes
	}
	p.Estimated = false
	p.total()
}

func action(old, t Target) string {
	switch {
	case old.MaxParallelism != t.MaxParallelism:
		return ActionRehash
	case old.Parallelism != t.Parallelism:
		return ActionRescale
	}
	return ActionKeep
}

// planRaw refuses to move raw state, which only its operator can split:
// raw operator state stays with its subtask while the parallelism does,
// raw keyed state while the key groups do too.
func planRaw(p *OperatorPlan, op *snapshot.Operator) error {
	rawKeyed := false
	for _, sub := range op.Subtasks {
		if sub.RawKeyedBytes+sub.RawOperatorBytes > 0 {
			p.HasRawState = true
		}
		rawKeyed = rawKeyed || sub.RawKeyedBytes > 0
	}
	if !p.HasRawState {
		return nil
	}
	if p.New.MaxParallelism != p.Old.MaxParallelism && rawKeyed {
		return fmt.Errorf("%w: it has raw (user-serialized) state, which only its operator can split into other key groups; keep max parallelism %d, or remove the operator",
			ErrNotRedistributable, p.Old.MaxParallelism)
	}
	if p.New.Parallelism != p.Old.Parallelism {
		return fmt.Errorf("%w: it has raw (user-serialized) state, which only its operator can split; keep its parallelism (--operator %s=%d)",
			ErrNotRedistributable, op.Label(), op.Parallelism)
	}
	for j, sub := range op.Subtasks {
		p.Subtasks[j].RawBytes = sub.RawKeyedBytes + sub.RawOperatorBytes
	}
	return nil
}

// planKeyed sums the old key groups' figures into the new subtasks.
func planKeyed(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, p *OperatorPlan) error {
	for _, sub := range op.Subtasks {
		for j := range p.Subtasks {
			if p.Subtasks[j].KeyGroups.Intersect(sub.KeyGroups).Len() > 0 {
				p.Subtasks[j].Sources = append(p.Subtasks[j].Sources, sub.Index)
			}
		}
		if len(op.KeyedStates) == 0 {
			continue
		}
		stats, err := snapshot.KeyGroupStats(ctx, r, op, sub)
		if err != nil {
			return fmt.Errorf("subtask %d: %w", sub.Index, err)
		}
		for _, g := range stats {
			j := keygroup.SubtaskOf(g.KeyGroup, p.New.MaxParallelism, p.New.Parallelism)
			p.Subtasks[j].KeyedEntries += g.Entries
			p.Subtasks[j].KeyedBytes += g.Bytes
		}
	}
	return nil
}

// planRehash hashes every key to its new key group.
func planRehash(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, p *OperatorPlan, codecs *snapshot.Codecs) error {
	if err := checkHashable(op, codecs); err != nil {
		return err
	}
	for _, sub := range op.Subtasks {
		fed := make([]bool, len(p.Subtasks))
		if rs, ok := r.(snapshot.RehashStater); ok && len(op.KeyedStates) > 0 {
			stats, ok, err := rs.RehashedStats(ctx, op, sub.Index, p.New.MaxParallelism, codecs)
			if err != nil {
				return fmt.Errorf("subtask %d: %w", sub.Index, err)
			}
			if ok {
				for _, g := range stats {
					j := keygroup.SubtaskOf(g.KeyGroup, p.New.MaxParallelism, p.New.Parallelism)
					fed[j] = true
					p.Subtasks[j].KeyedEntries += g.Entries
					p.Subtasks[j].KeyedBytes += g.Bytes
				}
				for j, ok := range fed {
					if ok {
						p.Subtasks[j].Sources = append(p.Subtasks[j].Sources, sub.Index)
					}
				}
				continue
			}
		}
		err := rehashed(ctx, r, op, sub, p.New, codecs, func(e *snapshot.Entry) error {
			j := keygroup.SubtaskOf(e.KeyGroup, p.New.MaxParallelism, p.New.Parallelism)
			fed[j] = true
			p.Subtasks[j].KeyedEntries++
			p.Subtasks[j].KeyedBytes += e.Size()
			return nil
		})
		if err != nil {
			return err
		}
		for j, ok := range fed {
			if ok {
				p.Subtasks[j].Sources = append(p.Subtasks[j].Sources, sub.Index)
			}
		}
	}
	return nil
}

// checkHashable refuses keyed states whose key type has no known hash.
func checkHashable(op *snapshot.Operator, codecs *snapshot.Codecs) error {
	for _, st := range op.KeyedStates {
		if err := codecs.Hashable(st.KeyType); err != nil {
			return fmt.Errorf("%w: keyed state %q has key type %s, whose Java hashCode stateutil does not know, so its keys cannot be moved to new key groups (%w)",
				ErrNotRedistributable, st.Name, st.KeyType, err)
		}
	}
	return nil
}

// rehashed streams an old subtask's entries with their key group
// recomputed for target's max parallelism.
func rehashed(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, sub *snapshot.Subtask, t Target, codecs *snapshot.Codecs, fn func(*snapshot.Entry) error) error {
	return rehashedIn(ctx, r, op, sub, sub.KeyGroups, t, codecs, fn)
}

// rehashedIn is rehashed for the old subtask's key groups in kgs only.
func rehashedIn(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, sub *snapshot.Subtask, kgs keygroup.Range, t Target, codecs *snapshot.Codecs, fn func(*snapshot.Entry) error) error {
	types := make(map[string]snapshot.Type, len(op.KeyedStates))
	for _, st := range op.KeyedStates {
		types[st.Name] = st.KeyType
	}
	for e, err := range r.Entries(ctx, op, sub.Index, kgs) {
		if err != nil {
			return fmt.Errorf("subtask %d: %w", sub.Index, err)
		}
		kt, ok := types[e.State]
		if !ok {
			return snapshot.Corrupt(op.Label(), -1, "subtask %d has an entry of undeclared keyed state %q", sub.Index, e.State)
		}
		kg, err := codecs.KeyGroupOf(kt, e.Key, t.MaxParallelism)
		if err != nil {
			return fmt.Errorf("subtask %d: keyed state %q: cannot hash key 0x%x: %w", sub.Index, e.State, e.Key, err)
		}
		e.KeyGroup = kg
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

// planOperatorState assigns every operator state's elements.
func planOperatorState(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, p *OperatorPlan) error {
	counts, avg, err := elementCounts(ctx, r, op)
	if err != nil {
		return err
	}
	pieces := StoredOperatorState(op.OperatorStates, counts, p.Old.Parallelism, p.New.Parallelism)
	p.OperatorStates = []OperatorStatePlan{}
	for s, st := range op.OperatorStates {
		sp := OperatorStatePlan{Name: st.Name, Mode: st.Mode, Assignment: make([][]Piece, p.New.Parallelism)}
		for _, n := range counts[s] {
			sp.Elements += n
		}
		for j := range pieces {
			sp.Assignment[j] = nonNil(pieces[j][s])
			for _, pc := range pieces[j][s] {
				p.Subtasks[j].OperatorElements += pc.Count
				p.Subtasks[j].OperatorBytes += pc.Count * avg[pc.OldSubtask]
			}
		}
		p.OperatorStates = append(p.OperatorStates, sp)
	}
	return nil
}

// elementCounts is, per operator state and old subtask, the number of
// elements (from the metadata where recorded), and per old subtask the
// average element size.
func elementCounts(ctx context.Context, r snapshot.Reader, op *snapshot.Operator) ([][]int64, []int64, error) {
	counts := make([][]int64, len(op.OperatorStates))
	for s := range counts {
		counts[s] = make([]int64, len(op.Subtasks))
	}
	avg := make([]int64, len(op.Subtasks))
	if len(op.OperatorStates) == 0 {
		return counts, avg, nil
	}
	index := make(map[string]int, len(op.OperatorStates))
	for s, st := range op.OperatorStates {
		index[st.Name] = s
	}
	for i, sub := range op.Subtasks {
		total, bytes := sub.Operator.Entries, sub.Operator.Bytes
		if sub.OperatorElements != nil || (sub.Operator.Known && sub.Operator.Entries == 0) {
			for name, n := range sub.OperatorElements {
				if s, ok := index[name]; ok {
					counts[s][i] = n
				}
			}
		} else {
			total, bytes = 0, 0
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return nil, nil, fmt.Errorf("subtask %d: %w", sub.Index, err)
				}
				if s, ok := index[el.State]; ok {
					counts[s][i]++
				}
				total++
				bytes += int64(len(el.Value))
			}
		}
		if total > 0 {
			avg[i] = bytes / total
		}
	}
	return counts, avg, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
