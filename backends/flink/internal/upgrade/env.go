// Package upgrade is what carrying one state of a Flink 1.x snapshot to
// Flink 2.x takes: which of its serializers change (Kryo's, and the POJO
// collection fields that Flink 2.x no longer gives to Kryo), the
// serializer snapshots Flink 2.x writes in their place, and each value
// written again and checked against its old one. The flink format
// (backends/flink/upgrade.go) plans every state with it and rewrites the
// values as the copy reads them.
package upgrade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
)

// Env is what the flink format gives the upgrade: the Kryo family's part
// (only the format imports the serializer families), which serializer
// snapshot classes Flink 2.x restores from Flink 1.x, and how the bytes of
// a serializer snapshot parse.
type Env struct {
	// Snapshot5 is the Kryo snapshot Flink 2.x writes for a Flink 1.x one,
	// or why it cannot be carried.
	Snapshot5 func(s *typeser.SerializerSnapshot) ([]byte, string)
	// Carried is a decoded Kryo 2 value as Kryo 5's encoder takes it, or
	// why it cannot be carried.
	Carried func(v any) (any, string)
	// ElementClass, Elements and Entries take decoded Kryo values apart.
	ElementClass func(v any) (class string, plain any)
	Elements     func(v any) ([]any, bool)
	Entries      func(v any) (keys, vals []any, ok bool)
	// Known is the snapshot version of a serializer snapshot class that
	// restores across Flink's major versions as it is.
	Known func(class string) (version int32, ok bool)
	// Parse reads a serializer snapshot's stored bytes.
	Parse func(raw []byte) (*typeser.SerializerSnapshot, error)
}

// Plan finds what changes in the serializers of the state sm describes
// (keySer: its operator's key serializer, nil for operator state).
func (e *Env) Plan(sm *statefile.StateMeta, keySer *typeser.SerializerSnapshot, keyed bool) *State {
	p := &State{env: e, name: sm.Name, sm: sm, keySer: keySer, keyed: keyed, nodes: map[*typeser.SerializerSnapshot]bool{}}
	if keySer != nil && sm.Type != statefile.PriorityQueueState {
		p.walkFixed(keySer, "its keys")
	}
	for _, key := range sm.SerializerKeys {
		s := sm.Serializers[key]
		if key == "NAMESPACE_SERIALIZER" || sm.Type == statefile.PriorityQueueState {
			p.walkFixed(s, "its "+lower(key)+"s")
			continue
		}
		p.walk(s, nil)
	}
	if len(p.blocked) > 0 || len(p.nodes) == 0 {
		return p
	}
	p.rewritesValues = true
	if keyed {
		l := statefile.NewLayout(sm, keySer)
		p.old, p.oldUK = l.User, l.UserKey
		if p.oldUK != nil && p.touches(p.oldUK) {
			p.Block("its map keys are of a serializer whose bytes change (Kryo), and stateutil does not rewrite keys")
		}
	} else {
		p.old = sm.Value()
		if sm.Type == statefile.BroadcastMapState {
			p.Block("it is a broadcast state of a serializer whose bytes change (Kryo), which stateutil does not rewrite")
		}
	}
	if p.old == nil {
		p.Block("stateutil cannot tell where its values' serializer lies in its snapshot")
	}
	return p
}

// Blocked is why the state cannot be carried, "" when it can: what its
// values or serializers hold that blocks it, then the serializers stateutil
// has not seen restore across the majors.
func (p *State) Blocked() string {
	return strings.Join(append(slices.Clone(p.blocked), p.unverified...), "; ")
}

// Scans reports whether the state's values must be read to decide: its
// serializers change, and nothing found in them blocks it yet.
func (p *State) Scans() bool { return p.rewritesValues && len(p.blocked) == 0 }

// RewritesValues reports whether the state's values change, and nothing
// blocks it.
func (p *State) RewritesValues() bool { return p.Scans() && len(p.unverified) == 0 }

// NewValue and NewUserKey are the serializers of the state's values
// (list elements, map values) and map keys after NewSerializers.
func (p *State) NewValue() *typeser.SerializerSnapshot   { return p.new }
func (p *State) NewUserKey() *typeser.SerializerSnapshot { return p.newUK }

// NewSerializers are the state's serializer snapshots as Flink 2.x writes
// them, stored bytes (proxy version and all) in the order of the state's
// serializer keys, given the old ones (raws); NewValue and NewUserKey
// give their values' serializers after it.
func (p *State) NewSerializers(raws [][]byte) ([][]byte, error) {
	repl := map[*typeser.SerializerSnapshot][]byte{}
	for _, s := range p.kryo {
		b, why := p.env.Snapshot5(s)
		if why != "" {
			return nil, fmt.Errorf("state %q: %s", p.name, why)
		}
		repl[s] = b
	}
	for _, f := range p.fields {
		repl[f.node] = f.snapshot()
	}
	if len(raws) != len(p.sm.SerializerKeys) {
		return nil, fmt.Errorf("state %q: %d serializer snapshots, %d read", p.name, len(raws), len(p.sm.SerializerKeys))
	}
	sm := &statefile.StateMeta{Name: p.sm.Name, Type: p.sm.Type, Options: p.sm.Options, SerializerKeys: p.sm.SerializerKeys,
		Serializers: map[string]*typeser.SerializerSnapshot{}}
	out := make([][]byte, len(raws))
	for i, key := range p.sm.SerializerKeys {
		s := p.sm.Serializers[key]
		nv, err := rewritten(s, repl)
		if err != nil {
			return nil, fmt.Errorf("state %q %s: %w", p.name, key, err)
		}
		out[i] = append(append([]byte(nil), raws[i][:len(raws[i])-len(s.Versioned)]...), nv...)
		ns, err := p.env.Parse(out[i])
		if err != nil {
			return nil, fmt.Errorf("state %q %s: the new serializer snapshot does not read back: %w", p.name, key, err)
		}
		typeser.MarkKryo5(ns)
		sm.Serializers[key] = ns
	}
	if p.keyed {
		l := statefile.NewLayout(sm, p.keySer)
		p.new, p.newUK = l.User, l.UserKey
	} else {
		p.new = sm.Value()
	}
	return out, nil
}

func lower(key string) string {
	b := []byte(key)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b[:len(b)-len("_serializer")])
}
