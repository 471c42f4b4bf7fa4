package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestGoldenOperator(t *testing.T) {
	cases := map[string][]string{
		"operator-no-subcommand":   {"operator"},
		"operator-remove-unknown":  {"operator", "remove", example, "--operator", "nope", "--output", "x.dump"},
		"operator-rename-conflict": {"operator", "rename", example, "--operator", "rules", "--to", "sink", "--output", "x.dump"},
		"operator-rename-no-to":    {"operator", "rename", example, "--operator", "rules", "--output", "x.dump"},
		"operator-remove-no-dst":   {"operator", "remove", example, "--operator", "rules"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

func TestOperatorRemoveAndRename(t *testing.T) {
	dir := t.TempDir()
	sum := hashTree(t, example)
	removed, renamed := filepath.Join(dir, "removed.dump"), filepath.Join(dir, "renamed.dump")
	mustRun(t, "operator", "remove", example, "--operator", "rules", "--output", removed)
	mustRun(t, "verify", removed)
	code, out, _ := run(t, "diff", example, removed, "--entries")
	if code != ExitUsage || !strings.Contains(out, "operator removed: rules") || strings.Count(out, "Operator ") != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	mustRun(t, "operator", "rename", example, "--operator", "word-counter", "--to", "counter-v2", "--output", renamed)
	mustRun(t, "verify", renamed)
	code, out, _ = run(t, "diff", example, renamed, "--entries")
	if code != ExitUsage || !strings.Contains(out, "operator removed: word-counter") || !strings.Contains(out, "operator added: counter-v2") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	back := filepath.Join(dir, "back.dump")
	mustRun(t, "operator", "rename", renamed, "--operator", "counter-v2", "--to", "word-counter", "--output", back)
	if code, out, _ := run(t, "diff", example, back, "--entries"); code != ExitOK {
		t.Fatalf("rename and back differs:\n%s", out)
	}
	if hashTree(t, example) != sum {
		t.Fatal("operator edits modified their source")
	}
}
