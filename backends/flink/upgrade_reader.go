package flink

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// upgradedReader is the source as Flink 2.x reads it: the operators carry
// the new serializer snapshots, the snapshot the metadata version of the
// release asked for, and the values of the states whose values change
// are rewritten as they are read, each checked against its old value.
type upgradedReader struct {
	snapshot.Reader
	snap  *snapshot.Snapshot
	old   map[*snapshot.Operator]*snapshot.Operator // by the new operator
	keyed map[*snapshot.Operator]map[string]*statePlan
	oper  map[*snapshot.Operator]map[string]*statePlan
}

func (u *upgrader) reader() (*upgradedReader, error) {
	src := u.r.Snapshot()
	ur := &upgradedReader{Reader: u.r, old: map[*snapshot.Operator]*snapshot.Operator{},
		keyed: map[*snapshot.Operator]map[string]*statePlan{}, oper: map[*snapshot.Operator]map[string]*statePlan{}}
	s := *src
	cs := carried.SnapshotOf(src)
	cs.MetadataVersion = u.to.Metadata
	var err error
	if s.Carried, err = json.Marshal(cs); err != nil {
		return nil, err
	}
	s.Operators = make([]*snapshot.Operator, len(src.Operators))
	for i, op := range src.Operators {
		nop, err := u.operatorFor2(op)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
		}
		s.Operators[i], ur.old[nop] = nop, op
		for _, p := range u.plans[op] {
			if !p.RewritesValues() {
				continue
			}
			m := ur.keyed
			if p.scope == snapshot.ScopeOperator {
				m = ur.oper
			}
			if m[op] == nil {
				m[op] = map[string]*statePlan{}
			}
			m[op][p.name] = p
		}
	}
	ur.snap = &s
	return ur, nil
}

// operatorFor2 is op with the new serializer snapshots in what it
// carries and in its states' types.
func (u *upgrader) operatorFor2(op *snapshot.Operator) (*snapshot.Operator, error) {
	c := *op
	co := u.cos[op]
	changed := false
	for _, p := range u.plans[op] {
		if !p.RewritesValues() {
			continue
		}
		changed = true
		if err := p.rewriteSerializers(); err != nil {
			return nil, err
		}
	}
	if !changed {
		return &c, nil
	}
	var err error
	if c.Carried, err = json.Marshal(co); err != nil {
		return nil, err
	}
	c.Subtasks = make([]*snapshot.Subtask, len(op.Subtasks))
	for i, sub := range op.Subtasks {
		c.Subtasks[i] = sub
		if stats, ok := u.stats[sub]; ok && sub.KeyGroupStats == nil {
			sc := *sub
			sc.KeyGroupStats, sc.Keyed = stats, snapshot.Stats{Known: true}
			for _, g := range stats {
				sc.Keyed.Entries, sc.Keyed.Bytes = sc.Keyed.Entries+g.Entries, sc.Keyed.Bytes+g.Bytes
			}
			c.Subtasks[i] = &sc
		}
	}
	c.KeyedStates = append([]snapshot.KeyedState(nil), op.KeyedStates...)
	c.OperatorStates = append([]snapshot.OperatorState(nil), op.OperatorStates...)
	for _, p := range u.plans[op] {
		if !p.RewritesValues() {
			continue
		}
		if p.scope == snapshot.ScopeKeyed {
			if ks, ok := c.KeyedStateByName(p.name); ok {
				ks.ValueType = typeser.TypeOf(p.NewValue())
				if uk := p.NewUserKey(); uk != nil {
					ks.UserKeyType = typeser.TypeOf(uk)
				}
			}
		} else if os, ok := c.OperatorStateByName(p.name); ok {
			os.ElementType = typeser.TypeOf(p.NewValue())
		}
	}
	return &c, nil
}

// rewriteSerializers puts the new snapshots into the state's carried
// meta info.
func (p *statePlan) rewriteSerializers() error {
	raws := make([][]byte, len(p.meta.Serializers))
	for i, s := range p.meta.Serializers {
		raws[i] = s.Raw
	}
	out, err := p.NewSerializers(raws)
	if err != nil {
		return err
	}
	for i := range p.meta.Serializers {
		p.meta.Serializers[i].Raw = out[i]
	}
	return nil
}

// Snapshot is the metadata as Flink 2.x reads it.
func (ur *upgradedReader) Snapshot() *snapshot.Snapshot { return ur.snap }

// Entries are the source's, with the values of changing states rewritten.
func (ur *upgradedReader) Entries(ctx context.Context, op *snapshot.Operator, subtask int, kgs keygroup.Range) snapshot.Entries {
	old := ur.old[op]
	if old == nil {
		return snapshot.FailedEntries(fmt.Errorf("operator %q is not one of the upgraded snapshot", op.Label()))
	}
	plans := ur.keyed[old]
	entries := ur.Reader.Entries(ctx, old, subtask, kgs)
	if len(plans) == 0 {
		return entries
	}
	return func(yield func(snapshot.Entry, error) bool) {
		for e, err := range entries {
			if err == nil {
				if p := plans[e.State]; p != nil {
					e.Value, err = p.Rewrite(e.Value)
					if err != nil {
						err = fmt.Errorf("operator %q subtask %d keyed state %q, key group %d: %w", op.Label(), subtask, e.State, e.KeyGroup, err)
					}
				}
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Elements are the source's, with the values of changing states
// rewritten.
func (ur *upgradedReader) Elements(ctx context.Context, op *snapshot.Operator, subtask int) snapshot.Elements {
	old := ur.old[op]
	if old == nil {
		return snapshot.FailedElements(fmt.Errorf("operator %q is not one of the upgraded snapshot", op.Label()))
	}
	plans := ur.oper[old]
	elems := ur.Reader.Elements(ctx, old, subtask)
	if len(plans) == 0 {
		return elems
	}
	return func(yield func(snapshot.Element, error) bool) {
		for el, err := range elems {
			if err == nil {
				if p := plans[el.State]; p != nil {
					el.Value, err = p.Rewrite(el.Value)
					if err != nil {
						err = fmt.Errorf("operator %q subtask %d operator state %q: %w", op.Label(), subtask, el.State, err)
					}
				}
			}
			if !yield(el, err) || err != nil {
				return
			}
		}
	}
}

// Raw is the source's.
func (ur *upgradedReader) Raw(ctx context.Context, op *snapshot.Operator, subtask int) (snapshot.RawState, error) {
	old := ur.old[op]
	if old == nil {
		return snapshot.RawState{}, fmt.Errorf("operator %q is not one of the upgraded snapshot", op.Label())
	}
	return ur.Reader.Raw(ctx, old, subtask)
}
