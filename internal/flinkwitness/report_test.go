package flinkwitness

import (
	"fmt"
	"sort"
	"strings"
)

// markdown renders the gap report: a summary table, then per snapshot its
// verify findings, values not decoded, dump differences (with examples)
// and rescale's answer.
func markdown(outcomes []*outcome, root string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# stateutil on the witness snapshots (%s)\n\n", root)
	sb.WriteString("Made by `go test ./internal/flinkwitness -run TestWitnessSnapshots -witness-report FILE`: ")
	sb.WriteString("for each snapshot, `verify -o json`, `dump` (again with `--skip-unreadable` where it refuses) and ")
	sb.WriteString("`inspect --operator-state --values -o json` compared with the job's own dump (Flink's restore into dumpers), ")
	sb.WriteString("and `rescale --parallelism 3`. Operators are named by uid.\n\n")
	sb.WriteString("| snapshot | verify exit | findings | values not decoded | dump exit | states differing | rescale exit |\n")
	sb.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, o := range outcomes {
		n := 0
		for _, d := range o.notDecoded {
			n += d.Count
		}
		fmt.Fprintf(&sb, "| %s/%s | %d | %d | %d | %d | %d | %d |\n", o.entry.Manifest.FlinkVersion, o.entry.Name,
			o.verifyCode, len(o.findings), n, o.dumpCode, len(o.mismatches), o.rescaleCode)
	}
	sb.WriteString("\n## Serializers not decoded, over all snapshots\n\n")
	sb.WriteString("| serializer snapshot | value class | values | snapshots |\n| --- | --- | --- | --- |\n")
	type agg struct{ values, snaps int }
	bySer := map[[2]string]*agg{}
	for _, o := range outcomes {
		seen := map[[2]string]bool{}
		for _, d := range o.notDecoded {
			k := [2]string{d.Serializer, d.ValueClass}
			if bySer[k] == nil {
				bySer[k] = &agg{}
			}
			bySer[k].values += d.Count
			if !seen[k] {
				seen[k] = true
				bySer[k].snaps++
			}
		}
	}
	keys := make([][2]string, 0, len(bySer))
	for k := range bySer {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(&sb, "| `%s` | %s | %d | %d |\n", k[0], code(k[1]), bySer[k].values, bySer[k].snaps)
	}
	for _, o := range outcomes {
		fmt.Fprintf(&sb, "\n## %s/%s\n\n", o.entry.Manifest.FlinkVersion, o.entry.Name)
		m := o.entry.Manifest
		fmt.Fprintf(&sb, "%s, %s %s", m.Job, m.Backend, m.Kind)
		for _, f := range []struct {
			on   bool
			name string
		}{{m.Incremental, "incremental"}, {m.Changelog, "changelog"}, {strings.HasSuffix(o.entry.Name, "-unaligned"), "unaligned, records in flight"}} {
			if f.on {
				sb.WriteString(", " + f.name)
			}
		}
		fmt.Fprintf(&sb, "; %d lines in the job's dump.\n\n", derefInt(m.DumpLines))
		fmt.Fprintf(&sb, "- verify: exit %d, %d findings", o.verifyCode, len(o.findings))
		if len(o.findings) > 0 {
			byCheck := map[string]int{}
			example := map[string]finding{}
			for _, f := range o.findings {
				k := f.Check + " " + f.Operator
				byCheck[k]++
				if _, ok := example[k]; !ok {
					example[k] = f
				}
			}
			ks := sortedKeys(byCheck)
			sb.WriteString(":\n")
			for _, k := range ks {
				f := example[k]
				fmt.Fprintf(&sb, "  - %d× `%s` on `%s`, e.g. %s\n", byCheck[k], f.Check, f.Operator, code(clip(f.Message, 400)))
			}
		} else {
			sb.WriteString("\n")
		}
		if len(o.notDecoded) > 0 {
			sb.WriteString("- not decoded:\n")
			for _, d := range o.notDecoded {
				vc := ""
				if d.ValueClass != "" {
					vc = " (value class `" + d.ValueClass + "`)"
				}
				fmt.Fprintf(&sb, "  - `%s` `%s` %s: %d × `%s`%s\n", d.Operator, d.State, d.Part, d.Count, d.Serializer, vc)
			}
		}
		if o.dumpCode != 0 {
			fmt.Fprintf(&sb, "- dump: exit %d: %s\n", o.dumpCode, code(clip(o.dumpErr, 600)))
		}
		if len(o.mismatches) > 0 {
			sb.WriteString("- differs from the job's dump (`-` the job's line, `+` stateutil's):\n")
			for _, k := range sortedKeys(o.mismatches) {
				fmt.Fprintf(&sb, "  - `%s`: %s\n", k, examples(o.mismatches[k]))
			}
		}
		if o.rescaleCode != 0 {
			fmt.Fprintf(&sb, "- rescale --parallelism 3: exit %d: %s\n", o.rescaleCode, code(clip(o.rescaleErr, 600)))
		} else {
			sb.WriteString("- rescale --parallelism 3: exit 0\n")
		}
	}
	return sb.String()
}

// examples keeps EqualDumps's summary and its first line each way.
func examples(d string) string {
	lines := strings.Split(strings.TrimSpace(d), "\n")
	out := []string{lines[0]}
	var minus, plus bool
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "- ") && !minus:
			minus = true
			out = append(out, code(clip(l, 500)))
		case strings.HasPrefix(l, "+ ") && !plus:
			plus = true
			out = append(out, code(clip(l, 500)))
		}
	}
	return strings.Join(out, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`` " + strings.ReplaceAll(s, "`", "'") + " ``"
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
