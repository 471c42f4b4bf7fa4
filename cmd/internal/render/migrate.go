package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

func ShardPlan(w io.Writer, sp *migrate.ShardPlan, planFile string) error {
	var subtasks int
	for _, a := range sp.Shards {
		subtasks += len(a.Subtasks)
	}
	fmt.Fprintf(w, "Plan %s: %s (%s) -> %s (%s), %d new subtasks in %d shards; written to %s, staging area %s\n",
		sp.ID, sp.Source, sp.SourceFormat, sp.Destination, sp.Format, subtasks, len(sp.Shards), planFile, sp.Staging)
	var rows [][]string
	for _, a := range sp.Shards {
		rows = append(rows, []string{strconv.Itoa(a.Shard), strconv.Itoa(len(a.Subtasks)), Bytes(a.Bytes)})
	}
	if err := Table(w, []string{"SHARD", "SUBTASKS", "BYTES"}, rows); err != nil {
		return err
	}
	if sp.KeySerializersFrom != "" {
		fmt.Fprintf(w, "The shards and the commit read the source's keys by the key serializers of %s, as this plan did: it must be reachable from where they run.\n", sp.KeySerializersFrom)
	}
	_, err := fmt.Fprintf(w, "Next: stateutil shard %s --shard I/%d for each I in 1..%d (anywhere, in any order), then stateutil commit %s (or stateutil abort %s to give the plan up)\n",
		planFile, len(sp.Shards), len(sp.Shards), planFile, planFile)
	return err
}

func RescalePlan(w io.Writer, p *redistribute.Plan) error {
	verb := "Plan"
	if !p.DryRun {
		verb = "Rescaled"
	}
	if p.Destination != "" {
		fmt.Fprintf(w, "%s: %s -> %s\n", verb, p.Source, p.Destination)
	} else {
		fmt.Fprintf(w, "%s: %s (dry run)\n", verb, p.Source)
	}
	for _, op := range p.Operators {
		fmt.Fprintf(w, "\nOperator %s: parallelism %d -> %d, max parallelism %d -> %d (%s)\n",
			operatorLabel(op.ID, op.UID, op.Name), op.Old.Parallelism, op.New.Parallelism, op.Old.MaxParallelism, op.New.MaxParallelism, op.Action)
		if op.Note != "" {
			fmt.Fprintf(w, "Note: %s\n", op.Note)
		}
		var rows [][]string
		for _, sub := range op.Subtasks {
			src := make([]string, len(sub.Sources))
			for i, s := range sub.Sources {
				src[i] = strconv.Itoa(s)
			}
			rows = append(rows, []string{strconv.Itoa(sub.Index), sub.KeyGroups.String(), strings.Join(src, " "),
				strconv.FormatInt(sub.KeyedEntries, 10), Bytes(sub.KeyedBytes), strconv.FormatInt(sub.OperatorElements, 10)})
		}
		if err := Table(w, []string{"NEW SUBTASK", "KEY GROUPS", "FROM OLD SUBTASKS", "KEYED ENTRIES", "KEYED BYTES", "OPERATOR ELEMENTS"}, rows); err != nil {
			return err
		}
		if op.KeyedEntries > 0 {
			fmt.Fprintf(w, "Keyed skew (max/mean bytes over new subtasks): %.2f\n", op.KeyedSkew)
		}
		if len(op.OperatorStates) == 0 {
			continue
		}
		rows = nil
		for _, st := range op.OperatorStates {
			per := make([]string, len(st.Assignment))
			for j, pieces := range st.Assignment {
				var n int64
				for _, pc := range pieces {
					n += pc.Count
				}
				per[j] = strconv.FormatInt(n, 10)
			}
			rows = append(rows, []string{st.Name, string(st.Mode), strconv.FormatInt(st.Elements, 10), strings.Join(per, " ")})
		}
		if err := Table(w, []string{"OPERATOR STATE", "MODE", "OLD ELEMENTS", "ELEMENTS PER NEW SUBTASK"}, rows); err != nil {
			return err
		}
	}
	return nil
}

// ConvertReport is convert's JSON document.
func ConvertReport(res *migrate.Result) any {
	return struct {
		SchemaVersion int    `json:"schema_version"`
		Source        string `json:"source"`
		Destination   string `json:"destination"`
		From          string `json:"from"`
		To            string `json:"to"`
		migrate.Totals
		Verified bool `json:"verified"`
	}{1, res.Plan.Source, res.Plan.Destination, res.From, res.Plan.Format, res.Totals, res.Verified}
}

// UpgradeReport prints upgrade's verdicts per operator and state.
func UpgradeReport(w io.Writer, rep *snapshot.UpgradeReport) error {
	fmt.Fprintf(w, "Upgrade of %s from %s to %s: %d restore as is, %d rewritten, %d blocked\n",
		rep.Source, rep.From, rep.To, rep.AsIs, rep.Rewritten, rep.Blocked)
	rows := make([][]string, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		what := f.Changes
		if f.Reason != "" {
			what = []string{f.Reason}
		}
		rows = append(rows, []string{f.Operator, f.Scope, f.State, string(f.Verdict), strings.Join(what[:min(len(what), 1)], "")})
		for _, w := range what[min(len(what), 1):] {
			rows = append(rows, []string{"", "", "", "", w})
		}
	}
	return Table(w, []string{"OPERATOR", "SCOPE", "STATE", "VERDICT", "WHAT"}, rows)
}
