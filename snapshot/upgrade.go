package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Verdict is what an upgrade to another major version of the readers
// makes of one state (Format.Upgrade).
type Verdict string

// The verdicts of an upgrade.
const (
	// RestoresAsIs: the new readers restore the state's bytes unchanged.
	RestoresAsIs Verdict = "restores as is"
	// Rewritten: the upgrade rewrites the state's values or serializers.
	Rewritten Verdict = "rewritten by upgrade"
	// Blocked: the new readers would not restore the state, and the
	// upgrade cannot rewrite it.
	Blocked Verdict = "blocked"
)

// UpgradeFinding is the verdict on one state of one operator (or on the
// operator itself, with no state).
type UpgradeFinding struct {
	Operator string  `json:"operator"`
	Scope    string  `json:"scope"` // ScopeKeyed, ScopeOperator, or "operator"
	State    string  `json:"state,omitempty"`
	Verdict  Verdict `json:"verdict"`
	// Changes says what the upgrade rewrites; Reason why it is blocked,
	// or what restoring it as it is takes.
	Changes []string `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// ScopeWholeOperator is the scope of a finding about an operator as a
// whole (an operator the new readers no longer have).
const ScopeWholeOperator = "operator"

// UpgradeReport is an upgrade's verdicts: every state of every operator.
type UpgradeReport struct {
	Source   string           `json:"source"`
	From     string           `json:"from"` // the readers the source was written for: "Flink 1.x"
	To       string           `json:"to"`   // the readers the upgrade writes for: "Flink 2.3"
	Findings []UpgradeFinding `json:"findings"`
	// Counts of the findings by verdict.
	AsIs      int `json:"restores_as_is"`
	Rewritten int `json:"rewritten"`
	Blocked   int `json:"blocked"`
}

// Add appends a finding and counts it.
func (r *UpgradeReport) Add(f UpgradeFinding) {
	r.Findings = append(r.Findings, f)
	switch f.Verdict {
	case RestoresAsIs:
		r.AsIs++
	case Rewritten:
		r.Rewritten++
	case Blocked:
		r.Blocked++
	}
}

// Err is nil when nothing blocks the upgrade, else an error wrapping
// ErrUpgradeBlocked that names every blocked state and why.
func (r *UpgradeReport) Err() error {
	if r.Blocked == 0 {
		return nil
	}
	var lines []string
	for _, f := range r.Findings {
		if f.Verdict != Blocked {
			continue
		}
		where := fmt.Sprintf("operator %q", f.Operator)
		if f.State != "" {
			where += fmt.Sprintf(" %s state %q", f.Scope, f.State)
		}
		lines = append(lines, where+": "+f.Reason)
	}
	return fmt.Errorf("%w: %s would not restore %s, and stateutil cannot rewrite them:\n  %s",
		ErrUpgradeBlocked, r.To, r.BlockedCount(), strings.Join(lines, "\n  "))
}

// BlockedCount says what blocks the upgrade: "2 states", "1 operator",
// "3 states and 2 operators" (findings about an operator as a whole).
func (r *UpgradeReport) BlockedCount() string {
	states, operators := 0, 0
	for _, f := range r.Findings {
		switch {
		case f.Verdict != Blocked:
		case f.State == "": // ScopeWholeOperator, which is ScopeOperator's word
			operators++
		default:
			states++
		}
	}
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	switch {
	case operators == 0:
		return plural(states, "state")
	case states == 0:
		return plural(operators, "operator")
	}
	return plural(states, "state") + " and " + plural(operators, "operator")
}

// ErrUpgradeBlocked reports an upgrade that something blocks: the report
// says what and why.
var ErrUpgradeBlocked = errors.New("upgrade blocked")

// ErrDowngrade reports an upgrade asked to write for older readers than
// the source's: stateutil does not carry state back.
var ErrDowngrade = fmt.Errorf("%w: downgrade", ErrUnsupportedVersion)

// Upgrader is a format's upgrade to another major version of its
// readers: Upgrade returns the report and, when nothing blocks it, r as
// the new readers must read it (serializers and values rewritten, the
// metadata it carries marked for them), which a writer of the format then
// writes for readerVersion. It reads what it must of r to decide (every
// value of a state whose values it rewrites), and checks every value it
// rewrites as it is read again: a rewritten value that does not decode to
// what its old bytes held fails the read.
type Upgrader func(ctx context.Context, r Reader, readerVersion string) (Reader, *UpgradeReport, error)
