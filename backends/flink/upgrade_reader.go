package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/kryo"
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
	cs := carriedSnapshotOf(src)
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
			if !p.rewritesValues {
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
		if !p.rewritesValues {
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
	c.KeyedStates = append([]snapshot.KeyedState(nil), op.KeyedStates...)
	c.OperatorStates = append([]snapshot.OperatorState(nil), op.OperatorStates...)
	for _, p := range u.plans[op] {
		if !p.rewritesValues {
			continue
		}
		if p.scope == snapshot.ScopeKeyed {
			if ks, ok := c.KeyedStateByName(p.name); ok {
				ks.ValueType = typeser.TypeOf(p.new)
				if p.newUK != nil {
					ks.UserKeyType = typeser.TypeOf(p.newUK)
				}
			}
		} else if os, ok := c.OperatorStateByName(p.name); ok {
			os.ElementType = typeser.TypeOf(p.new)
		}
	}
	return &c, nil
}

// rewriteSerializers puts the new snapshots into the state's carried
// meta info and finds its values' new serializers.
func (p *statePlan) rewriteSerializers() error {
	repl := map[*typeser.SerializerSnapshot][]byte{}
	for _, s := range p.kryo {
		b, why := kryo.Snapshot5(s)
		if why != "" {
			return fmt.Errorf("state %q: %s", p.name, why)
		}
		repl[s] = b
	}
	for _, f := range p.fields {
		repl[f.node] = f.snapshot()
	}
	for i, cser := range p.meta.Serializers {
		s := p.sm.Serializers[cser.Key]
		nv, err := rewritten(s, repl)
		if err != nil {
			return fmt.Errorf("state %q %s: %w", p.name, cser.Key, err)
		}
		raw := append(bytes.Clone(cser.Raw[:len(cser.Raw)-len(s.Versioned)]), nv...)
		if _, err := parseSerializerSnapshot(raw); err != nil {
			return fmt.Errorf("state %q %s: the new serializer snapshot does not read back: %w", p.name, cser.Key, err)
		}
		p.meta.Serializers[i].Raw = raw
	}
	sm, err := stateMetaOf(*p.meta)
	if err != nil {
		return err
	}
	for _, s := range sm.Serializers {
		typeser.MarkKryo5(s)
	}
	if p.scope == snapshot.ScopeKeyed {
		l := statefile.NewLayout(sm, p.keySer)
		p.new, p.newUK = l.User, l.UserKey
	} else {
		p.new = sm.Value()
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
					e.Value, err = p.rewrite(e.Value)
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
					el.Value, err = p.rewrite(el.Value)
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

// ErrRewriteMismatch reports a value whose rewritten bytes do not decode
// to what its old bytes held: nothing is written.
var ErrRewriteMismatch = fmt.Errorf("%w: a value rewritten for Flink 2.x does not read back as it was", snapshot.ErrCorrupt)

// rewrite writes one value again for Flink 2.x, and checks it: its new
// bytes, decoded, must be what its old bytes held.
func (p *statePlan) rewrite(b []byte) ([]byte, error) {
	v, err := decodeWith(p.old, b)
	if err != nil {
		return nil, fmt.Errorf("the value does not decode: %w", err)
	}
	nv, text, err := jsonOf(p.transform(p.old, v))
	if err != nil {
		return nil, err
	}
	out, err := typeser.EncodeAny(nil, p.new, nv, 0)
	if err != nil {
		return nil, fmt.Errorf("writing the value for Flink 2.x: %w", err)
	}
	back, err := decodeWith(p.new, out)
	if err != nil {
		return nil, fmt.Errorf("%w: its new bytes do not decode: %w", ErrRewriteMismatch, err)
	}
	_, backText, err := jsonOf(back)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(text, backText) {
		return nil, fmt.Errorf("%w: it held %s, its new bytes hold %s", ErrRewriteMismatch, text, backText)
	}
	return out, nil
}

// transform is v, a value of s, as the new serializers take it.
func (p *statePlan) transform(s *typeser.SerializerSnapshot, v any) any {
	if s == nil || v == nil || !p.touches(s) {
		return v
	}
	if p.nodes[s] {
		for _, f := range p.fields {
			if f.node == s {
				return f.convert(v)
			}
		}
		c, _ := kryo.Carried(v)
		return c
	}
	switch typeser.KindOf(s) {
	case "Pojo":
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, fv := range m {
			out[k] = fv
		}
		for i, n := range s.Nested {
			if i < len(s.Fields) {
				out[s.Fields[i]] = p.transform(n, m[s.Fields[i]])
			}
		}
		return out
	case "List", "Tuple":
		vs, _ := v.([]any)
		out := make([]any, len(vs))
		for i, e := range vs {
			n := s.Nested[0]
			if typeser.KindOf(s) == "Tuple" {
				n = s.Nested[i]
			}
			out[i] = p.transform(n, e)
		}
		return out
	case "Nullable":
		return p.transform(s.Nested[0], v)
	}
	return v
}

// convert is a value of the field as its new serializer takes it: the
// elements without the class tags Kryo's JSON gives them.
func (f *collField) convert(v any) any {
	if v == nil {
		return nil
	}
	plain := func(e any) any {
		_, p := kryo.ElementClass(e)
		return p
	}
	if f.kind == "Map" {
		keys, vals, _ := kryo.Entries(v)
		out := make(map[string]any, len(keys))
		for i, k := range keys {
			text, ok := plain(k).(string)
			if !ok {
				b, _ := json.Marshal(plain(k))
				text = string(b)
			}
			out[text] = plain(vals[i])
		}
		return out
	}
	elems, _ := kryo.Elements(v)
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = plain(e)
	}
	return out
}
