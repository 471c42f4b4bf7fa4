package snapshot

import (
	"errors"
	"strings"
	"testing"
)

func TestUpgradeReportNamesWhatBlocks(t *testing.T) {
	blocked := func(scope, state string) UpgradeFinding {
		return UpgradeFinding{Operator: "op", Scope: scope, State: state, Verdict: Blocked, Reason: "why"}
	}
	for _, tc := range []struct {
		findings []UpgradeFinding
		want     string
	}{
		{[]UpgradeFinding{blocked(ScopeKeyed, "a")}, "1 state"},
		{[]UpgradeFinding{blocked(ScopeKeyed, "a"), blocked(ScopeOperator, "b"), {Operator: "op", Scope: ScopeKeyed, State: "c", Verdict: RestoresAsIs}}, "2 states"},
		{[]UpgradeFinding{blocked(ScopeWholeOperator, "")}, "1 operator"},
		{[]UpgradeFinding{blocked(ScopeWholeOperator, ""), blocked(ScopeWholeOperator, ""), blocked(ScopeKeyed, "a")}, "1 state and 2 operators"},
	} {
		r := &UpgradeReport{To: "Flink 2.3"}
		for _, f := range tc.findings {
			r.Add(f)
		}
		if got := r.BlockedCount(); got != tc.want {
			t.Errorf("BlockedCount() = %q, want %q", got, tc.want)
		}
		err := r.Err()
		if !errors.Is(err, ErrUpgradeBlocked) || !strings.Contains(err.Error(), "Flink 2.3 would not restore "+tc.want+", and") {
			t.Errorf("Err() = %v", err)
		}
	}
	if err := (&UpgradeReport{}).Err(); err != nil {
		t.Errorf("an upgrade nothing blocks: %v", err)
	}
}
