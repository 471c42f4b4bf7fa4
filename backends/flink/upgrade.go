package flink

import (
	"context"
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/releases"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/kryo"
	flinkupgrade "github.com/stateutil/stateutil/backends/flink/internal/upgrade"
	"github.com/stateutil/stateutil/snapshot"
)

// upgrade carries a Flink 1.x snapshot to Flink 2.x (snapshot.Upgrader):
// Kryo 2 values written again as Kryo 5 writes them, the List, Map, Set
// and Collection fields of POJOs that Flink 1.x gave to Kryo written as
// Flink 2.x's collection serializers write them, the serializer
// snapshots Flink 2.x writes for the same types in place of the old ones
// (internal/upgrade decides each state); the writer then writes metadata
// and headers of the release asked for. Everything else is carried byte
// for byte.
func upgrade(ctx context.Context, r snapshot.Reader, readerVersion string) (snapshot.Reader, *snapshot.UpgradeReport, error) {
	to, err := ReleaseOf(readerVersion)
	if err != nil {
		return nil, nil, err
	}
	cs := carried.SnapshotOf(r.Snapshot())
	if cs == nil {
		return nil, nil, ErrNotFromFlink
	}
	from := releases.MajorOfMetadata(cs.MetadataVersion)
	switch {
	case to.Major < from:
		return nil, nil, fmt.Errorf("%w: this is a Flink %d.x snapshot (_metadata v%d) and Flink %s is older: stateutil upgrades Flink 1.x state to Flink 2.x and never carries state back",
			snapshot.ErrDowngrade, from, cs.MetadataVersion, to.Line)
	case to.Major == from:
		return nil, nil, fmt.Errorf("%w: Flink %s is of the same major version as this Flink %d.x snapshot: nothing to upgrade (convert --to flink --flink-version %s writes it for that release)",
			snapshot.ErrUnsupportedVersion, to.Line, from, to.Line)
	}
	// What stateutil cannot read (only upgrade --check is given such a
	// snapshot) blocks the states whose values the upgrade must read. The
	// serializer table is the opened reader's, with the user's schemas.
	unreadable := snapshot.UnreadableParts(r.Snapshot())
	u := newUpgrader(r, to, &snapshot.UpgradeReport{From: fmt.Sprintf("Flink %d.x", from), To: "Flink " + to.Line, Findings: []snapshot.UpgradeFinding{}})
	u.r, _ = snapshot.WithoutUnreadable(r)
	for _, op := range r.Snapshot().Operators {
		if err := u.operator(op); err != nil {
			return nil, nil, err
		}
	}
	u.blockUnreadable(unreadable)
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

// newUpgrader is the upgrader of r's snapshot to release to, reporting
// into rep. It reads r's values by the user's schemas r reads them by
// (of them, the upgrade command gives only what serializers of the
// user's own write).
func newUpgrader(r snapshot.Reader, to Release, rep *snapshot.UpgradeReport) *upgrader {
	table := serializers
	if sr, ok := r.(*SnapshotReader); ok && sr.res.Serializers != nil {
		table = sr.res.Serializers
	}
	env := *upgradeEnv
	env.Parse = func(raw []byte) (*typeser.SerializerSnapshot, error) {
		return carried.ParseSerializerSnapshot(table, raw)
	}
	return &upgrader{r: r, to: to, env: &env, table: table, rep: rep, plans: map[*snapshot.Operator][]*statePlan{},
		cos: map[*snapshot.Operator]*carried.Operator{}, stats: map[*snapshot.Subtask][]snapshot.KeyGroupStat{}}
}

// upgrader decides, per state, what the upgrade does.
type upgrader struct {
	r     snapshot.Reader
	env   *flinkupgrade.Env
	table *typeser.Table // the source's serializers
	to    Release
	rep   *snapshot.UpgradeReport
	plans map[*snapshot.Operator][]*statePlan
	cos   map[*snapshot.Operator]*carried.Operator
	ops   []*snapshot.Operator // in snapshot order
	// inFlight are the operators whose subtasks hold data in flight (an
	// unaligned checkpoint), which report judges once every state is.
	inFlight []inFlight
	// stats are the key groups the scan counted of a subtask, (the
	// source's sizes), which the copy's plan takes rather than reading
	// and rewriting every value once more.
	stats map[*snapshot.Subtask][]snapshot.KeyGroupStat
}

type inFlight struct {
	op *snapshot.Operator
	t  snapshot.InFlightTotals
}

// statePlan is the upgrade of one state of an operator.
type statePlan struct {
	*flinkupgrade.State
	op    *snapshot.Operator
	scope string
	name  string
	meta  *carried.Meta // in the operator's carried copy
}

// upgradeEnv is what the upgrade of a state takes of the format: the
// Kryo family's part, the classes known across majors, the snapshot
// parser.
var upgradeEnv = &flinkupgrade.Env{
	Snapshot5: kryo.Snapshot5, Carried: kryo.Carried, ElementClass: kryo.ElementClass, Elements: kryo.Elements, Entries: kryo.Entries,
	Known: func(class string) (int32, bool) {
		if v, ok := flinkupgrade.RestoredFromMajor1(class); ok {
			return v, true
		}
		k, ok := releases.Classes[class]
		return k.Version, ok && k.AcrossMajors == ""
	},
	Parse: func(raw []byte) (*typeser.SerializerSnapshot, error) {
		return carried.ParseSerializerSnapshot(serializers, raw)
	},
}

// operator plans every state of op.
func (u *upgrader) operator(op *snapshot.Operator) error {
	co, err := carried.OperatorOf(op)
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
	if t := snapshot.InFlightOf(op); t.Holds() {
		u.inFlight = append(u.inFlight, inFlight{op, t})
	}
	var keySer *typeser.SerializerSnapshot
	if len(op.KeyedStates) > 0 {
		if keySer, err = carried.ParseSerializerSnapshot(serializers, co.KeySerializer); err != nil {
			return fmt.Errorf("operator %q key serializer: %w", op.Label(), err)
		}
	}
	for i := range co.Keyed {
		m := &co.Keyed[i]
		u.plan(&statePlan{op: op, scope: snapshot.ScopeKeyed, name: m.Name, meta: m}, keySer)
	}
	for _, list := range [][]carried.Meta{co.Operator, co.Broadcast} {
		for i := range list {
			u.plan(&statePlan{op: op, scope: snapshot.ScopeOperator, name: list[i].Name, meta: &list[i]}, nil)
		}
	}
	return nil
}

// blockUnreadable blocks the states stateutil cannot read whose values
// the upgrade must read to rewrite them; those whose bytes are carried
// as they are need not be read.
func (u *upgrader) blockUnreadable(parts []snapshot.UnreadablePart) {
	for _, part := range parts {
		for _, op := range u.ops {
			if op.Label() != part.Operator {
				continue
			}
			for _, p := range u.plans[op] {
				if p.scope == part.Scope && (part.State == "" || part.State == p.name) && p.Scans() {
					p.Block("stateutil cannot read its values, which the upgrade must rewrite: " + part.Reason)
				}
			}
		}
	}
}

// plan finds what changes in a state's serializers.
func (u *upgrader) plan(p *statePlan, keySer *typeser.SerializerSnapshot) {
	u.plans[p.op] = append(u.plans[p.op], p)
	sm, err := carried.StateMeta(u.table, *p.meta)
	if err != nil {
		p.State = &flinkupgrade.State{}
		p.Block(fmt.Sprintf("its serializer snapshots do not read (%v)", err))
		return
	}
	p.State = u.env.Plan(sm, keySer, p.scope == snapshot.ScopeKeyed)
}

// removedOperator is why Flink 2.x has no operator to restore op's state
// into, or "": the legacy SourceFunction sources (their operator keeps
// its state under the name Flink 1.x's StreamSource gave it).
func removedOperator(op *snapshot.Operator, co *carried.Operator) string {
	for _, m := range co.Operator {
		for _, s := range m.Serializers {
			if ss, err := carried.ParseSerializerSnapshot(serializers, s.Raw); err == nil && strings.Contains(ss.Class, "kinesis") {
				return "it holds the state of the Kinesis connector before 5.0, whose state format its Flink 2.x releases changed"
			}
		}
	}
	for _, os := range op.OperatorStates {
		if why := flinkupgrade.LegacySource(os.Name); why != "" {
			return why
		}
	}
	return ""
}

// report adds a finding per state, and one per operator that holds data
// in flight: Flink 2.x restores an unaligned checkpoint's data in flight
// as it is, with the checkpoint, so it restores as is when every state
// does; when one must be rewritten or is blocked, the checkpoint must be
// copied, and no copy for Flink 2.x can carry it.
func (u *upgrader) report() {
	var states []snapshot.UpgradeFinding
	copied := u.rep.Blocked > 0
	for _, op := range u.ops {
		for _, p := range u.plans[op] {
			f := snapshot.UpgradeFinding{Operator: op.Label(), Scope: p.scope, State: p.name, Verdict: snapshot.RestoresAsIs}
			switch {
			case p.Blocked() != "":
				f.Verdict, f.Reason = snapshot.Blocked, p.Blocked()
			case p.RewritesValues():
				f.Verdict, f.Changes = snapshot.Rewritten, p.Changes()
			}
			copied = copied || f.Verdict != snapshot.RestoresAsIs
			states = append(states, f)
		}
	}
	for _, in := range u.inFlight {
		u.rep.Add(flinkupgrade.InFlightFinding(in.op.Label(), in.t, copied, u.rep.To))
	}
	for _, f := range states {
		u.rep.Add(f)
	}
}

// scan reads every value of the states whose values change, to find
// what their serializers hold (a POJO collection field's element types)
// and what blocks them.
func (u *upgrader) scan(ctx context.Context) error {
	for _, op := range u.ops {
		var keyed, oper []*statePlan
		for _, p := range u.plans[op] {
			switch {
			case !p.Scans():
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
			p.Settle()
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
		if sub == nil {
			continue
		}
		if len(keyed) > 0 {
			var stats []snapshot.KeyGroupStat
			for e, err := range u.r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					return err
				}
				if n := len(stats); n == 0 || stats[n-1].KeyGroup != e.KeyGroup {
					stats = append(stats, snapshot.KeyGroupStat{KeyGroup: e.KeyGroup})
				}
				stats[len(stats)-1].Entries++
				stats[len(stats)-1].Bytes += e.Size()
				if p := byName(keyed, e.State); p != nil && p.Scans() {
					p.See(e.Value)
				}
			}
			u.stats[sub] = stats
		}
		if len(oper) > 0 {
			for el, err := range u.r.Elements(ctx, op, sub.Index) {
				if err != nil {
					return err
				}
				if p := byName(oper, el.State); p != nil && p.Scans() {
					p.See(el.Value)
				}
			}
		}
	}
	return nil
}
