package flink

import (
	"context"
	"errors"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/kryo"
	"github.com/stateutil/stateutil/snapshot"
)

// upgrade carries a Flink 1.x snapshot to Flink 2.x (snapshot.Upgrader):
// Kryo 2 values written again as Kryo 5 writes them, the List, Map, Set
// and Collection fields of POJOs that Flink 1.x gave to Kryo written as
// Flink 2.x's collection serializers write them, the serializer
// snapshots Flink 2.x writes for the same types in place of the old ones
// (upgrade_serializers.go); the writer then writes metadata and headers of
// the release asked for. Everything else is carried byte for byte.
func upgrade(ctx context.Context, r snapshot.Reader, readerVersion string) (snapshot.Reader, *snapshot.UpgradeReport, error) {
	to, err := ReleaseOf(readerVersion)
	if err != nil {
		return nil, nil, err
	}
	cs := carriedSnapshotOf(r.Snapshot())
	if cs == nil {
		return nil, nil, ErrNotFromFlink
	}
	from := majorOfMetadata(cs.MetadataVersion)
	switch {
	case to.Major < from:
		return nil, nil, fmt.Errorf("%w: this is a Flink %d.x snapshot (_metadata v%d) and Flink %s is older: stateutil upgrades Flink 1.x state to Flink 2.x and never carries state back",
			snapshot.ErrDowngrade, from, cs.MetadataVersion, to.Line)
	case to.Major == 1:
		return nil, nil, fmt.Errorf("%w: Flink %s is of the same major version as this Flink 1.x snapshot: nothing to upgrade (convert --to flink --flink-version %s writes it for that release)",
			snapshot.ErrUnsupportedVersion, to.Line, to.Line)
	}
	u := &upgrader{r: r, to: to, from: from, plans: map[*snapshot.Operator][]*statePlan{}, cos: map[*snapshot.Operator]*carriedOperator{},
		rep: &snapshot.UpgradeReport{From: fmt.Sprintf("Flink %d.x", from), To: "Flink " + to.Line, Findings: []snapshot.UpgradeFinding{}}}
	for _, op := range r.Snapshot().Operators {
		if err := u.operator(op); err != nil {
			return nil, nil, err
		}
	}
	if err := u.scan(ctx); err != nil {
		return nil, nil, err
	}
	u.report()
	if u.rep.Blocked > 0 {
		return nil, u.rep, nil
	}
	ur, err := u.reader()
	return ur, u.rep, err
}

// upgrader decides, per state, what the upgrade does.
type upgrader struct {
	r     snapshot.Reader
	to    Release
	from  int
	rep   *snapshot.UpgradeReport
	plans map[*snapshot.Operator][]*statePlan
	cos   map[*snapshot.Operator]*carriedOperator
	ops   []*snapshot.Operator // in snapshot order
}

// statePlan is what the upgrade makes of one state: its serializers'
// nodes whose values change (Kryo values, POJO collection fields), or
// why it is blocked.
type statePlan struct {
	op      *snapshot.Operator
	scope   string
	name    string
	meta    *carriedMeta // in the operator's carried copy
	sm      *statefile.StateMeta
	keySer  *typeser.SerializerSnapshot
	kryo    []*typeser.SerializerSnapshot
	fields  []*collField
	blocked string
	// old and new are the serializers of a value (the element of a list,
	// the value of a map), userKey those of a map's user keys.
	old, new       *typeser.SerializerSnapshot
	oldUK, newUK   *typeser.SerializerSnapshot
	nodes          map[*typeser.SerializerSnapshot]bool // kryo and fields' nodes
	scanned        bool
	rewritesValues bool
}

func (p *statePlan) block(why string) {
	if p.blocked == "" {
		p.blocked = why
	}
}

// operator plans every state of op.
func (u *upgrader) operator(op *snapshot.Operator) error {
	co, err := carriedOf(op)
	if err != nil {
		return err
	}
	if co == nil {
		return fmt.Errorf("operator %q: %w", op.Label(), ErrNotFromFlink)
	}
	u.ops, u.cos[op] = append(u.ops, op), co
	if why := removedOperator(op, co); why != "" {
		u.rep.Add(snapshot.UpgradeFinding{Operator: op.Label(), Scope: snapshot.ScopeWholeOperator, Verdict: snapshot.Blocked, Reason: why})
	}
	var keySer *typeser.SerializerSnapshot
	if len(op.KeyedStates) > 0 {
		if keySer, err = parseSerializerSnapshot(co.KeySerializer); err != nil {
			return fmt.Errorf("operator %q key serializer: %w", op.Label(), err)
		}
	}
	for i := range co.Keyed {
		m := &co.Keyed[i]
		p := &statePlan{op: op, scope: snapshot.ScopeKeyed, name: m.Name, meta: m}
		if err := u.plan(p, keySer); err != nil {
			return err
		}
	}
	for _, list := range [][]carriedMeta{co.Operator, co.Broadcast} {
		for i := range list {
			p := &statePlan{op: op, scope: snapshot.ScopeOperator, name: list[i].Name, meta: &list[i]}
			if err := u.plan(p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// plan finds what changes in a state's serializers.
func (u *upgrader) plan(p *statePlan, keySer *typeser.SerializerSnapshot) error {
	u.plans[p.op] = append(u.plans[p.op], p)
	p.nodes = map[*typeser.SerializerSnapshot]bool{}
	sm, err := stateMetaOf(*p.meta)
	if err != nil {
		p.block(fmt.Sprintf("its serializer snapshots do not read (%v)", err))
		return nil
	}
	p.sm, p.keySer = sm, keySer
	if keySer != nil && sm.Type != statefile.PriorityQueueState {
		p.walkFixed(keySer, "its keys")
	}
	for _, key := range sm.SerializerKeys {
		s := sm.Serializers[key]
		if key == "NAMESPACE_SERIALIZER" || sm.Type == statefile.PriorityQueueState {
			p.walkFixed(s, "its "+strings.ToLower(strings.TrimSuffix(key, "_SERIALIZER"))+"s")
			continue
		}
		p.walk(s, nil)
	}
	if p.blocked != "" || len(p.nodes) == 0 {
		return nil
	}
	p.rewritesValues = true
	if p.scope == snapshot.ScopeKeyed {
		l := statefile.NewLayout(sm, keySer)
		p.old, p.oldUK = l.User, l.UserKey
		if p.oldUK != nil && p.touches(p.oldUK) {
			p.block("its map keys are of a serializer whose bytes change (Kryo), and stateutil does not rewrite keys")
		}
	} else {
		p.old = sm.Value()
		if sm.Type == statefile.BroadcastMapState {
			p.block("it is a broadcast state of a serializer whose bytes change (Kryo), which stateutil does not rewrite")
		}
	}
	if p.old == nil {
		p.block("stateutil cannot tell where its values' serializer lies in its snapshot")
	}
	return nil
}

// walkFixed checks serializers whose bytes must not change (keys,
// namespaces, timers): Flink 2.x restores them as they are, or blocks.
func (p *statePlan) walkFixed(s *typeser.SerializerSnapshot, what string) {
	before := len(p.nodes)
	p.walk(s, nil)
	if len(p.nodes) > before {
		p.block(what + " are of a serializer whose bytes change from Flink 1.x to 2.x (Kryo), and stateutil does not rewrite keys or namespaces")
	}
}

// collectionClasses are the declared types of the POJO fields that Flink
// 1.x serializes with Kryo and Flink 2.x with its collection serializers.
var collectionClasses = map[string]string{
	"java.util.List": "List", "java.util.Collection": "List", "java.util.Set": "Set", "java.util.Map": "Map",
}

// walk classifies s, a serializer of the state (pojo: the POJO whose
// field it is).
func (p *statePlan) walk(s, pojo *typeser.SerializerSnapshot) {
	if s == nil {
		p.block("a serializer snapshot is missing")
		return
	}
	if typeser.KindOf(s) == "Kryo" {
		if kind, ok := collectionClasses[s.TypeClass]; ok && pojo != nil {
			f := &collField{node: s, pojo: pojo, kind: kind, field: fieldOf(pojo, s)}
			p.fields, p.nodes[s] = append(p.fields, f), true
			return
		}
		if _, why := kryo.Snapshot5(s); why != "" {
			p.block(why)
			return
		}
		p.kryo, p.nodes[s] = append(p.kryo, s), true
		return
	}
	k, known := snapshotClasses[s.Class]
	switch {
	case !known:
		p.block(fmt.Sprintf("serializer %s (snapshot version %d) is not one stateutil has seen Flink 2.x restore from Flink 1.x", s.Class, s.Version))
		return
	case s.Opaque && len(s.Nested) == 0:
		p.block(fmt.Sprintf("serializer %s has a snapshot stateutil cannot read whole", s.Class))
		return
	case s.Version != k.version:
		p.block(fmt.Sprintf("serializer %s of snapshot version %d, where Flink 1.15 to 2.3 write version %d", s.Class, s.Version, k.version))
		return
	}
	var parent *typeser.SerializerSnapshot
	if s.Class == runtimeTU+"PojoSerializerSnapshot" {
		parent = s
	}
	for _, n := range s.Nested {
		p.walk(n, parent)
	}
}

// touches reports whether s or a serializer inside it changes.
func (p *statePlan) touches(s *typeser.SerializerSnapshot) bool {
	if s == nil {
		return false
	}
	if p.nodes[s] {
		return true
	}
	return slices.ContainsFunc(s.Nested, p.touches)
}

func fieldOf(pojo, s *typeser.SerializerSnapshot) string {
	if i := slices.Index(pojo.Nested, s); i >= 0 && i < len(pojo.Fields) {
		return pojo.Fields[i]
	}
	return "?"
}

// removedOperator is why Flink 2.x has no operator to restore op's state
// into, or "": the legacy SourceFunction sources (their operator keeps
// its state under the name Flink 1.x's StreamSource gave it).
func removedOperator(op *snapshot.Operator, co *carriedOperator) string {
	for _, m := range co.Operator {
		for _, s := range m.Serializers {
			if ss, err := parseSerializerSnapshot(s.Raw); err == nil && strings.Contains(ss.Class, "kinesis") {
				return "it holds the state of the Kinesis connector before 5.0, whose state format its Flink 2.x releases changed"
			}
		}
	}
	for _, os := range op.OperatorStates {
		if legacySourceStates[os.Name] {
			return fmt.Sprintf("it holds %q, the state of a legacy SourceFunction source, which Flink 2.x removed: the job must use a FLIP-27 source, whose state is another", os.Name)
		}
	}
	return ""
}

// legacySourceStates are the operator states of Flink 1.x's
// SourceFunction sources (the Kafka and Kinesis consumers, the file
// monitoring source, FromElementsFunction).
var legacySourceStates = map[string]bool{
	"topic-partition-offset-states": true, "Kinesis-Stream-Shard-State": true,
	"file-monitoring-state": true, "from-elements-state": true,
}

// report adds a finding per state.
func (u *upgrader) report() {
	for _, op := range u.ops {
		for _, p := range u.plans[op] {
			f := snapshot.UpgradeFinding{Operator: op.Label(), Scope: p.scope, State: p.name, Verdict: snapshot.RestoresAsIs}
			switch {
			case p.blocked != "":
				f.Verdict, f.Reason = snapshot.Blocked, p.blocked
			case p.rewritesValues:
				f.Verdict, f.Changes = snapshot.Rewritten, p.changes()
			}
			u.rep.Add(f)
		}
	}
}

func (p *statePlan) changes() []string {
	var out []string
	for _, s := range p.kryo {
		out = append(out, fmt.Sprintf("Kryo 2 values of %s written as Kryo 5 writes them", s.TypeClass))
	}
	for _, f := range p.fields {
		out = append(out, fmt.Sprintf("POJO %s field %s (%s): from Kryo to %s", f.pojo.TypeClass, f.field, f.node.TypeClass, f.expr()))
	}
	return out
}

// scan reads every value of the states whose values change, to find
// what their serializers hold (a POJO collection field's element types)
// and what blocks them.
func (u *upgrader) scan(ctx context.Context) error {
	for _, op := range u.ops {
		var keyed, oper []*statePlan
		for _, p := range u.plans[op] {
			switch {
			case p.blocked != "" || !p.rewritesValues:
			case p.scope == snapshot.ScopeKeyed:
				keyed = append(keyed, p)
			default:
				oper = append(oper, p)
			}
		}
		if err := u.scanOperator(ctx, op, keyed, oper); err != nil {
			return err
		}
		for _, p := range append(keyed, oper...) {
			p.settle()
		}
	}
	return nil
}

func (u *upgrader) scanOperator(ctx context.Context, op *snapshot.Operator, keyed, oper []*statePlan) error {
	byName := func(ps []*statePlan, name string) *statePlan {
		for _, p := range ps {
			if p.name == name {
				return p
			}
		}
		return nil
	}
	for _, sub := range op.Subtasks {
		if len(keyed) > 0 {
			for e, err := range u.r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return err
				}
				if p := byName(keyed, e.State); p != nil && p.blocked == "" {
					p.see(e.Value)
				}
			}
		}
		if len(oper) > 0 {
			for el, err := range u.r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return err
				}
				if p := byName(oper, el.State); p != nil && p.blocked == "" {
					p.see(el.Value)
				}
			}
		}
	}
	return nil
}

// see looks at one value of the state.
func (p *statePlan) see(b []byte) {
	v, err := decodeWith(p.old, b)
	if nd := (*snapshot.NotDecodedError)(nil); errors.As(err, &nd) && strings.Contains(nd.Serializer, "Kryo") && nd.ValueClass != "" {
		p.block(fmt.Sprintf("it holds a %s, which Kryo 2 writes with its FieldSerializer over the class's fields (or a serializer registered for it), which the savepoint does not describe: its Kryo 5 bytes cannot be written from them", nd.ValueClass))
		return
	}
	if err != nil {
		p.block(fmt.Sprintf("a value does not decode (%v)", err))
		return
	}
	p.visit(p.old, v, func(n *typeser.SerializerSnapshot, v any) {
		if why := p.note(n, v); why != "" {
			p.block(why)
		}
	})
}

// note records what one value of a changing node holds: why it blocks,
// or "".
func (p *statePlan) note(n *typeser.SerializerSnapshot, v any) string {
	for _, f := range p.fields {
		if f.node == n {
			return f.see(v)
		}
	}
	if _, why := kryo.Carried(v); why != "" {
		return fmt.Sprintf("a Kryo value of %s: %s", n.TypeClass, why)
	}
	return ""
}

// visit calls fn with the value of every changing node of s in v, the
// value of s as decodeWith gives it; a changing node in a serializer that
// visit does not walk blocks the state.
func (p *statePlan) visit(s *typeser.SerializerSnapshot, v any, fn func(n *typeser.SerializerSnapshot, v any)) {
	if s == nil || !p.touches(s) {
		return
	}
	if p.nodes[s] {
		fn(s, v)
		return
	}
	if v == nil {
		return
	}
	switch typeser.KindOf(s) {
	case "Pojo":
		m, _ := v.(map[string]any)
		for i, n := range s.Nested {
			if i < len(s.Fields) {
				p.visit(n, m[s.Fields[i]], fn)
			}
		}
	case "List":
		vs, _ := v.([]any)
		for _, e := range vs {
			p.visit(s.Nested[0], e, fn)
		}
	case "Nullable":
		p.visit(s.Nested[0], v, fn)
	case "Tuple":
		vs, _ := v.([]any)
		for i, n := range s.Nested {
			if i < len(vs) {
				p.visit(n, vs[i], fn)
			}
		}
	default:
		p.block(fmt.Sprintf("a value of a serializer whose bytes change (Kryo) lies inside %s, which stateutil does not rewrite", s.Class))
	}
}

// settle turns what the scan saw into the new serializers.
func (p *statePlan) settle() {
	p.scanned = true
	for _, f := range p.fields {
		if why := f.settle(); why != "" {
			p.block(fmt.Sprintf("POJO %s field %s: %s", f.pojo.TypeClass, f.field, why))
		}
	}
}

// decodeWith decodes b, one value of s, whole.
func decodeWith(s *typeser.SerializerSnapshot, b []byte) (any, error) {
	v, err := (typeser.Codec{S: s}).Decode(b)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// jsonOf is v as JSON decodes it (numbers as json.Number), which the
// encoders take, and its text.
func jsonOf(v any) (any, []byte, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, nil, err
	}
	return out, text, nil
}
